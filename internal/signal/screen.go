package signal

import "strings"

// A participant's screen share is a source of its own, next to its camera and
// microphone: its tracks reach receivers under the share's source id (the
// stream id of its tracks), and pins, constraints, forwarded lists and the
// room's on-stage set name it by that id.

// ScreenSuffix ends a screen share's source id: "<participant id>-screen".
// Participant ids never contain '-', and both are msid tokens (RFC 8830).
const ScreenSuffix = "-screen"

// maxScreenMids bounds an offer's screenMids: a share is one video and at most
// one audio track.
const maxScreenMids = 2

// ScreenSource is the source id of participant's screen share.
func ScreenSource(participant string) string { return participant + ScreenSuffix }

// ScreenOwner is the participant whose screen share source names; false when
// source is not a share's id.
func ScreenOwner(source string) (string, bool) {
	owner, ok := strings.CutSuffix(source, ScreenSuffix)
	return owner, ok && owner != "" && !strings.Contains(owner, "-")
}

func validateScreenMids(typ string, m *SDP) error {
	if len(m.ScreenMids) == 0 {
		return nil
	}
	if typ != TypeOffer || m.PC != PCPublish {
		return Errorf(CodeBadMessage, false, "%s: screenMids belong to publish offers", typ)
	}
	if len(m.ScreenMids) > maxScreenMids {
		return Errorf(CodeBadMessage, false, "offer: at most %d screenMids", maxScreenMids)
	}
	for _, mid := range m.ScreenMids {
		if mid == "" || len(mid) > 32 {
			return Errorf(CodeBadMessage, false, "offer: a screen mid must be 1-32 bytes")
		}
	}
	return nil
}
