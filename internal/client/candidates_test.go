package client

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/signal"
)

// TestCandidatesBeforeTheAnswerAreKept: a server that trickles its candidates
// before its answer (the SFU can: pion gathers while the answer is still being
// sent) is still reached. The fake server ignores the client's candidates, so
// the client connects only by checking the server's: pion refuses a candidate
// that comes before the remote description, so without the client's queue
// this never connects.
func TestCandidatesBeforeTheAnswerAreKept(t *testing.T) {
	api, err := NewAPI()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer ws.CloseNow()
		ctx := r.Context()
		send := func(typ string, body any) {
			frame, _ := signal.Encode(typ, body)
			_ = ws.Write(ctx, websocket.MessageText, frame)
		}
		for {
			_, frame, err := ws.Read(ctx)
			if err != nil {
				return
			}
			msg, err := signal.Decode(frame)
			if err != nil {
				continue
			}
			switch msg.Type {
			case signal.TypeJoin:
				send(signal.TypeWelcome, signal.Welcome{Version: signal.Version, ID: "p1", Room: msg.Join.Room})
			case signal.TypeOffer:
				pc, err := api.NewPeerConnection(webrtc.Configuration{})
				if err != nil {
					t.Error(err)
					return
				}
				defer pc.Close()
				if err := pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeOffer, SDP: msg.SDP.SDP}); err != nil {
					t.Error(err)
					return
				}
				answer, err := pc.CreateAnswer(nil)
				if err != nil {
					t.Error(err)
					return
				}
				gathered := webrtc.GatheringCompletePromise(pc)
				if err := pc.SetLocalDescription(answer); err != nil {
					t.Error(err)
					return
				}
				<-gathered
				mid, index := "0", uint16(0)
				sent := 0
				for _, line := range strings.Split(pc.LocalDescription().SDP, "\r\n") {
					if cand, ok := strings.CutPrefix(line, "a=candidate:"); ok {
						send(signal.TypeCandidate, signal.TrickleCandidate{PC: signal.PCPublish,
							Candidate: &signal.Candidate{Candidate: "candidate:" + cand, SDPMid: &mid, SDPMLineIndex: &index}})
						sent++
					}
				}
				if sent == 0 || strings.Contains(answer.SDP, "a=candidate:") {
					t.Errorf("the fake server trickled %d candidates; its answer must carry none", sent)
				}
				send(signal.TypeAnswer, signal.SDP{PC: signal.PCPublish, SDP: answer.SDP})
			}
		}
	}))
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, Options{URL: "ws" + strings.TrimPrefix(srv.URL, "http"), Room: "r", Name: "Ann", Publish: true, API: api})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for c.pub.ConnectionState() != webrtc.PeerConnectionStateConnected {
		select {
		case <-ctx.Done():
			t.Fatalf("the publish connection is %s: the server's early candidates were lost", c.pub.ConnectionState())
		case <-time.After(20 * time.Millisecond):
		}
	}
}
