package alloc

import "time"

// LossHold decides when a receiver's videos are held to their lowest
// encoding: while its link shares a drop-tail queue with flows that do not back
// off (bwe competitive mode) and loses a sizeable fraction of its packets. A
// lost packet costs the frame it belongs to until it is repaired, and a larger
// picture has more packets a frame: beside ten CUBIC downloads at 8 % loss the
// stage on its 270p encoding decoded 6 fps (TCP-share run Q, docs/adaptation.md)
// where its lowest decoded 19–25 (runs P, R). The estimate alone would allow
// the larger encoding there, since competitive mode holds a TCP flow's share.
//
// It is a pure state machine: time is an argument.
type LossHold struct {
	on        bool
	calmSince time.Time
}

const (
	// holdLoss: a loss window this lossy, while competing, holds the videos.
	holdLoss = 0.05
	// releaseLoss and releaseAfter: the hold ends when competitive mode ends
	// (the flows stopped: the videos climb back as after any cap), or after
	// the loss stayed below releaseLoss this long (the flows are fewer).
	releaseLoss  = 0.02
	releaseAfter = 10 * time.Second
)

// Update takes whether the link competes and the loss fraction of its last
// closed loss window, and reports whether the videos are held to their
// lowest encoding (Source.Lowest).
func (h *LossHold) Update(now time.Time, competing bool, loss float64) bool {
	switch {
	case !competing:
		h.on, h.calmSince = false, time.Time{}
	case loss >= holdLoss:
		h.on, h.calmSince = true, time.Time{}
	case !h.on:
	case loss >= releaseLoss:
		h.calmSince = time.Time{}
	case h.calmSince.IsZero():
		h.calmSince = now
	case now.Sub(h.calmSince) >= releaseAfter:
		h.on, h.calmSince = false, time.Time{}
	}
	return h.on
}
