package room

import (
	"encoding/json"
	"math/rand"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pion/interceptor"
	"github.com/pion/rtp"
	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/forward"
	"github.com/podium-sfu/podium/internal/signal"
	"github.com/podium-sfu/podium/internal/wire"
)

// slotContext binds an audio slot as pion would, writing into a slotLog.
type slotContext struct {
	ssrc webrtc.SSRC
	log  *slotLog
}

func (c *slotContext) CodecParameters() []webrtc.RTPCodecParameters {
	return []webrtc.RTPCodecParameters{{RTPCodecCapability: opusSlot, PayloadType: 111}}
}
func (c *slotContext) HeaderExtensions() []webrtc.RTPHeaderExtensionParameter { return nil }
func (c *slotContext) SSRC() webrtc.SSRC                                      { return c.ssrc }
func (c *slotContext) SSRCRetransmission() webrtc.SSRC                        { return 0 }
func (c *slotContext) SSRCForwardErrorCorrection() webrtc.SSRC                { return 0 }
func (c *slotContext) WriteStream() webrtc.TrackLocalWriter                   { return c.log }
func (c *slotContext) ID() string                                             { return "slot" }
func (c *slotContext) RTCPReader() interceptor.RTCPReader                     { return nil }

// slotPacket is one packet a receiver got on a slot: the slot's SSRC, its
// numbering, and the source (the payload's first byte names it).
type slotPacket struct {
	at     time.Time
	ssrc   uint32
	seq    uint16
	ts     uint32
	marker bool
	source string
}

type slotLog struct {
	mu   sync.Mutex
	pkts []slotPacket
}

func (l *slotLog) WriteRTP(h *rtp.Header, payload []byte) (int, error) {
	l.mu.Lock()
	l.pkts = append(l.pkts, slotPacket{at: time.Now(), ssrc: h.SSRC, seq: h.SequenceNumber, ts: h.Timestamp, marker: h.Marker, source: string(payload[:1])})
	l.mu.Unlock()
	return len(payload), nil
}
func (l *slotLog) Write(b []byte) (int, error) { return len(b), nil }

func (l *slotLog) since(t time.Time) []slotPacket {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []slotPacket
	for _, p := range l.pkts {
		if !p.at.Before(t) {
			out = append(out, p)
		}
	}
	return out
}

// slotReceiver is a member that plays audio slots: each slot is bound at
// once to a context with its own SSRC.
type slotReceiver struct {
	*fakeMember
	log   *slotLog
	slots int
}

func (s *slotReceiver) AddDownTrack(d *forward.DownTrack) {
	s.fakeMember.AddDownTrack(d)
	if d.IsSlot() {
		i, _ := strconv.Atoi(strings.TrimPrefix(d.ID(), signal.SlotStreamPrefix))
		if _, err := d.Bind(&slotContext{ssrc: webrtc.SSRC(9000 + i), log: s.log}); err != nil {
			panic(err)
		}
		s.mu.Lock()
		s.slots++
		s.mu.Unlock()
	}
}

// slotIDs is the last audio-slots message's mapping.
func (s *slotReceiver) slotIDs(t *testing.T) []string {
	t.Helper()
	raw, ok := s.last(signal.TypeAudioSlots)
	if !ok {
		t.Fatal("no audio-slots message")
	}
	var m signal.AudioSlots
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		t.Fatal(err)
	}
	return m.IDs
}

// micPublisher sends a microphone's packets (RFC 6464 level, extension id 1)
// whose payload names the source.
type micPublisher struct {
	up   *forward.UpTrack
	id   string
	seq  uint16
	ts   uint32
	out  *wire.Batch
	ssrc uint32
}

func newMic(id string, ssrc uint32) *micPublisher {
	up := forward.NewUpTrack(forward.UpTrackParams{Source: id, Kind: webrtc.RTPCodecTypeAudio, SSRC: ssrc,
		Codec: opusSlot, AudioLevelExtID: 1})
	return &micPublisher{up: up, id: id, seq: uint16(ssrc), ts: ssrc * 7, out: wire.NewBatch(8), ssrc: ssrc}
}

func (p *micPublisher) send(now time.Time, level uint8) {
	h := rtp.Header{Version: 2, PayloadType: 111, SequenceNumber: p.seq, Timestamp: p.ts, SSRC: p.ssrc}
	_ = h.SetExtension(1, []byte{0x80 | level})
	b, _ := (&rtp.Packet{Header: h, Payload: []byte(p.id + "opus")}).Marshal()
	p.up.Receive(now, b, p.out)
	p.seq++
	p.ts += 960
}

