package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/client"
	"github.com/podium-sfu/podium/internal/signal"
)

// Misbehaving clients get a clear error (or a clean close of their own connection);
// the server and the other participants carry on. One server and one publishing pair
// serve every case, so each case also proves the earlier ones left no damage.
func TestBadInput(t *testing.T) {
	srv := startServer(t, Options{})
	pair := publishingPair(t, srv, "main")

	// joinMain joins a raw connection to the pair's room and waits until the pair sees it.
	joinMain := func(t *testing.T, name string) *rawConn {
		t.Helper()
		rc := dialRaw(t, srv)
		rc.join("main", name)
		for _, cl := range pair {
			waitFor(t, cl, "sees "+name+" join", 5*time.Second, present(rc.id))
		}
		return rc
	}

	t.Run("malformed JSON before join", func(t *testing.T) {
		rc := dialRaw(t, srv)
		rc.send([]byte(`{"type":"join","version":1,`))
		rc.expectError(signal.CodeBadMessage, true)
		rc.expectClose(websocket.StatusPolicyViolation)
		checkPair(t, pair)
	})

	t.Run("malformed JSON after join", func(t *testing.T) {
		rc := joinMain(t, "broken")
		rc.send([]byte("not json at all"))
		rc.expectError(signal.CodeBadMessage, true)
		rc.expectClose(websocket.StatusPolicyViolation)
		gone(t, pair, rc.id)
		checkPair(t, pair)
	})

	t.Run("wrong field type", func(t *testing.T) {
		rc := joinMain(t, "typo")
		rc.send([]byte(`{"type":"mute","audio":"yes","video":false}`))
		rc.expectError(signal.CodeBadMessage, true)
		rc.expectClose(websocket.StatusPolicyViolation)
		gone(t, pair, rc.id)
		checkPair(t, pair)
	})

	t.Run("oversized frame", func(t *testing.T) {
		rc := joinMain(t, "chatty")
		big := fmt.Appendf(nil, `{"type":"ping","ts":1,"pad":"%s"}`, strings.Repeat("x", signal.MaxFrameBytes))
		rc.send(big)
		rc.expectError(signal.CodeTooLarge, true)
		rc.expectClose(websocket.StatusPolicyViolation)
		gone(t, pair, rc.id)
		checkPair(t, pair)
	})

	t.Run("frame over the WebSocket read limit", func(t *testing.T) {
		rc := dialRaw(t, srv)
		rc.sendMaybe(bytes.Repeat([]byte("x"), 2<<20)) // the server may hang up mid-frame
		rc.expectClose(websocket.StatusMessageTooBig)
		checkPair(t, pair)
	})

	t.Run("unknown message type", func(t *testing.T) {
		rc := joinMain(t, "future")
		rc.send([]byte(`{"type":"dance","id":"p1"}`))
		rc.expectError(signal.CodeUnknownType, false)
		rc.expectPong(7)
		rc.close()
		gone(t, pair, rc.id)
		checkPair(t, pair)
	})

	t.Run("first message not join", func(t *testing.T) {
		for _, frame := range []string{`{"type":"ping","ts":1}`, `{"type":"leave"}`, `{"type":"offer","pc":"publish","sdp":"v=0\r\n"}`} {
			rc := dialRaw(t, srv)
			rc.send([]byte(frame))
			rc.expectError(signal.CodeNotJoined, true)
			rc.expectClose(websocket.StatusPolicyViolation)
		}
		checkPair(t, pair)
	})

	t.Run("bad join", func(t *testing.T) {
		for frame, code := range map[string]string{
			`{"type":"join","version":2,"room":"main","name":"X"}`:    signal.CodeBadVersion,
			`{"type":"join","version":1,"room":"../main","name":"X"}`: signal.CodeBadRoom,
			`{"type":"join","version":1,"room":"main","name":""}`:     signal.CodeBadName,
		} {
			rc := dialRaw(t, srv)
			rc.send([]byte(frame))
			rc.expectError(code, true)
			rc.expectClose(websocket.StatusPolicyViolation)
		}
		checkPair(t, pair)
	})

	t.Run("second join", func(t *testing.T) {
		rc := joinMain(t, "twice")
		rc.send([]byte(`{"type":"join","version":1,"room":"other","name":"again"}`))
		rc.expectError(signal.CodeBadMessage, false)
		rc.expectPong(8)
		rc.close()
		gone(t, pair, rc.id)
		checkPair(t, pair)
	})

	t.Run("invalid SDP offer", func(t *testing.T) {
		rc := joinMain(t, "garbler")
		rc.send([]byte(`{"type":"offer","pc":"publish","sdp":"v=0\r\nthis is not SDP\r\n"}`))
		rc.expectError(signal.CodeBadSDP, false)
		rc.expectPong(9)
		rc.send([]byte(`{"type":"offer","pc":"subscribe","sdp":"v=0\r\n"}`)) // the SFU offers there
		rc.expectError(signal.CodeBadSDP, false)
		rc.send([]byte(`{"type":"offer","pc":"publish","sdp":""}`))
		rc.expectError(signal.CodeBadSDP, false)
		rc.expectPong(10)
		rc.close()
		gone(t, pair, rc.id)
		checkPair(t, pair)
	})

	t.Run("invalid SDP answer is re-offered", func(t *testing.T) {
		rc := joinMain(t, "mumbler")
		offer := rc.waitFor("subscribe offer", func(m serverMsg) bool { return m.Type == signal.TypeOffer && m.PC == signal.PCSubscribe })
		for _, sdp := range []string{
			`v=0\r\nnonsense\r\n`, // not SDP
			`v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n`, // SDP, but no media and no ICE credentials
		} {
			rc.send([]byte(`{"type":"answer","pc":"subscribe","sdp":"` + sdp + `"}`))
			rc.expectError(signal.CodeBadSDP, false)
			offer = rc.waitFor("a fresh subscribe offer", func(m serverMsg) bool { return m.Type == signal.TypeOffer && m.PC == signal.PCSubscribe })
		}
		// A proper answer to the repeated offer completes the negotiation: a second
		// copy finds no offer waiting.
		answer := answerOffer(t, offer.SDP)
		rc.send(answer)
		rc.expectPong(11)
		rc.send(answer)
		if m := rc.waitFor("bad-sdp", isError(signal.CodeBadSDP)); !strings.Contains(m.Message, "no offer is waiting") {
			t.Errorf("second answer: %s, want no offer waiting", m.raw)
		}
		rc.close()
		gone(t, pair, rc.id)
		checkPair(t, pair)
	})

	if rooms := srv.Hub().Rooms(); len(rooms) != 1 || rooms[0].Name() != "main" {
		names := []string{}
		for _, r := range rooms {
			names = append(names, r.Name())
		}
		t.Errorf("rooms after the bad clients left: %v, want [main]", names)
	}
}

