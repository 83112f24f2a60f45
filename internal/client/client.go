// Package client is a Go participant speaking Podium's signaling protocol with real
// ICE/DTLS/SRTP. Tests use it as a synthetic endpoint; the load generator builds on it.
package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/pion/interceptor"
	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/signal"
)

// AudioLevelURI is the RFC 6464 client-to-mixer audio level extension.
const AudioLevelURI = "urn:ietf:params:rtp-hdrext:ssrc-audio-level"

// Options configure a client.
type Options struct {
	URL  string // ws://host:port/ws
	Room string
	Name string
	// Publish sends synthetic audio and video when true.
	Publish bool
	// Resume rejoins with a previous identity.
	Resume *signal.Resume
	// IgnoreOffers makes the client ignore subscribe offers (a misbehaving client).
	IgnoreOffers bool
	// Token is sent in join, for servers with access control.
	Token string
	// Media, when set, is published instead of the synthetic audio and video
	// (Publish is then ignored).
	Media Publisher
	// OnTrack, when set, reads each received track instead of the client's counting
	// reader. It runs on a goroutine the client owns (Close waits for it) and should
	// return once a read fails; State.Tracks records the track without counts.
	OnTrack func(*webrtc.TrackRemote, *webrtc.RTPReceiver)
	// OnMessage, when set, sees every signaling message after the client handled
	// it, on the client's reader goroutine: it must return quickly.
	OnMessage func(typ string, frame []byte)
	// API builds the peer connections; nil means pion's default interceptors and
	// UDP over IPv4 with loopback candidates.
	API *webrtc.API
	// RelayOnly makes the connections use relay candidates only, through the
	// TURN servers of welcome (iceTransportPolicy relay); they open at welcome.
	RelayOnly bool
	// Audience joins receive-only (join's audience flag): the server grants no
	// publish permission and makes no publish connection.
	Audience bool
	// AudioSlots announces that the client plays audio slots (join's
	// audioSlots): the selected speakers' audio comes on a few fixed tracks,
	// and audio-slots messages say whom each carries.
	AudioSlots bool
}

// RefusedError is a join the server answered with an error instead of welcome.
type RefusedError struct{ Refusal signal.Error }

func (e *RefusedError) Error() string {
	return fmt.Sprintf("join refused: %s: %s", e.Refusal.Code, e.Refusal.Message)
}

// Publisher is media a client publishes in place of its synthetic audio and video.
type Publisher interface {
	// AddTracks adds the tracks to the publish connection, before the offer.
	AddTracks(pc *webrtc.PeerConnection) error
	// Negotiated is called once the SFU's answer is applied, so the senders'
	// header extension ids and SSRCs are known.
	Negotiated()
}

// Client is one connected participant.
type Client struct {
	opts   Options
	conn   *websocket.Conn
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	pub, sub *webrtc.PeerConnection
	media    *Media
	// early holds the server's candidates that came before the description
	// they belong to: pion refuses a candidate then, and the server trickles
	// its first candidates while its answer or offer is still on the way. A
	// relay-only client depends on them (the SFU's checks cannot reach its
	// relay without a permission). The read loop alone touches it.
	early map[*webrtc.PeerConnection][]webrtc.ICECandidateInit

	mu     sync.Mutex
	state  State
	change chan struct{} // closed and replaced on every state change
	writeM sync.Mutex
}

// State is what the client has learned; read it with Snapshot or Wait.
type State struct {
	ID           string
	Resume       signal.Resume
	Participants map[string]signal.Participant
	Tracks       map[string]*TrackStats // by track id (kind-participant)
	Errors       []signal.Error
	Speaker      string   // the dominant speaker last announced
	Forwarded    []string // the video set last announced
	Suspended    []string // the forwarded videos last announced stopped for lack of bandwidth
	Paused       bool     // the SFU asked us to stop sending video
	PauseCount   int
	Bye          string
	ByeCode      string
	Closed       error
	Offers       int
	Permissions  *signal.Permissions // from welcome
	Draining     *signal.Draining    // the server announced it is shutting down
	AdminMuted   signal.Muted        // what an administrator last muted
	// A cluster's: the bridge that welcomed us and the other nodes to fail
	// over to (welcome); the last redirect received.
	Node      string
	Fallbacks []string
	Redirect  *signal.Redirect
}

