package room

import (
	"github.com/pion/webrtc/v4"
)

// redMinBudget is the least bandwidth at which a receiver gets redundant
// audio (RED, forward/red.go), when its browser accepts it: RED of two
// packets triples a voice's rate (about 60 kb/s more for Chromium's 32 kb/s
// Opus), which at a 128 kb/s cap would take what the video needs. Above it,
// the ten CUBIC flows of docs/adaptation.md leave the video 150–450 kb/s.
const redMinBudget = 250_000

// useRED is whether a receiver with budget b/s gets RED.
func useRED(budget int) bool { return budget >= redMinBudget }

// applyRED lets RED through, or not, to every audio track m receives: its
// own tracks of sources and its audio slots. Set at every allocation, so a
// track added since follows.
func applyRED(m *member, on bool) {
	for up, d := range m.downs {
		if up.Kind() == webrtc.RTPCodecTypeAudio {
			d.SetRED(on)
		}
	}
	for _, d := range m.slots.tracks {
		d.SetRED(on)
	}
}
