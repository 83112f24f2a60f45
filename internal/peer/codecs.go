package peer

import (
	"fmt"

	"github.com/pion/sdp/v3"
	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/forward"
)

// Payload types we offer; clients may answer with others, pion maps them per connection.
const (
	PayloadTypeOpus   = 111
	PayloadTypeVP8    = 96
	PayloadTypeVP8RTX = 97
	// PayloadTypeRED is RFC 2198 RED of Opus, as Chromium numbers it: the SFU
	// sends it to receivers that accept it (forward/red.go).
	PayloadTypeRED = 63
)

// AudioLevelURI is the RFC 6464 client-to-mixer audio level extension.
const AudioLevelURI = "urn:ietf:params:rtp-hdrext:ssrc-audio-level"

var videoFeedback = []webrtc.RTCPFeedback{
	{Type: "goog-remb"},
	{Type: webrtc.TypeRTCPFBTransportCC},
	{Type: "ccm", Parameter: "fir"},
	{Type: "nack"},
	{Type: "nack", Parameter: "pli"},
}

// Opus (and RED of Opus, which the SFU builds itself) and VP8 (with RTX) only:
// every browser has them and the SFU never transcodes.
func registerCodecs(m *webrtc.MediaEngine) error {
	codecs := []struct {
		params webrtc.RTPCodecParameters
		kind   webrtc.RTPCodecType
	}{
		{webrtc.RTPCodecParameters{RTPCodecCapability: webrtc.RTPCodecCapability{
			MimeType: webrtc.MimeTypeOpus, ClockRate: 48000, Channels: 2,
			SDPFmtpLine:  "minptime=10;useinbandfec=1",
			RTCPFeedback: []webrtc.RTCPFeedback{{Type: webrtc.TypeRTCPFBTransportCC}},
		}, PayloadType: PayloadTypeOpus}, webrtc.RTPCodecTypeAudio},
		{webrtc.RTPCodecParameters{RTPCodecCapability: webrtc.RTPCodecCapability{
			MimeType: forward.MimeTypeRED, ClockRate: 48000, Channels: 2,
			SDPFmtpLine: fmt.Sprintf("%d/%d", PayloadTypeOpus, PayloadTypeOpus),
		}, PayloadType: PayloadTypeRED}, webrtc.RTPCodecTypeAudio},
		{webrtc.RTPCodecParameters{RTPCodecCapability: webrtc.RTPCodecCapability{
			MimeType: webrtc.MimeTypeVP8, ClockRate: 90000, RTCPFeedback: videoFeedback,
		}, PayloadType: PayloadTypeVP8}, webrtc.RTPCodecTypeVideo},
		{webrtc.RTPCodecParameters{RTPCodecCapability: webrtc.RTPCodecCapability{
			MimeType: webrtc.MimeTypeRTX, ClockRate: 90000, SDPFmtpLine: fmt.Sprintf("apt=%d", PayloadTypeVP8),
		}, PayloadType: PayloadTypeVP8RTX}, webrtc.RTPCodecTypeVideo},
	}
	for _, c := range codecs {
		if err := m.RegisterCodec(c.params, c.kind); err != nil {
			return fmt.Errorf("%w: %s: %v", errNoCodec, c.params.MimeType, err)
		}
	}
	exts := []struct {
		uri  string
		kind webrtc.RTPCodecType
	}{
		{AudioLevelURI, webrtc.RTPCodecTypeAudio},
		{sdp.SDESMidURI, webrtc.RTPCodecTypeAudio},
		{sdp.SDESMidURI, webrtc.RTPCodecTypeVideo},
		{sdp.SDESRTPStreamIDURI, webrtc.RTPCodecTypeVideo},
		{sdp.SDESRepairRTPStreamIDURI, webrtc.RTPCodecTypeVideo},
	}
	for _, x := range exts {
		if err := m.RegisterHeaderExtension(webrtc.RTPHeaderExtensionCapability{URI: x.uri}, x.kind); err != nil {
			return fmt.Errorf("header extension %s: %w", x.uri, err)
		}
	}
	return nil
}