// Eight microphones, A = 3: d, e and f talk, then f stops and g starts. A
// receiver with slots gets exactly the selected speakers, each on a slot
// SSRC of its own, with continuous sequence numbers and timestamps across
// the switch (g takes f's slot); a speaker with slots never hears itself;
// the audio-slots messages name who each slot carries.
func TestAudioSlotsForwardTheSelectedSpeakers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the room's speaker decisions in real time (about 6 s)")
	}
	hub := NewHub(Settings{LastN: -1, AudioSlots: 3})
	defer hub.Close()
	perms := signal.Permissions{Publish: true, Subscribe: true}
	join := func(id string) *slotReceiver {
		m := &slotReceiver{fakeMember: newFake(id), log: &slotLog{}}
		if _, _, err := hub.JoinWith("r", m, signal.Participant{ID: id, Name: id}, JoinOptions{Permissions: perms, AudioSlots: true}); err != nil {
			t.Fatal(err)
		}
		return m
	}
	ids := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	var room *Room
	mics := map[string]*micPublisher{}
	members := map[string]*slotReceiver{}
	for i, id := range ids {
		members[id] = join(id)
		room, _ = hub.Room("r")
		mics[id] = newMic(id, uint32(0x1000+i))
		room.Publish(members[id], mics[id].up)
	}
	listener := join("z") // receives only
	defer func() {
		for _, m := range members {
			hub.Leave(room, m)
		}
		hub.Leave(room, listener)
	}()
	if listener.slots != 3 || len(listener.downs) != 3 {
		t.Fatalf("the listener has %d slots and %d tracks, want 3 and 3 (no track per microphone)", listener.slots, len(listener.downs))
	}

	r := rand.New(rand.NewSource(1))
	talking := map[string]bool{"d": true, "e": true, "f": true}
	start := time.Now()
	run := func(d time.Duration) {
		for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			now := time.Now()
			word := now.Sub(start)%(650*time.Millisecond) < 400*time.Millisecond
			for _, id := range ids {
				level := uint8(70 + r.Intn(10))
				if talking[id] && word {
					level = uint8(15 + r.Intn(10))
				}
				mics[id].send(now, level)
			}
		}
	}
	sources := func(pkts []slotPacket) map[uint32]string {
		out := map[uint32]string{}
		for _, p := range pkts {
			if prev, ok := out[p.ssrc]; ok && prev != p.source {
				out[p.ssrc] = "mixed"
			} else {
				out[p.ssrc] = p.source
			}
		}
		return out
	}

	run(1500 * time.Millisecond)
	mark := time.Now()
	run(500 * time.Millisecond)
	before := sources(listener.log.since(mark))
	if got := slotSources(before); !slices.Equal(got, []string{"d", "e", "f"}) {
		t.Fatalf("talking d e f: the listener's slots carry %v (by SSRC %v), want d e f", got, before)
	}
	if got := sortedCopy(listener.slotIDs(t)); !slices.Equal(got, []string{"d", "e", "f"}) {
		t.Fatalf("audio-slots names %v, want d e f", got)
	}
	for _, id := range []string{"d", "e", "f"} {
		heard := sources(members[id].log.since(mark))
		if got := slotSources(heard); slices.Contains(got, id) || len(got) != 2 {
			t.Fatalf("%s hears %v, want the two other speakers", id, got)
		}
	}

	talking["f"], talking["g"] = false, true
	deadline := time.Now().Add(6 * time.Second)
	for {
		run(300 * time.Millisecond)
		if slices.Contains(listener.slotIDs(t), "g") || time.Now().After(deadline) {
			break
		}
	}
	mark = time.Now()
	run(500 * time.Millisecond)
	after := sources(listener.log.since(mark))
	if got := slotSources(after); !slices.Equal(got, []string{"d", "e", "g"}) {
		t.Fatalf("after f stopped and g started: %v (by SSRC %v), want d e g", got, after)
	}
	for ssrc, src := range before {
		if src == "f" && after[ssrc] != "g" {
			t.Fatalf("g is on SSRC %v, not f's slot %d: before %v, after %v", after, ssrc, before, after)
		}
	}
	// Each slot's stream is continuous over the whole run, the switch included.
	bySSRC := map[uint32][]slotPacket{}
	for _, p := range listener.log.since(start) {
		bySSRC[p.ssrc] = append(bySSRC[p.ssrc], p)
	}
	if len(bySSRC) != 3 {
		t.Fatalf("%d SSRCs, want 3", len(bySSRC))
	}
	for ssrc, pkts := range bySSRC {
		for i := 1; i < len(pkts); i++ {
			p, q := pkts[i-1], pkts[i]
			if q.seq != p.seq+1 || int32(q.ts-p.ts) <= 0 {
				t.Fatalf("SSRC %d packet %d: seq %d ts %d after seq %d ts %d (%s → %s)", ssrc, i, q.seq, q.ts, p.seq, p.ts, p.source, q.source)
			}
			if q.source != p.source && !q.marker {
				t.Fatalf("SSRC %d: the switch %s → %s is not marked", ssrc, p.source, q.source)
			}
		}
	}
	// Receivers without slots are untouched: one track per microphone.
	old := newFake("old")
	if _, _, err := hub.JoinWith("r", old, signal.Participant{ID: "old", Name: "old"}, JoinOptions{Permissions: perms}); err != nil {
		t.Fatal(err)
	}
	defer hub.Leave(room, old)
	audio := 0
	for d := range old.downs {
		if !d.IsSlot() && d.Kind() == webrtc.RTPCodecTypeAudio {
			audio++
		}
	}
	if audio != len(ids) {
		t.Fatalf("a receiver without slots got %d audio tracks, want %d", audio, len(ids))
	}
}

