package load

import (
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"
)

type rtpCapture struct{ pkts []rtp.Packet }

func (w *rtpCapture) WriteRTP(h *rtp.Header, payload []byte) (int, error) {
	p := rtp.Packet{Header: *h, Payload: slices.Clone(payload)}
	p.Header.Extensions = nil
	for _, id := range h.GetExtensionIDs() {
		_ = p.Header.SetExtension(id, slices.Clone(h.GetExtension(id)))
	}
	w.pkts = append(w.pkts, p)
	return len(payload), nil
}

func (w *rtpCapture) Write(b []byte) (int, error) { return len(b), nil }

// connFixture is a simulcast publisher's connection with bound tracks: SSRCs
// 100+i, RTX 200+i, payload types 96/97, audio 111 on SSRC 50.
type connFixture struct {
	src  *source
	snd  *sender
	conn *pubConn
	w    *rtpCapture
}

func newConnFixture(t *testing.T) *connFixture {
	t.Helper()
	cfg, err := ParticipantSpec{Audio: true, Video: VideoSimulcast}.sourceConfig(false)
	if err != nil {
		t.Fatal(err)
	}
	f := &connFixture{src: newSource(cfg, t0, rand.New(rand.NewPCG(3, 4))), w: &rtpCapture{}}
	f.snd = &sender{src: f.src, events: make(chan func(*source), 64), done: make(chan struct{})}
	f.conn = newPubConn(f.snd, "me")
	f.conn.audio.binding.Store(&trackBinding{ssrc: 50, pt: 111, writer: f.w})
	for i, tr := range f.conn.video {
		tr.binding.Store(&trackBinding{ssrc: uint32(100 + i), rtxSSRC: uint32(200 + i), pt: 96, rtxPT: 97, writer: f.w})
	}
	f.conn.ext = extIDs{mid: 1, rid: 2, rrid: 3, level: 4, audioMid: "0", videoMid: "1"}
	f.src.bind(f.conn)
	return f
}

// drain runs what the RTCP handlers posted to the sender loop.
func (f *connFixture) drain() {
	for len(f.snd.events) > 0 {
		(<-f.snd.events)(f.src)
	}
}

func TestRTCPKeyframeRequestsAndNACKsReachTheSource(t *testing.T) {
	f := newConnFixture(t)
	f.src.tick(t0) // one frame per encoding, audio
	f.src.tick(t0.Add(40 * time.Millisecond))
	f.src.video[2].forceKey = false
	// A PLI for f, a FIR for q, and a PLI for someone else's SSRC.
	f.conn.handleRTCP(2, []rtcp.Packet{&rtcp.PictureLossIndication{MediaSSRC: 102}, &rtcp.PictureLossIndication{MediaSSRC: 999}})
	f.conn.handleRTCP(0, []rtcp.Packet{&rtcp.FullIntraRequest{FIR: []rtcp.FIREntry{{SSRC: 100}}}})
	f.drain()
	if !f.src.video[2].forceKey || !f.src.video[0].forceKey || f.src.video[1].forceKey {
		t.Errorf("keyframe pending per encoding: %v %v %v, want true false true",
			f.src.video[0].forceKey, f.src.video[1].forceKey, f.src.video[2].forceKey)
	}
	if got := f.src.stats.KeyframeRequests.Load(); got != 2 {
		t.Errorf("%d keyframe requests counted, want 2", got)
	}
	// A NACK for h's first packet comes back as RTX on h's repair stream.
	var first rtp.Packet
	for _, p := range f.w.pkts {
		if p.SSRC == 101 {
			first = p
			break
		}
	}
	n := len(f.w.pkts)
	f.conn.handleRTCP(1, []rtcp.Packet{&rtcp.TransportLayerNack{MediaSSRC: 101, Nacks: rtcp.NackPairsFromSequenceNumbers([]uint16{first.SequenceNumber})}})
	f.drain()
	if len(f.w.pkts) != n+1 {
		t.Fatalf("%d packets after a NACK, want one retransmission", len(f.w.pkts)-n)
	}
	rtx := f.w.pkts[n]
	if rtx.SSRC != 201 || rtx.PayloadType != 97 {
		t.Errorf("retransmission on SSRC %d PT %d, want RTX 201/97", rtx.SSRC, rtx.PayloadType)
	}
	if osn := binary.BigEndian.Uint16(rtx.Payload); osn != first.SequenceNumber || !slices.Equal(rtx.Payload[2:], first.Payload) || rtx.Timestamp != first.Timestamp {
		t.Errorf("RTX payload: OSN %d, want %d, and the original payload and timestamp", osn, first.SequenceNumber)
	}
	if string(rtx.GetExtension(3)) != "h" || rtx.GetExtension(2) != nil {
		t.Errorf("RTX carries rrid %q and rid %q, want rrid h only", rtx.GetExtension(3), rtx.GetExtension(2))
	}
}

func TestMidAndRIDUntilTheSFUReports(t *testing.T) {
	f := newConnFixture(t)
	f.src.tick(t0)
	for _, p := range f.w.pkts {
		switch {
		case p.SSRC == 50:
			if p.GetExtension(4) == nil || p.GetExtension(2) != nil {
				t.Errorf("audio: level %v rid %v; want a level and no rid", p.GetExtension(4), p.GetExtension(2))
			}
		default:
			rid := SimulcastRIDs[p.SSRC-100]
			if string(p.GetExtension(1)) != "1" || string(p.GetExtension(2)) != rid {
				t.Errorf("SSRC %d: mid %q rid %q, want 1 and %s", p.SSRC, p.GetExtension(1), p.GetExtension(2), rid)
			}
		}
	}
	// The SFU's receiver report on h: h drops mid and rid; the others keep them.
	f.conn.handleRTCP(1, []rtcp.Packet{&rtcp.ReceiverReport{Reports: []rtcp.ReceptionReport{{SSRC: 101}}}})
	n := len(f.w.pkts)
	f.src.tick(t0.Add(40 * time.Millisecond))
	for _, p := range f.w.pkts[n:] {
		acked := p.SSRC == 101
		if has := p.GetExtension(2) != nil; has == acked && p.SSRC != 50 {
			t.Errorf("SSRC %d: rid present %v after a report on 101", p.SSRC, has)
		}
	}
}

func TestSequenceAccounting(t *testing.T) {
	var tr rxTrack
	feed := func(seqs ...uint16) {
		for _, s := range seqs {
			tr.seq(s)
		}
	}
	feed(65530, 65531, 65533, 65534, 65535, 0, 1) // 65532 lost, across the wrap
	if tr.expected.Load() != 8 || tr.received.Load() != 7 {
		t.Fatalf("expected %d received %d, want 8 and 7", tr.expected.Load(), tr.received.Load())
	}
	feed(65532) // late (a retransmission): loss repaired
	if tr.expected.Load() != 8 || tr.received.Load() != 8 {
		t.Fatalf("after the late packet: expected %d received %d", tr.expected.Load(), tr.received.Load())
	}
	feed(30000, 30001) // a new numbering is not loss
	if lost := tr.expected.Load() - tr.received.Load(); lost != 0 {
		t.Errorf("a sequence jump counted %d lost", lost)
	}
}
