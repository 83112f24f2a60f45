package room

import (
	"strings"
	"testing"
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/algo/bwe"
	"github.com/podium-sfu/podium/internal/forward"
	"github.com/podium-sfu/podium/internal/signal"
)

// With bandwidth adaptation, a receiver that shows a source large keeps the
// encodings below that one on at the sender: they are where a degrading link
// moves it at once. It is told what is suspended and how its downlink fares.
func TestLowerEncodingsStayOnUnderBandwidthAdaptation(t *testing.T) {
	f := newFixture(t, Settings{LastN: -1, VideoPausing: true})
	pub := f.join("pub", false)
	viewer := newFake("viewer")
	viewer.link = forward.NewLink(bwe.DefaultConfig())
	if _, _, err := f.hub.Join("r", viewer, signal.Participant{ID: "viewer", Name: "viewer"}); err != nil {
		t.Fatal(err)
	}
	f.members["viewer"] = viewer
	q := forward.NewUpTrack(forward.UpTrackParams{
		Source: "pub", Kind: webrtc.RTPCodecTypeVideo, SSRC: 7, RID: "q", Encoding: 0,
		Codec:               webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeVP8},
		SendKeyframeRequest: func(uint32) error { return nil },
	})
	start := time.Now()
	f.room.DeclareEncodings(pub, []string{"q", "h", "f"})
	f.room.Publish(pub, q)
	f.room.SetConstraints(viewer, map[string]signal.VideoConstraint{"pub": {Width: 1280, Height: 720, Role: "stage"}})
	f.room.do(func(s *state) { s.maintainLayers(start.Add(layerOffDelay + time.Second)) })
	if got, _ := pub.last(signal.TypeLayers); got != `{"active":["q","h","f"]}` {
		t.Errorf("layers %q, want q, h and f all kept on", got)
	}
	if got, _ := viewer.last(signal.TypeSuspended); got != `{"ids":[]}` {
		t.Errorf("suspended %q, want an empty list", got)
	}
	if got, _ := viewer.last(signal.TypeStats); !strings.Contains(got, `"estimate":1000000`) || !strings.Contains(got, `"switches":0`) ||
		!strings.Contains(got, `"pub":{"encoding":2`) {
		t.Errorf("stats %q, want the start estimate, no switch, and pub on encoding 2 (nothing sends yet: the one it shows)", got)
	}
}