// TrackStats counts what arrived on one received track.
type TrackStats struct {
	Source    string
	Kind      string
	Packets   int
	Bytes     int
	Keyframes int
	FirstSeen time.Time
	LastSeen  time.Time
	// Sequence numbers seen, extended past wrap-around: Expected()-Packets
	// is the number lost (duplicates and reordering aside).
	FirstSeq, MaxSeq int64
}

// Expected is how many packets the sequence numbers seen so far span.
func (t *TrackStats) Expected() int {
	if t.Packets == 0 {
		return 0
	}
	return int(t.MaxSeq - t.FirstSeq + 1)
}

// Lost is how many packets within the span seen never arrived (never negative).
func (t *TrackStats) Lost() int { return max(0, t.Expected()-t.Packets) }

// observeSeq extends seq relative to the highest sequence number seen so far.
func (t *TrackStats) observeSeq(seq uint16) {
	if t.Packets == 0 {
		t.FirstSeq, t.MaxSeq = int64(seq), int64(seq)
		return
	}
	ext := t.MaxSeq + int64(int16(seq-uint16(t.MaxSeq)))
	t.MaxSeq = max(t.MaxSeq, ext)
	t.FirstSeq = min(t.FirstSeq, ext)
}

// Dial connects, joins and (if asked) publishes. It returns after welcome.
func Dial(ctx context.Context, opts Options) (*Client, error) {
	conn, _, err := websocket.Dial(ctx, opts.URL, nil)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", opts.URL, err)
	}
	conn.SetReadLimit(1 << 20)
	cctx, cancel := context.WithCancel(context.Background())
	c := &Client{opts: opts, conn: conn, ctx: cctx, cancel: cancel, change: make(chan struct{})}
	c.state.Participants = map[string]signal.Participant{}
	c.state.Tracks = map[string]*TrackStats{}
	if opts.Publish && opts.Media == nil { // before the reader starts, which reads it
		c.media = &Media{keyframe: make(chan struct{}, 1), done: make(chan struct{})}
	}
	if !opts.RelayOnly {
		if err := c.openPeerConnections(webrtc.Configuration{}); err != nil {
			c.Close()
			return nil, err
		}
	}
	c.wg.Add(1)
	go func() { defer c.wg.Done(); c.readLoop() }()
	if err := c.Send(signal.TypeJoin, signal.Join{Version: signal.Version, Room: opts.Room, Name: opts.Name, Token: opts.Token, Resume: opts.Resume,
		Audience: opts.Audience, AudioSlots: opts.AudioSlots}); err != nil {
		c.Close()
		return nil, err
	}
	if err := c.Wait(ctx, func(s *State) bool { return s.ID != "" || s.Closed != nil || len(s.Errors) > 0 || s.Redirect != nil }); err != nil {
		c.Close()
		return nil, err
	}
	st := c.Snapshot()
	if st.ID == "" {
		c.Close()
		if st.Redirect != nil {
			return nil, &RedirectError{Redirect: *st.Redirect}
		}
		if len(st.Errors) > 0 {
			return nil, &RefusedError{Refusal: st.Errors[0]}
		}
		return nil, fmt.Errorf("join: %w", st.Closed)
	}
	switch {
	case opts.Media != nil:
		err = c.publishWith(opts.Media)
	case opts.Publish:
		err = c.publish()
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// NewAPI is the pion API of Podium's Go clients (load generator, WHIP/WHEP
// tools, tests): default codecs and interceptors, the audio level extension,
// UDP over IPv4 with loopback candidates.
func NewAPI() (*webrtc.API, error) {
	m := &webrtc.MediaEngine{}
	if err := m.RegisterDefaultCodecs(); err != nil {
		return nil, err
	}
	if err := m.RegisterHeaderExtension(webrtc.RTPHeaderExtensionCapability{URI: AudioLevelURI}, webrtc.RTPCodecTypeAudio); err != nil {
		return nil, err
	}
	r := &interceptor.Registry{}
	if err := webrtc.RegisterDefaultInterceptors(m, r); err != nil {
		return nil, err
	}
	var s webrtc.SettingEngine
	s.SetIncludeLoopbackCandidate(true)
	s.SetNetworkTypes([]webrtc.NetworkType{webrtc.NetworkTypeUDP4})
	return webrtc.NewAPI(webrtc.WithMediaEngine(m), webrtc.WithInterceptorRegistry(r), webrtc.WithSettingEngine(s)), nil
}

func (c *Client) openPeerConnections(cfg webrtc.Configuration) error {
	api := c.opts.API
	if api == nil {
		var err error
		if api, err = NewAPI(); err != nil {
			return err
		}
	}
	var err error
	if c.sub, err = api.NewPeerConnection(cfg); err != nil {
		return err
	}
	pcs := map[string]*webrtc.PeerConnection{signal.PCSubscribe: c.sub}
	if c.opts.Publish || c.opts.Media != nil { // a receive-only client makes no publish connection
		if c.pub, err = api.NewPeerConnection(cfg); err != nil {
			return err
		}
		pcs[signal.PCPublish] = c.pub
	}
	for name, pc := range pcs {
		name := name
		pc.OnICECandidate(func(cand *webrtc.ICECandidate) {
			if cand == nil {
				return
			}
			init := cand.ToJSON()
			_ = c.Send(signal.TypeCandidate, signal.TrickleCandidate{PC: name, Candidate: &signal.Candidate{
				Candidate: init.Candidate, SDPMid: init.SDPMid, SDPMLineIndex: init.SDPMLineIndex,
			}})
		})
	}
	c.sub.OnTrack(c.onTrack)
	return nil
}

// HasPublishConnection reports whether the client made a publish connection
// (a receive-only one makes none).
func (c *Client) HasPublishConnection() bool { return c.pub != nil }

// SetSpeaking switches the synthetic microphone between speech-like levels and silence.
func (c *Client) SetSpeaking(on bool) {
	if c.media != nil {
		c.media.speaking.Store(on)
	}
}

// VideoFramesSent counts the video frames this client has sent.
func (c *Client) VideoFramesSent() uint64 {
	if c.media == nil {
		return 0
	}
	return c.media.sentVideo.Load()
}

// KeyframeRequests counts the keyframe requests (PLI/FIR) the SFU sent this client.
func (c *Client) KeyframeRequests() uint64 {
	if c.media == nil {
		return 0
	}
	return c.media.keyframeRequests.Load()
}

// Send writes one message.
func (c *Client) Send(typ string, body any) error {
	frame, err := signal.Encode(typ, body)
	if err != nil {
		return err
	}
	return c.SendRaw(frame)
}

// SendRaw writes one frame as is (for malformed-input tests).
func (c *Client) SendRaw(frame []byte) error {
	c.writeM.Lock()
	defer c.writeM.Unlock()
	ctx, cancel := context.WithTimeout(c.ctx, 5*time.Second)
	defer cancel()
	return c.conn.Write(ctx, websocket.MessageText, frame)
}

// Snapshot copies the state.
func (c *Client) Snapshot() State {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.state
	s.Participants = make(map[string]signal.Participant, len(c.state.Participants))
	for k, v := range c.state.Participants {
		s.Participants[k] = v
	}
	s.Tracks = make(map[string]*TrackStats, len(c.state.Tracks))
	for k, v := range c.state.Tracks {
		cp := *v
		s.Tracks[k] = &cp
	}
	s.Errors = append([]signal.Error(nil), c.state.Errors...)
	s.Forwarded = append([]string(nil), c.state.Forwarded...)
	s.Suspended = append([]string(nil), c.state.Suspended...)
	return s
}

// Wait blocks until cond holds on the state or ctx ends.
func (c *Client) Wait(ctx context.Context, cond func(*State) bool) error {
	for {
		c.mu.Lock()
		ok := cond(&c.state)
		ch := c.change
		c.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		case <-time.After(100 * time.Millisecond): // track counters change without notifying
		}
	}
}

