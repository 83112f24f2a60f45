package room

import (
	"os"

	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/forward"
)

// TEST ONLY. With PODIUM_TEST_SWAP_FORWARDING=1 in the environment, the SFU is
// deliberately broken: a receiver other than the room's first two members (by
// join order) gets the first one's video under the second one's name and vice
// versa. The e2e colour check must catch it (e2e TestSwappedForwardingIsCaught).
// Read when a track is subscribed, never per packet; unset, it changes nothing.
const testSwapEnv = "PODIUM_TEST_SWAP_FORWARDING"

// testSwappedLabel is the source whose name up's video goes to `to` under, when
// the swap is on and applies.
func (s *state) testSwappedLabel(to *member, up *forward.UpTrack) (string, bool) {
	if up.Kind() != webrtc.RTPCodecTypeVideo || os.Getenv(testSwapEnv) != "1" {
		return "", false
	}
	var first, second *member
	for _, m := range append(s.sorted(), to) { // to may not be a member yet (joining)
		switch {
		case first == nil || m.order < first.order:
			first, second = m, first
		case m != first && (second == nil || m.order < second.order):
			second = m
		}
	}
	if second == nil || to == first || to == second {
		return "", false
	}
	switch up.Source() {
	case first.info.ID:
		return second.info.ID, true
	case second.info.ID:
		return first.info.ID, true
	}
	return "", false
}
