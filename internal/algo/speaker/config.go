// Package speaker identifies the dominant speaker of a conference from the
// RFC 6464 audio levels carried in each audio packet's header extension, so
// the SFU never decodes audio.
//
// It adapts Volfin & Cohen, "Dominant speaker identification for multipoint
// videoconferencing" (2013), as described in Grozev's thesis (section 4.4) and
// implemented by Jitsi: each participant's levels are scored on three time
// scales (immediate, medium, long) and a global decision every 300 ms switches
// only when a competitor beats the dominant speaker on all three.
//
// The Detector is a pure state machine: it never reads the clock, starts no
// goroutine and takes no lock. Its owner passes the time in, calls
// HandleTimeout at NextTimeout and publishes the returned events.
package speaker

import (
	"errors"
	"fmt"
	"time"
)

// MaxLevel is the loudest level after conversion from the RFC 6464 value;
// level 0 is silence.
const MaxLevel = 127

// Config holds the algorithm's parameters. DefaultConfig returns the values
// published with Jitsi's implementation; the thresholds and likelihood
// parameters were derived for the original algorithm and are not meant to be
// tuned casually.
type Config struct {
	// History is the number of levels kept per participant. It must equal
	// MediumBlock × LongBlocks: the long time scale covers the whole history.
	History int
	// NoiseFloorWindow is the number of non-silent levels after which a
	// participant's noise floor may rise (750 ≈ 15 s of 20 ms packets).
	NoiseFloorWindow int
	// Subbands (N1) splits the level range into sub-units so that the
	// immediate score reuses the original algorithm's frequency sub-band
	// parameters.
	Subbands int
	// MediumBlock (N2) is the number of immediates in a medium block.
	MediumBlock int
	// LongBlocks (N3) is the number of medium blocks in the long interval.
	LongBlocks int
	// MediumThreshold: an immediate above it is an active sub-unit of a
	// medium block.
	MediumThreshold int
	// LongThreshold: a medium block whose count is above it is an active
	// sub-unit of the long interval.
	LongThreshold int
	// P is the speech-presence probability of a sub-unit in the score.
	P float64
	// Lambda{Immediate,Medium,Long} are the exponential-distribution
	// parameters of the score on each time scale.
	LambdaImmediate, LambdaMedium, LambdaLong float64
	// C1, C2, C3 are the thresholds a competitor's log score ratio against
	// the dominant speaker must exceed on each time scale to take over.
	C1, C2, C3 float64
	// DecisionInterval is the period of the global decision.
	DecisionInterval time.Duration
	// LevelInterval is the packet duration assumed when injecting silence
	// for missing levels.
	LevelInterval time.Duration
	// SilenceAfter is how long a participant may send no level before the
	// gap counts as silence (DTX, mute, stopped sender). It exceeds the usual
	// 20 and 30 ms packet durations so that ordinary jitter is not silence.
	SilenceAfter time.Duration
	// IdleTimeout is how long a non-dominant participant may send no level
	// before the detector forgets it (a later level re-adds it).
	IdleTimeout time.Duration
}

// DefaultConfig returns the published parameter values.
func DefaultConfig() Config {
	return Config{
		History:          50,
		NoiseFloorWindow: 750,
		Subbands:         13,
		MediumBlock:      5,
		LongBlocks:       10,
		MediumThreshold:  7,
		LongThreshold:    4,
		P:                0.5,
		LambdaImmediate:  0.78,
		LambdaMedium:     24,
		LambdaLong:       47,
		C1:               3,
		C2:               2,
		C3:               0,
		DecisionInterval: 300 * time.Millisecond,
		LevelInterval:    20 * time.Millisecond,
		SilenceAfter:     40 * time.Millisecond,
		IdleTimeout:      time.Hour,
	}
}

// Validate reports whether the parameters are consistent.
func (c Config) Validate() error {
	var errs []error
	positive := func(name string, v int) {
		if v <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive, got %d", name, v))
		}
	}
	positive("History", c.History)
	positive("NoiseFloorWindow", c.NoiseFloorWindow)
	positive("Subbands", c.Subbands)
	positive("MediumBlock", c.MediumBlock)
	positive("LongBlocks", c.LongBlocks)
	if c.History != c.MediumBlock*c.LongBlocks {
		errs = append(errs, fmt.Errorf("History (%d) must equal MediumBlock × LongBlocks (%d)",
			c.History, c.MediumBlock*c.LongBlocks))
	}
	if c.Subbands > MaxLevel {
		errs = append(errs, fmt.Errorf("Subbands must be at most %d, got %d", MaxLevel, c.Subbands))
	}
	if c.MediumThreshold < 0 || c.LongThreshold < 0 {
		errs = append(errs, errors.New("thresholds must not be negative"))
	}
	if !(c.P > 0 && c.P < 1) {
		errs = append(errs, fmt.Errorf("P must be in (0, 1), got %v", c.P))
	}
	if !(c.LambdaImmediate > 0 && c.LambdaMedium > 0 && c.LambdaLong > 0) {
		errs = append(errs, errors.New("lambdas must be positive"))
	}
	if c.DecisionInterval <= 0 || c.LevelInterval <= 0 || c.IdleTimeout <= 0 {
		errs = append(errs, errors.New("DecisionInterval, LevelInterval and IdleTimeout must be positive"))
	}
	if c.SilenceAfter < c.LevelInterval {
		errs = append(errs, errors.New("SilenceAfter must be at least LevelInterval"))
	}
	return errors.Join(errs...)
}

// subunit is the width of one immediate sub-unit of the level range:
// (127 + 12) / 13 = 10 with the defaults.
func (c Config) subunit() int {
	return (MaxLevel + c.Subbands - 1) / c.Subbands
}
