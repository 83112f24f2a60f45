package session

import (
	"slices"

	"github.com/pion/sdp/v3"
	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/signal"
)

// checkScreenMids checks the sections a publish offer names as its screen
// share (signal.SDP.ScreenMids): each must be a sending audio or video
// section of the offer, at most one of each kind, and the video one sends one
// encoding (no simulcast RIDs: the share's layers are not the camera's). The
// track limit counts the share's sections like any others.
func checkScreenMids(offer string, mids []string) error {
	if len(mids) == 0 {
		return nil
	}
	var desc sdp.SessionDescription
	if err := desc.UnmarshalString(offer); err != nil {
		return signal.Errorf(signal.CodeBadSDP, false, "publish offer: %v", err)
	}
	kinds := map[string]bool{}
	for _, mid := range mids {
		m := sectionByMid(&desc, mid)
		if m == nil || m.MediaName.Port.Value == 0 || !sendingSection(m) {
			return signal.Errorf(signal.CodeBadSDP, false, "screen mid %q is not a sending section of the offer", mid)
		}
		kind := m.MediaName.Media
		if kinds[kind] {
			return signal.Errorf(signal.CodeBadSDP, false, "a screen share has at most one %s section", kind)
		}
		kinds[kind] = true
		if _, rid := m.Attribute("rid"); rid && kind == "video" {
			return signal.Errorf(signal.CodeBadSDP, false, "the screen share's video must send a single encoding (no rid)")
		}
	}
	return nil
}

func sectionByMid(desc *sdp.SessionDescription, mid string) *sdp.MediaDescription {
	for _, m := range desc.MediaDescriptions {
		if m == nil || (m.MediaName.Media != "audio" && m.MediaName.Media != "video") {
			continue
		}
		if v, ok := m.Attribute("mid"); ok && v == mid {
			return m
		}
	}
	return nil
}

func sendingSection(m *sdp.MediaDescription) bool {
	for _, a := range m.Attributes {
		switch a.Key {
		case "recvonly", "inactive":
			return false
		}
	}
	return true
}

// screenTrack reports whether receiver's transceiver is one the latest
// publish offer named as the screen share. It runs on pion's goroutine.
func (s *Session) screenTrack(receiver *webrtc.RTPReceiver) bool {
	mids := s.screenMids.Load()
	if mids == nil || len(*mids) == 0 {
		return false
	}
	for _, t := range s.pub.GetTransceivers() {
		if t.Receiver() == receiver {
			return slices.Contains(*mids, t.Mid())
		}
	}
	return false
}
