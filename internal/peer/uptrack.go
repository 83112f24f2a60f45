package peer

import (
	"strings"

	"github.com/pion/rtcp"
	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/forward"
)

// UpTrackParams are the parts of a published track's forward.UpTrackParams
// that come from pion: how to read it and its RTCP, how to ask its sender
// for a keyframe, and its audio level extension. The caller adds whose
// track it is (Source, Encoding) and its Meter.
func UpTrackParams(pc *webrtc.PeerConnection, track *webrtc.TrackRemote, receiver *webrtc.RTPReceiver) forward.UpTrackParams {
	params := receiver.GetParameters()
	var levelExt uint8
	for _, ext := range params.HeaderExtensions {
		if ext.URI == AudioLevelURI {
			levelExt = uint8(ext.ID)
		}
	}
	codec := track.Codec().RTPCodecCapability
	var redPT, opusPT uint8
	if track.Kind() == webrtc.RTPCodecTypeAudio {
		// A publisher may send RED (its first packet then names the track's
		// codec): the SFU forwards its Opus.
		for _, c := range params.Codecs {
			switch {
			case strings.EqualFold(c.MimeType, forward.MimeTypeRED):
				redPT = uint8(c.PayloadType)
			case strings.EqualFold(c.MimeType, webrtc.MimeTypeOpus):
				opusPT = uint8(c.PayloadType)
				if strings.EqualFold(codec.MimeType, forward.MimeTypeRED) {
					codec = c.RTPCodecCapability
				}
			}
		}
	}
	return forward.UpTrackParams{
		Kind:            track.Kind(),
		SSRC:            uint32(track.SSRC()),
		Codec:           codec,
		REDPayloadType:  redPT,
		OpusPayloadType: opusPT,
		Read: func(b []byte) (int, error) {
			n, _, err := track.Read(b)
			return n, err
		},
		SendKeyframeRequest: func(ssrc uint32) error {
			return pc.WriteRTCP([]rtcp.Packet{&rtcp.PictureLossIndication{MediaSSRC: ssrc}})
		},
		AudioLevelExtID: levelExt,
		RID:             track.RID(),
	}
}

// ReadFeedback feeds up the RTCP pion reads for track until the receiver
// closes; it runs on a goroutine of the track's owner.
func ReadFeedback(up *forward.UpTrack, track *webrtc.TrackRemote, receiver *webrtc.RTPReceiver) {
	up.ReadFeedback(func(b []byte) (int, error) {
		n, _, err := receiver.ReadSimulcast(b, track.RID())
		return n, err
	})
}
