package peer

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"
)

const testExtID = 5

// t0 is the zero of the tests' feedback recorders.
var t0 = time.Unix(1000, 0)

// oneConnection is arrivals with one connection's recorder, its streams ssrcs
// registered.
func oneConnection(ssrcs ...uint32) (*arrivals, *feedbackRecorder) {
	a := newArrivals()
	fb := newFeedbackRecorder(t0)
	for _, ssrc := range ssrcs {
		a.add(ssrc, arrivalStream{extID: testExtID, fb: fb})
	}
	return a, fb
}

// rtpWithTransportSeq is an RTP packet of ssrc carrying transport-wide seq.
func rtpWithTransportSeq(t testing.TB, ssrc uint32, rtpSeq, seq uint16) []byte {
	t.Helper()
	p := rtp.Packet{Header: rtp.Header{Version: 2, PayloadType: 96, SequenceNumber: rtpSeq, SSRC: ssrc}, Payload: []byte{1, 2, 3}}
	ext := make([]byte, 2)
	binary.BigEndian.PutUint16(ext, seq)
	if err := p.SetExtension(testExtID, ext); err != nil {
		t.Fatal(err)
	}
	b, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// feedbackPackets builds fb's feedback at now, decoded by pion.
func feedbackPackets(t testing.TB, fb *feedbackRecorder, now time.Time) []rtcp.Packet {
	t.Helper()
	b := fb.build(now, nil, 1)
	if len(b) == 0 {
		return nil
	}
	pkts, err := rtcp.Unmarshal(b)
	if err != nil {
		t.Fatalf("feedback % x: %v", b, err)
	}
	return pkts
}

// received lists, in transport-wide order, whether each packet a feedback
// covers was received and its receive delta (µs).
func received(t *testing.T, pkts []rtcp.Packet) (base uint16, got []bool, deltas []int64) {
	t.Helper()
	if len(pkts) != 1 {
		t.Fatalf("%d feedback packets, want 1", len(pkts))
	}
	fb, ok := pkts[0].(*rtcp.TransportLayerCC)
	if !ok {
		t.Fatalf("feedback is %T", pkts[0])
	}
	for _, ch := range fb.PacketChunks {
		switch ch := ch.(type) {
		case *rtcp.RunLengthChunk:
			for range ch.RunLength {
				got = append(got, ch.PacketStatusSymbol != rtcp.TypeTCCPacketNotReceived)
			}
		case *rtcp.StatusVectorChunk:
			for _, s := range ch.SymbolList {
				got = append(got, s != rtcp.TypeTCCPacketNotReceived)
			}
		}
	}
	for _, d := range fb.RecvDeltas {
		deltas = append(deltas, d.Delta)
	}
	return fb.BaseSequenceNumber, got[:fb.PacketStatusCount], deltas
}

// Two streams of one connection, read by their own goroutines: their packets
// count in arrival order with socket times once their readers got them
// through authentication, so a packet its reader gets late is neither
// reported lost nor late.
func TestFeedbackFollowsTheSocketNotTheReaders(t *testing.T) {
	a, fb := oneConnection(0xA, 0xB)

	a.Observe(rtpWithTransportSeq(t, 0xA, 100, 1), t0.Add(10*time.Millisecond))
	a.Observe(rtpWithTransportSeq(t, 0xB, 500, 2), t0.Add(11*time.Millisecond))
	a.Observe(rtpWithTransportSeq(t, 0xA, 101, 3), t0.Add(12*time.Millisecond))
	// B's reader gets its packet at once; A's reader is 40 ms late, after a feedback.
	fb.authenticated(0xB, 2, t0.Add(11*time.Millisecond))
	if pkts := feedbackPackets(t, fb, t0.Add(12*time.Millisecond)); len(pkts) != 0 {
		t.Errorf("a feedback before A's reader caught up: %v", pkts)
	}
	fb.authenticated(0xA, 1, t0.Add(50*time.Millisecond))
	fb.authenticated(0xA, 3, t0.Add(51*time.Millisecond))
	base, got, deltas := received(t, feedbackPackets(t, fb, t0.Add(52*time.Millisecond)))

	if base != 1 || len(got) != 3 || !got[0] || !got[1] || !got[2] {
		t.Errorf("feedback from %d: received %v, want 1, 2 and 3 all received", base, got)
	}
	// Deltas in µs (250 µs resolution): the first from the reference time,
	// then 1 ms apart as they reached the socket.
	if len(deltas) != 3 || deltas[1] != 1000 || deltas[2] != 1000 {
		t.Errorf("receive deltas %v µs, want 1000 µs apart", deltas)
	}
}

// A packet the data plane authenticated at the socket counts at its arrival
// time, at once when nothing waits ahead of it, and else behind a stamp of
// pion's path still waiting for its reader, in arrival order.
func TestDataPlanePacketsCountInArrivalOrder(t *testing.T) {
	a, fb := oneConnection(0xA, 0xB)
	a.record(rtpWithTransportSeq(t, 0xA, 100, 1), t0.Add(10*time.Millisecond), t0.Add(10*time.Millisecond))
	base, got, _ := received(t, feedbackPackets(t, fb, t0.Add(10*time.Millisecond)))
	if base != 1 || len(got) != 1 || !got[0] {
		t.Fatalf("feedback from %d: received %v, want packet 1 at once", base, got)
	}
	a.Observe(rtpWithTransportSeq(t, 0xB, 500, 2), t0.Add(11*time.Millisecond)) // pion's path: its reader confirms it
	a.record(rtpWithTransportSeq(t, 0xA, 101, 3), t0.Add(12*time.Millisecond), t0.Add(12*time.Millisecond))
	if pkts := feedbackPackets(t, fb, t0.Add(13*time.Millisecond)); len(pkts) != 0 {
		t.Fatalf("packet 3 reported ahead of 2, which waits for its reader: %v", pkts)
	}
	fb.authenticated(0xB, 2, t0.Add(30*time.Millisecond))
	base, got, deltas := received(t, feedbackPackets(t, fb, t0.Add(31*time.Millisecond)))
	if base != 2 || len(got) != 2 || !got[0] || !got[1] || deltas[1] != 1000 {
		t.Errorf("feedback from %d: received %v, deltas %v µs, want 2 and 3, 1 ms apart as they arrived", base, got, deltas)
	}
}

// A forged packet with a publisher's SSRC and the transport-wide number of
// one of its packets that was lost (from any address: the socket cannot
// tell) fails SRTP authentication, never reaches the stream's reader, and
// leaves the loss in the feedback.
func TestForgedArrivalDoesNotHideLoss(t *testing.T) {
	a, fb := oneConnection(0xA)
	a.Observe(rtpWithTransportSeq(t, 0xA, 100, 1), t0)
	a.Observe(rtpWithTransportSeq(t, 0xA, 777, 2), t0.Add(5*time.Millisecond)) // forged; the real 2 was lost
	a.Observe(rtpWithTransportSeq(t, 0xA, 102, 3), t0.Add(10*time.Millisecond))
	fb.authenticated(0xA, 1, t0.Add(11*time.Millisecond))
	fb.authenticated(0xA, 3, t0.Add(12*time.Millisecond))
	base, got, _ := received(t, feedbackPackets(t, fb, t0.Add(13*time.Millisecond)))
	if base != 1 || len(got) != 3 || !got[0] || got[1] || !got[2] {
		t.Errorf("feedback from %d: received %v, want 1 and 3 received and 2 lost", base, got)
	}
}

// A forgery of a packet that does arrive, sent ahead of it, does not lend
// it its time; one of a stream that sends nothing after it holds the other
// streams' packets back no longer than authWait.
func TestForgedArrivalsNeitherTimeNorStall(t *testing.T) {
	a, fb := oneConnection(0xA, 0xB)
	a.Observe(rtpWithTransportSeq(t, 0xA, 1, 1), t0)
	a.Observe(rtpWithTransportSeq(t, 0xA, 9, 2), t0.Add(time.Millisecond)) // forged copy of 2, early
	a.Observe(rtpWithTransportSeq(t, 0xA, 2, 2), t0.Add(8*time.Millisecond))
	fb.authenticated(0xA, 1, t0.Add(9*time.Millisecond))
	fb.authenticated(0xA, 2, t0.Add(9*time.Millisecond))
	if _, got, deltas := received(t, feedbackPackets(t, fb, t0.Add(10*time.Millisecond))); len(got) != 2 || deltas[1] != 8000 {
		t.Errorf("received %v with deltas %v µs, want 1 and 2 received 8 ms apart", got, deltas)
	}

	a.Observe(rtpWithTransportSeq(t, 0xB, 50, 3), t0.Add(20*time.Millisecond)) // forged; B sends nothing more
	a.Observe(rtpWithTransportSeq(t, 0xA, 3, 4), t0.Add(21*time.Millisecond))
	fb.authenticated(0xA, 4, t0.Add(22*time.Millisecond))
	if pkts := feedbackPackets(t, fb, t0.Add(22*time.Millisecond)); len(pkts) != 0 {
		t.Errorf("4 reported while 3 might still be authenticated: %v", pkts)
	}
	base, got, _ := received(t, feedbackPackets(t, fb, t0.Add(20*time.Millisecond+authWait)))
	if base != 3 || len(got) != 2 || got[0] || !got[1] {
		t.Errorf("after authWait: feedback from %d: %v, want 3 lost and 4 received", base, got)
	}
}

// A bandwidth probe is a padding-only packet; under SRTP its padding count is
// encrypted and its last byte belongs to the authentication tag. It counts.
func TestArrivalsRecordSRTPProtectedProbes(t *testing.T) {
	a, fb := oneConnection(0xA)
	probe := rtpWithTransportSeq(t, 0xA, 1, 9)
	probe[0] |= 0x20                                             // P: padding
	probe = append(probe, 0x13, 0x37, 0, 0, 0, 0, 0, 0, 0, 0xff) // a tag ending in 255
	a.Observe(probe, t0)
	fb.authenticated(0xA, 9, t0)
	if base, got, _ := received(t, feedbackPackets(t, fb, t0)); base != 9 || len(got) != 1 || !got[0] {
		t.Errorf("feedback from %d: %v, want the probe received", base, got)
	}
}

// Media the socket does not see (ICE-TCP) is recorded by its reader.
func TestFeedbackFromTheReaderWithoutTheSocket(t *testing.T) {
	_, fb := oneConnection() // no stream the socket would record
	fb.authenticated(0xA, 7, t0.Add(time.Millisecond))
	fb.authenticated(0xA, 8, t0.Add(3*time.Millisecond))
	base, got, deltas := received(t, feedbackPackets(t, fb, t0.Add(3*time.Millisecond)))
	if base != 7 || len(got) != 2 || !got[0] || !got[1] || deltas[1] != 2000 {
		t.Errorf("feedback from %d: received %v, deltas %v; want 7 and 8, 2 ms apart", base, got, deltas)
	}
}

// What is not an RTP packet of a registered stream with the extension is
// not stamped: RTCP, other SSRCs, packets without it, a removed stream, garbage.
func TestArrivalsIgnoreOtherDatagrams(t *testing.T) {
	a, fb := oneConnection(0xA)

	rr, err := (&rtcp.ReceiverReport{SSRC: 0xA}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	plain, err := (&rtp.Packet{Header: rtp.Header{Version: 2, PayloadType: 96, SSRC: 0xA}, Payload: []byte{1}}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range [][]byte{rr, plain, rtpWithTransportSeq(t, 0xB, 1, 1), {0x80, 96, 0, 1}, {0x16, 0xfe, 0xfd}, nil} {
		a.Observe(b, t0)
	}
	a.remove(0xA, newFeedbackRecorder(t0)) // another connection's: kept
	a.Observe(rtpWithTransportSeq(t, 0xA, 1, 40), t0)
	a.remove(0xA, fb)
	a.Observe(rtpWithTransportSeq(t, 0xA, 2, 41), t0)
	fb.mu.Lock()
	n := fb.n
	fb.mu.Unlock()
	if n != 1 {
		t.Errorf("%d socket stamps, want only 40's", n)
	}
}

// The socket reader's per-datagram work does not allocate in steady state.
func TestObserveDoesNotAllocate(t *testing.T) {
	a, _ := oneConnection(0xA)
	b := rtpWithTransportSeq(t, 0xA, 1, 1)
	seq := uint16(1)
	fb := (*a.streams.Load())[0xA].fb
	observe := func() {
		seq++
		binary.BigEndian.PutUint16(b[len(b)-3-4+1:], seq) // the extension's value
		at := t0.Add(time.Duration(seq) * time.Millisecond)
		a.Observe(b, at)
		fb.authenticated(0xA, seq, at)
	}
	for range 2000 { // the recorder's arrival map grows to its size
		observe()
	}
	if allocs := testing.AllocsPerRun(1000, observe); allocs > 0.01 {
		t.Errorf("%.2f allocations per datagram, want 0", allocs)
	}
}

func FuzzArrivalsObserve(f *testing.F) {
	f.Add(rtpWithTransportSeq(f, 0xA, 1, 1))
	f.Add([]byte{0x90, 96, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0xA, 0xbe, 0xde, 0, 1, 0x51, 0, 1, 0})
	f.Add([]byte{0x80, 200, 0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		a := newArrivals()
		fb := newFeedbackRecorder(time.Unix(1000, 0))
		if len(b) >= 12 {
			a.add(binary.BigEndian.Uint32(b[8:]), arrivalStream{extID: testExtID, fb: fb})
		}
		a.Observe(b, time.Unix(1000, 0))
		_ = feedbackPackets(t, fb, time.Unix(1000, 0).Add(authWait))
	})
}
