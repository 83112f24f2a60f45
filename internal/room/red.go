package room

import (
	"github.com/pion/webrtc/v4"
)

// redMinBudget is the least bandwidth at which a receiver gets redundant
// audio (RED, forward/red.go), when its browser accepts it: RED of two
// packets triples a voice's rate (about 60 kb/s more for Chromium's 32 kb/s
// Opus), which at a 128 kb/s cap would take what the video needs.
const redMinBudget = 250_000

// useRED is whether a receiver with budget b/s gets RED: above redMinBudget,
// or at any budget while its link competes with flows that do not back off
// (bwe competitive mode), whose drop-tail losses the audio shares. There the
// estimate goes down to a TCP flow's rate at that loss, 150–350 kb/s against
// ten CUBIC flows, and RED turned off exactly when the losses were heaviest
// (1.25 % of the audio concealed in one ten-flow phase).
func useRED(budget int, competing bool) bool { return competing || budget >= redMinBudget }

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
