package session

import (
	"testing"
	"time"

	"github.com/pion/webrtc/v4"
)

// pairRTT reads a real connection's round-trip time from its selected pair.
func TestPairRTT(t *testing.T) {
	var se webrtc.SettingEngine
	se.SetIncludeLoopbackCandidate(true)
	api := webrtc.NewAPI(webrtc.WithSettingEngine(se))
	a, err := api.NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := api.NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, ok := pairRTT(a); ok {
		t.Fatal("an unconnected connection has an RTT")
	}
	if _, err := a.CreateDataChannel("x", nil); err != nil {
		t.Fatal(err)
	}
	exchange := func(from, to *webrtc.PeerConnection, sd webrtc.SessionDescription) {
		done := webrtc.GatheringCompletePromise(from)
		if err := from.SetLocalDescription(sd); err != nil {
			t.Fatal(err)
		}
		<-done
		if err := to.SetRemoteDescription(*from.LocalDescription()); err != nil {
			t.Fatal(err)
		}
	}
	offer, _ := a.CreateOffer(nil)
	exchange(a, b, offer)
	answer, _ := b.CreateAnswer(nil)
	exchange(b, a, answer)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if d, ok := pairRTT(a); ok {
			if d <= 0 || d > time.Second {
				t.Fatalf("loopback RTT %v", d)
			}
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("no RTT from a connected pair")
}