// A client that never answers the SFU's subscribe offer is told so and closed;
// the room sees it leave and carries on.
func TestUnansweredOfferTimesOut(t *testing.T) {
	srv := startServer(t, Options{NegotiationTimeout: 2 * time.Second})
	pair := publishingPair(t, srv, "main")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	silent, err := client.Dial(ctx, client.Options{URL: wsURL(srv), Room: "main", Name: "Silent", Publish: true, IgnoreOffers: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(silent.Close)
	id := silent.Snapshot().ID
	for _, cl := range pair {
		waitFor(t, cl, "sees Silent join", 5*time.Second, present(id))
	}
	start := time.Now()
	waitFor(t, silent, "negotiation-timeout and close", 10*time.Second, func(s *client.State) bool {
		return s.Closed != nil
	})
	st := silent.Snapshot()
	if len(st.Errors) != 1 || st.Errors[0].Code != signal.CodeNegotiationTimeout || !st.Errors[0].Fatal {
		t.Errorf("errors before close: %+v, want one fatal %s", st.Errors, signal.CodeNegotiationTimeout)
	}
	if st.Offers < 1 {
		t.Errorf("no subscribe offer was sent to the silent client")
	}
	if wait := time.Since(start); wait > 5*time.Second {
		t.Errorf("closed after %v with a 2 s negotiation timeout", wait)
	}
	gone(t, pair, id)
	checkPair(t, pair)
}

// publishingPair joins two publishing clients to room and waits until each
// receives the other.
func publishingPair(t *testing.T, srv *Server, room string) []*client.Client {
	t.Helper()
	a := dial(t, srv, room, "A", true)
	b := dial(t, srv, room, "B", true)
	waitFor(t, a, "A receives B", 10*time.Second, receiving(b.Snapshot().ID))
	waitFor(t, b, "B receives A", 10*time.Second, receiving(a.Snapshot().ID))
	return []*client.Client{a, b}
}

// checkPair asserts the publishing pair still receive each other, see only each
// other, and were never sent an error.
func checkPair(t *testing.T, pair []*client.Client) {
	t.Helper()
	for i, cl := range pair {
		other := pair[1-i].Snapshot().ID
		start := time.Now()
		waitFor(t, cl, "still receiving "+other, 5*time.Second, func(s *client.State) bool {
			_, sees := s.Participants[other]
			tr := s.Tracks["video-"+other]
			return receiving(other)(s) && sees && len(s.Participants) == 1 && tr.LastSeen.After(start)
		})
		if st := cl.Snapshot(); len(st.Errors) != 0 || st.Closed != nil || st.Bye != "" {
			t.Errorf("%s was disturbed: errors %+v, closed %v, bye %q", st.ID, st.Errors, st.Closed, st.Bye)
		}
	}
}

// gone waits until every client of pair saw id leave.
func gone(t *testing.T, pair []*client.Client, id string) {
	t.Helper()
	for _, cl := range pair {
		waitFor(t, cl, "sees "+id+" leave", 5*time.Second, absent(id))
	}
}

func present(id string) func(*client.State) bool {
	return func(s *client.State) bool { _, ok := s.Participants[id]; return ok }
}

func absent(id string) func(*client.State) bool {
	return func(s *client.State) bool { _, ok := s.Participants[id]; return !ok }
}

// serverMsg is any server message, flattened.
type serverMsg struct {
	Type    string      `json:"type"`
	Code    string      `json:"code"`
	Message string      `json:"message"`
	Fatal   bool        `json:"fatal"`
	PC      string      `json:"pc"`
	SDP     string      `json:"sdp"`
	TS      json.Number `json:"ts"`
	ID      string      `json:"id"`
	raw     []byte
}

// rawConn is a signaling WebSocket driven frame by frame, for input the Go client
// would never send.
type rawConn struct {
	t    *testing.T
	conn *websocket.Conn
	msgs chan serverMsg // closed when the connection ends; then err is set
	err  error
	id   string // from welcome
}

func dialRaw(t *testing.T, s *Server) *rawConn { t.Helper(); return dialRawWith(t, s, nil) }

// dialRawWith is dialRaw with dial options (headers, a local address).
func dialRawWith(t *testing.T, s *Server, opts *websocket.DialOptions) *rawConn {
	t.Helper()
	return dialRawURL(t, wsURL(s), opts)
}

// dialRawURL is dialRawWith to a full signaling URL.
func dialRawURL(t *testing.T, u string, opts *websocket.DialOptions) *rawConn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, u, opts)
	if err != nil {
		t.Fatal(err)
	}
	conn.SetReadLimit(1 << 20)
	rc := &rawConn{t: t, conn: conn, msgs: make(chan serverMsg, 1024)}
	done, stop := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		defer close(rc.msgs)
		for {
			_, frame, err := conn.Read(context.Background())
			if err != nil {
				rc.err = err
				return
			}
			m := serverMsg{raw: frame}
			if err := json.Unmarshal(frame, &m); err != nil {
				rc.err = fmt.Errorf("server sent invalid JSON %q: %w", frame, err)
				return
			}
			select {
			case rc.msgs <- m:
			case <-stop: // nobody reads any more
				return
			}
		}
	}()
	t.Cleanup(func() {
		close(stop)
		_ = conn.CloseNow()
		<-done
	})
	return rc
}

