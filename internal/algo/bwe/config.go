package bwe

import (
	"errors"
	"fmt"
	"time"
)

// Config holds the estimator's parameters. DefaultConfig returns values taken
// from GCC (draft-ietf-rmcat-gcc-02 and libwebrtc) where GCC has one, and
// values chosen with the simulation in package sim where it does not (the
// probing schedule); docs/bwe.md explains each choice.
type Config struct {
	// StartBitrate is the estimate before any feedback (bits per second).
	// Remembering a client's last stable estimate and starting there is
	// better than a fixed value (system spec §6).
	StartBitrate int
	// MinBitrate and MaxBitrate bound the estimate (bits per second).
	MinBitrate, MaxBitrate int

	// History is the number of sent packets remembered for matching feedback;
	// it is rounded up to a power of two. Feedback for a packet older than
	// History packets is ignored. 4096 covers two seconds at 20 Mb/s.
	History int

	// Beta is the multiplicative decrease on overuse: the estimate falls to
	// Beta × the acknowledged bitrate.
	Beta float64
	// AppLimitedRatio caps passive increases at AppLimitedRatio × the
	// acknowledged bitrate (+10 kb/s), so the estimate does not run away while
	// we send little; only a probe lifts it beyond.
	AppLimitedRatio float64
	// AckedWindow is the arrival-time window over which the acknowledged
	// bitrate is measured.
	AckedWindow time.Duration

	// LossWindow and LossMinPackets: the loss fraction is evaluated over at
	// least LossWindow and LossMinPackets reported packets, so that 5 %
	// random loss does not read as 10 % by chance.
	LossWindow     time.Duration
	LossMinPackets int
	// LossLow and LossHigh: below LossLow the loss side lets the estimate
	// grow; above LossHigh it decreases it by half the loss fraction; in
	// between it holds.
	LossLow, LossHigh float64

	// ProbeGain is the largest probe rate as a multiple of the estimate.
	ProbeGain float64
	// ProbeDuration and ProbeMinPackets: a probe cluster lasts at least this
	// long and carries at least this many probe packets.
	ProbeDuration   time.Duration
	ProbeMinPackets int
	// ProbeBackoffMin and ProbeBackoffMax: after a probe that did not raise
	// the estimate, the next waits ProbeBackoffMin, doubling per failure up to
	// ProbeBackoffMax. A successful probe is followed at once by the next one
	// while the allocator wants more.
	ProbeBackoffMin, ProbeBackoffMax time.Duration
	// ProbeAfterOveruse is how long after an overuse no probe starts.
	ProbeAfterOveruse time.Duration

	// FeedbackTimeout: when transport-wide feedback stops for this long while
	// we send, the estimate is cut by 20 % per FeedbackTimeout.
	FeedbackTimeout time.Duration
	// REMBFallback is how long after the last transport-wide feedback REMB
	// alone sets the estimate. Until then a fresh REMB only caps it.
	REMBFallback time.Duration

	// DelayOnly keeps the estimator in delay mode: it never switches to
	// holding its share on loss beside flows that fill the queue
	// (compete.go). For comparison only; the default is false.
	DelayOnly bool
}

// DefaultConfig returns the defaults: start at 1 Mb/s, between 30 kb/s and
// 20 Mb/s.
func DefaultConfig() Config {
	return Config{
		StartBitrate:      1_000_000,
		MinBitrate:        30_000,
		MaxBitrate:        20_000_000,
		History:           4096,
		Beta:              0.85,
		AppLimitedRatio:   1.2,
		AckedWindow:       500 * time.Millisecond,
		LossWindow:        time.Second,
		LossMinPackets:    100,
		LossLow:           0.02,
		LossHigh:          0.10,
		ProbeGain:         2,
		ProbeDuration:     150 * time.Millisecond,
		ProbeMinPackets:   6,
		ProbeBackoffMin:   time.Second,
		ProbeBackoffMax:   3 * time.Second,
		ProbeAfterOveruse: time.Second,
		FeedbackTimeout:   time.Second,
		REMBFallback:      2 * time.Second,
	}
}

// Validate reports whether the parameters are consistent.
func (c Config) Validate() error {
	var errs []error
	if c.MinBitrate <= 0 || c.MaxBitrate < c.MinBitrate {
		errs = append(errs, fmt.Errorf("need 0 < MinBitrate (%d) <= MaxBitrate (%d)", c.MinBitrate, c.MaxBitrate))
	}
	if c.StartBitrate < c.MinBitrate || c.StartBitrate > c.MaxBitrate {
		errs = append(errs, fmt.Errorf("StartBitrate %d outside [MinBitrate, MaxBitrate]", c.StartBitrate))
	}
	if c.History < 64 || c.History > 1<<16 {
		errs = append(errs, fmt.Errorf("History must be in [64, 65536], got %d", c.History))
	}
	if !(c.Beta > 0 && c.Beta < 1) {
		errs = append(errs, fmt.Errorf("Beta must be in (0, 1), got %v", c.Beta))
	}
	if !(c.AppLimitedRatio >= 1) {
		errs = append(errs, fmt.Errorf("AppLimitedRatio must be at least 1, got %v", c.AppLimitedRatio))
	}
	if !(c.LossLow >= 0 && c.LossLow <= c.LossHigh && c.LossHigh < 1) {
		errs = append(errs, errors.New("need 0 <= LossLow <= LossHigh < 1"))
	}
	if c.LossMinPackets <= 0 || c.ProbeMinPackets <= 0 {
		errs = append(errs, errors.New("LossMinPackets and ProbeMinPackets must be positive"))
	}
	if !(c.ProbeGain > 1) {
		errs = append(errs, fmt.Errorf("ProbeGain must exceed 1, got %v", c.ProbeGain))
	}
	if c.AckedWindow <= 0 || c.AckedWindow > maxMeterSpan || c.LossWindow <= 0 || c.ProbeDuration <= 0 ||
		c.ProbeBackoffMin <= 0 || c.ProbeBackoffMax < c.ProbeBackoffMin || c.ProbeAfterOveruse < 0 ||
		c.FeedbackTimeout <= 0 || c.REMBFallback <= 0 {
		errs = append(errs, fmt.Errorf("durations must be positive, AckedWindow at most %v, ProbeBackoffMax >= ProbeBackoffMin", maxMeterSpan))
	}
	return errors.Join(errs...)
}