// slotSources lists the sources the slots carried, sorted.
func slotSources(by map[uint32]string) []string {
	var out []string
	for _, s := range by {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

func sortedCopy(ids []string) []string {
	out := slices.DeleteFunc(slices.Clone(ids), func(s string) bool { return s == "" })
	slices.Sort(out)
	return out
}

// The room's audioSlots setting: fewer speakers from the next decision (a
// session keeps its slots, some left empty), and 0 gives later joiners a
// track per microphone.
func TestAudioSlotsRoomSetting(t *testing.T) {
	hub := NewHub(Settings{LastN: -1, AudioSlots: 3})
	defer hub.Close()
	perms := signal.Permissions{Publish: true, Subscribe: true}
	listener := &slotReceiver{fakeMember: newFake("z"), log: &slotLog{}}
	r, _, err := hub.JoinWith("r", listener, signal.Participant{ID: "z", Name: "z"}, JoinOptions{Permissions: perms, AudioSlots: true})
	if err != nil {
		t.Fatal(err)
	}
	defer hub.Leave(r, listener)
	for i, id := range []string{"a", "b", "c"} {
		m := newFake(id)
		if _, _, err := hub.JoinWith("r", m, signal.Participant{ID: id, Name: id}, JoinOptions{Permissions: perms}); err != nil {
			t.Fatal(err)
		}
		defer hub.Leave(r, m)
		r.Publish(m, newMic(id, uint32(0x2000+i)).up)
	}
	if got := sortedCopy(listener.slotIDs(t)); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("three publishers, three slots: %v", got)
	}
	one := 1
	r.UpdateSettings(signal.RoomSettings{AudioSlots: &one})
	if got := listener.slotIDs(t); len(got) != 3 || len(sortedCopy(got)) != 1 {
		t.Fatalf("audioSlots 1: slots carry %q, want one speaker in the three slots", got)
	}
	if st, _ := r.Stats(time.Now()); st.AudioSlots != 1 {
		t.Fatalf("stats say audioSlots %d", st.AudioSlots)
	}
	zero := 0
	r.UpdateSettings(signal.RoomSettings{AudioSlots: &zero})
	late := &slotReceiver{fakeMember: newFake("y"), log: &slotLog{}}
	if _, _, err := hub.JoinWith("r", late, signal.Participant{ID: "y", Name: "y"}, JoinOptions{Permissions: perms, AudioSlots: true}); err != nil {
		t.Fatal(err)
	}
	defer hub.Leave(r, late)
	if late.slots != 0 || len(late.downs) != 3 {
		t.Fatalf("joined with audioSlots 0: %d slots, %d tracks; want none and one per microphone", late.slots, len(late.downs))
	}
	if got := listener.slotIDs(t); len(sortedCopy(got)) != 1 {
		t.Fatalf("audioSlots 0: the listener's slots carry %q, want still one speaker", got)
	}
}