func (rc *rawConn) send(frame []byte) {
	rc.t.Helper()
	if err := rc.sendErr(frame); err != nil {
		rc.t.Fatalf("send: %v", err)
	}
}

// sendMaybe sends a frame the server may refuse to read to the end.
func (rc *rawConn) sendMaybe(frame []byte) { _ = rc.sendErr(frame) }

func (rc *rawConn) sendErr(frame []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return rc.conn.Write(ctx, websocket.MessageText, frame)
}

func (rc *rawConn) close() { _ = rc.conn.Close(websocket.StatusNormalClosure, "") }

func (rc *rawConn) join(room, name string) {
	rc.t.Helper()
	frame, err := signal.Encode(signal.TypeJoin, signal.Join{Version: signal.Version, Room: room, Name: name})
	if err != nil {
		rc.t.Fatal(err)
	}
	rc.send(frame)
	rc.id = rc.waitFor("welcome", func(m serverMsg) bool { return m.Type == signal.TypeWelcome }).ID
}

// waitFor skips messages until one satisfies ok. Any error message fails the test.
func (rc *rawConn) waitFor(what string, ok func(serverMsg) bool) serverMsg {
	rc.t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case m, open := <-rc.msgs:
			if !open {
				rc.t.Fatalf("connection closed waiting for %s: %v", what, rc.err)
			}
			if ok(m) {
				return m
			}
			if m.Type == signal.TypeError {
				rc.t.Fatalf("error %s waiting for %s", m.raw, what)
			}
		case <-timeout:
			rc.t.Fatalf("no %s within 5 s", what)
		}
	}
}

