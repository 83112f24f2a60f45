package session

import (
	"github.com/pion/sdp/v3"

	"github.com/podium-sfu/podium/internal/signal"
)

// sendingTracks counts the audio and video sections of a publish offer in which
// the client sends: not rejected (port 0), direction sendrecv or sendonly (the
// default). Each is one track, whatever its simulcast encodings. It is the check
// that runs on untrusted SDP before pion sees it.
func sendingTracks(offer string) (int, error) {
	var desc sdp.SessionDescription
	if err := desc.UnmarshalString(offer); err != nil {
		return 0, err
	}
	n := 0
	for _, m := range desc.MediaDescriptions {
		if m == nil || (m.MediaName.Media != "audio" && m.MediaName.Media != "video") || m.MediaName.Port.Value == 0 {
			continue
		}
		sending := true
		for _, a := range m.Attributes {
			switch a.Key {
			case "recvonly", "inactive":
				sending = false
			}
		}
		if sending {
			n++
		}
	}
	return n, nil
}

// checkPublishOffer applies the publish permission and the track limit to an
// offer; maxTracks 0 means unlimited.
func (s *Session) checkPublishOffer(offer string) error {
	tracks, err := sendingTracks(offer)
	if err != nil {
		return signal.Errorf(signal.CodeBadSDP, false, "publish offer: %v", err)
	}
	if tracks == 0 {
		return nil // nothing sent: nothing to allow
	}
	if err := s.allow("publishing", "publish", s.perms.Publish); err != nil {
		return err
	}
	if max := s.deps.MaxTracks; max > 0 && tracks > max {
		return signal.Errorf(signal.CodeTooManyTracks, false, "the offer sends %d tracks; at most %d are allowed", tracks, max)
	}
	return nil
}
