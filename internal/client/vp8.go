package client

import (
	"github.com/pion/rtcp"

	podmedia "github.com/podium-sfu/podium/internal/media"
)

func isVP8KeyframeStart(payload []byte) bool {
	var d podmedia.VP8Descriptor
	return podmedia.ParseVP8(payload, &d) == nil && d.IsKeyframe()
}

func isKeyframeRequest(p rtcp.Packet) bool {
	switch p.(type) {
	case *rtcp.PictureLossIndication, *rtcp.FullIntraRequest:
		return true
	}
	return false
}