func isError(code string) func(serverMsg) bool {
	return func(m serverMsg) bool { return m.Type == signal.TypeError && m.Code == code }
}

func (rc *rawConn) expectError(code string, fatal bool) {
	rc.t.Helper()
	m := rc.waitFor("error "+code, isError(code))
	if m.Fatal != fatal || m.Message == "" {
		rc.t.Errorf("error %s: fatal %v message %q, want fatal %v and a message", code, m.Fatal, m.Message, fatal)
	}
}

// expectPong shows the connection is still served.
func (rc *rawConn) expectPong(ts int) {
	rc.t.Helper()
	rc.send(fmt.Appendf(nil, `{"type":"ping","ts":%d}`, ts))
	rc.waitFor(fmt.Sprint("pong ", ts), func(m serverMsg) bool { return m.Type == signal.TypePong && m.TS.String() == fmt.Sprint(ts) })
}

// expectClose waits for the server to close the connection with status; messages
// before the close may only be harmless ones (no further error).
func (rc *rawConn) expectClose(status websocket.StatusCode) {
	rc.t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case m, open := <-rc.msgs:
			if !open {
				if got := websocket.CloseStatus(rc.err); got != status {
					rc.t.Errorf("connection ended with %v (status %v), want %v", rc.err, got, status)
				}
				return
			}
			if m.Type == signal.TypeError || m.Type == signal.TypePong {
				rc.t.Errorf("after the fatal error the server still sent %s", m.raw)
			}
		case <-timeout:
			rc.t.Fatalf("connection not closed within 5 s")
		}
	}
}

// answerOffer answers a subscribe offer as a receive-only client would.
func answerOffer(t *testing.T, offer string) []byte {
	t.Helper()
	pc, err := webrtc.NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Close() })
	if err := pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeOffer, SDP: offer}); err != nil {
		t.Fatalf("the server's offer: %v", err)
	}
	answer, err := pc.CreateAnswer(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.SetLocalDescription(answer); err != nil {
		t.Fatal(err)
	}
	frame, err := signal.Encode(signal.TypeAnswer, signal.SDP{PC: signal.PCSubscribe, SDP: answer.SDP})
	if err != nil {
		t.Fatal(err)
	}
	return frame
}