func (c *Client) update(f func(*State)) {
	c.mu.Lock()
	f(&c.state)
	close(c.change)
	c.change = make(chan struct{})
	c.mu.Unlock()
}

// Close leaves (without saying goodbye) and releases everything.
func (c *Client) Close() {
	c.cancel()
	_ = c.conn.CloseNow()
	// Closing the connections first ends the RTCP readers that media.stop waits for.
	for _, pc := range []*webrtc.PeerConnection{c.pub, c.sub} {
		if pc != nil {
			_ = pc.Close()
		}
	}
	if c.media != nil {
		c.media.stop()
	}
	c.wg.Wait()
}

// URL is the signaling URL the client joined at (a redirect's, after Join).
func (c *Client) URL() string { return c.opts.URL }

// Leave says leave, then closes.
func (c *Client) Leave() {
	_ = c.Send(signal.TypeLeave, struct{}{})
	c.Close()
}

var errClosedByServer = errors.New("connection closed")

func (c *Client) readLoop() {
	for {
		_, frame, err := c.conn.Read(c.ctx)
		if err != nil {
			c.update(func(s *State) { s.Closed = fmt.Errorf("%w: %v", errClosedByServer, err) })
			return
		}
		c.handle(frame)
	}
}

func (c *Client) handle(frame []byte) {
	var head struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(frame, &head) != nil {
		return
	}
	switch head.Type {
	case signal.TypeWelcome:
		var w signal.Welcome
		_ = json.Unmarshal(frame, &w)
		if c.opts.RelayOnly && c.sub == nil { // before anyone learns the id (Dial publishes then)
			if err := c.openPeerConnections(relayOnly(w.ICEServers)); err != nil {
				c.update(func(s *State) { s.Closed = err })
				return
			}
		}
		c.update(func(s *State) {
			s.ID, s.Resume, s.Permissions = w.ID, w.Resume, w.Permissions
			s.Node, s.Fallbacks = w.Node, w.Fallbacks
			for _, p := range w.Participants {
				s.Participants[p.ID] = p
			}
		})
	case signal.TypeRedirect:
		var rd signal.Redirect
		if json.Unmarshal(frame, &rd) == nil {
			c.update(func(s *State) { s.Redirect = &rd })
		}
	case signal.TypeParticipants:
		var d signal.ParticipantDiff
		_ = json.Unmarshal(frame, &d)
		c.update(func(s *State) {
			for _, p := range d.Participants {
				if p.ID != s.ID {
					s.Participants[p.ID] = p
				}
			}
			for _, id := range d.Left {
				delete(s.Participants, id)
			}
		})
	case signal.TypeJoined, signal.TypeUpdated: // from servers before participants
		var e signal.ParticipantEvent
		_ = json.Unmarshal(frame, &e)
		c.update(func(s *State) { s.Participants[e.Participant.ID] = e.Participant })
	case signal.TypeLeft:
		var e signal.ParticipantLeft
		_ = json.Unmarshal(frame, &e)
		c.update(func(s *State) { delete(s.Participants, e.ID) })
	case signal.TypeOffer:
		var m signal.SDP
		_ = json.Unmarshal(frame, &m)
		c.update(func(s *State) { s.Offers++ })
		if !c.opts.IgnoreOffers {
			c.answer(m)
		}
	case signal.TypeAnswer:
		var m signal.SDP
		_ = json.Unmarshal(frame, &m)
		if c.pub != nil && c.pub.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeAnswer, SDP: m.SDP}) == nil {
			c.addEarlyCandidates(c.pub)
			if c.media != nil {
				c.media.answered()
			}
			if c.opts.Media != nil {
				c.opts.Media.Negotiated()
			}
		}
	case signal.TypeCandidate:
		var m signal.TrickleCandidate
		_ = json.Unmarshal(frame, &m)
		if m.Candidate != nil {
			pc := c.pub
			if m.PC == signal.PCSubscribe {
				pc = c.sub
			}
			if pc == nil {
				break
			}
			c.addCandidate(pc, webrtc.ICECandidateInit{Candidate: m.Candidate.Candidate, SDPMid: m.Candidate.SDPMid, SDPMLineIndex: m.Candidate.SDPMLineIndex})
		}
	case signal.TypeSpeaker:
		var m signal.Speaker
		_ = json.Unmarshal(frame, &m)
		c.update(func(s *State) { s.Speaker = m.ID })
	case signal.TypeForwarded:
		var m signal.Forwarded
		_ = json.Unmarshal(frame, &m)
		c.update(func(s *State) { s.Forwarded = m.IDs })
	case signal.TypeSuspended:
		var m signal.Suspended
		_ = json.Unmarshal(frame, &m)
		c.update(func(s *State) { s.Suspended = m.IDs })
	case signal.TypePauseVideo, signal.TypeResumeVideo:
		pause := head.Type == signal.TypePauseVideo
		if c.media != nil {
			c.media.paused.Store(pause)
		}
		c.update(func(s *State) {
			s.Paused = pause
			if pause {
				s.PauseCount++
			}
		})
	case signal.TypeError:
		var e signal.Error
		_ = json.Unmarshal(frame, &e)
		c.update(func(s *State) { s.Errors = append(s.Errors, e) })
	case signal.TypeBye:
		var b signal.Bye
		_ = json.Unmarshal(frame, &b)
		c.update(func(s *State) { s.Bye, s.ByeCode = b.Reason, b.Code })
	case signal.TypeDraining:
		var d signal.Draining
		_ = json.Unmarshal(frame, &d)
		c.update(func(s *State) { s.Draining = &d })
	case signal.TypeMuted:
		var m signal.Muted
		_ = json.Unmarshal(frame, &m)
		c.update(func(s *State) { s.AdminMuted = m })
	}
	if c.opts.OnMessage != nil {
		c.opts.OnMessage(head.Type, frame)
	}
}

func (c *Client) answer(m signal.SDP) {
	if err := c.sub.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeOffer, SDP: m.SDP}); err != nil {
		return
	}
	c.addEarlyCandidates(c.sub)
	ans, err := c.sub.CreateAnswer(nil)
	if err != nil {
		return
	}
	if err := c.sub.SetLocalDescription(ans); err != nil {
		return
	}
	_ = c.Send(signal.TypeAnswer, signal.SDP{PC: signal.PCSubscribe, SDP: ans.SDP})
}

// addCandidate adds a server candidate to pc, or keeps it until pc has the
// remote description it belongs to.
func (c *Client) addCandidate(pc *webrtc.PeerConnection, cand webrtc.ICECandidateInit) {
	if pc.RemoteDescription() == nil {
		if c.early == nil {
			c.early = map[*webrtc.PeerConnection][]webrtc.ICECandidateInit{}
		}
		c.early[pc] = append(c.early[pc], cand)
		return
	}
	_ = pc.AddICECandidate(cand) // one bad candidate is not fatal: ICE may succeed with the others
}

func (c *Client) addEarlyCandidates(pc *webrtc.PeerConnection) {
	for _, cand := range c.early[pc] {
		_ = pc.AddICECandidate(cand)
	}
	delete(c.early, pc)
}

// relayOnly is a configuration using relay candidates only, through servers.
func relayOnly(servers []signal.ICEServer) webrtc.Configuration {
	cfg := webrtc.Configuration{ICETransportPolicy: webrtc.ICETransportPolicyRelay}
	for _, s := range servers {
		cfg.ICEServers = append(cfg.ICEServers, webrtc.ICEServer{URLs: s.URLs, Username: s.Username, Credential: s.Credential})
	}
	return cfg
}
