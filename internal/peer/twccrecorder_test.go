package peer

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/pion/interceptor/pkg/twcc"
	"github.com/pion/rtcp"
)

// arrival is one packet as the socket saw it: transport-wide number, µs.
type arrival struct {
	seq uint16
	at  int64
}

// decodeFeedback decodes feedback b with pion's rtcp package and returns
// each packet reported received with its arrival time (µs from the zero of
// the reference time), and the kinds of status chunk used.
func decodeFeedback(t testing.TB, b []byte) (got []arrival, runs, oneBit, twoBit int) {
	t.Helper()
	pkts, err := rtcp.Unmarshal(b)
	if err != nil {
		t.Fatalf("pion cannot decode our feedback % x: %v", b, err)
	}
	for _, p := range pkts {
		cc, ok := p.(*rtcp.TransportLayerCC)
		if !ok {
			t.Fatalf("decoded %T, want transport-wide feedback", p)
		}
		if n := cc.MarshalSize(); n > maxFeedbackSize {
			t.Fatalf("a feedback packet of %d bytes, want at most %d", n, maxFeedbackSize)
		}
		var syms []uint16
		for _, ch := range cc.PacketChunks {
			switch ch := ch.(type) {
			case *rtcp.RunLengthChunk:
				runs++
				for range ch.RunLength {
					syms = append(syms, ch.PacketStatusSymbol)
				}
			case *rtcp.StatusVectorChunk:
				if ch.SymbolSize == rtcp.TypeTCCSymbolSizeOneBit {
					oneBit++
				} else {
					twoBit++
				}
				syms = append(syms, ch.SymbolList...)
			}
		}
		at := int64(cc.ReferenceTime) * twccReferenceUS
		d := 0
		for i, s := range syms[:cc.PacketStatusCount] {
			if s == rtcp.TypeTCCPacketNotReceived {
				continue
			}
			at += cc.RecvDeltas[d].Delta
			d++
			got = append(got, arrival{seq: cc.BaseSequenceNumber + uint16(i), at: at}) //nolint:gosec // test
		}
	}
	return got, runs, oneBit, twoBit
}

// checkReported checks that every packet reported arrived then (to the
// 250 µs unit) and that every packet in want was reported.
func checkReported(t testing.TB, got, want []arrival) {
	t.Helper()
	first := map[uint16]int64{}
	for _, a := range want {
		if _, ok := first[a.seq]; !ok {
			first[a.seq] = a.at
		}
	}
	seen := map[uint16]bool{}
	for _, g := range got {
		at, ok := first[g.seq]
		if !ok {
			t.Fatalf("packet %d reported received, never was", g.seq)
		}
		if d := g.at - at; d < -twccDeltaUS/2 || d > twccDeltaUS/2 {
			t.Fatalf("packet %d reported at %d µs, arrived at %d", g.seq, g.at, at)
		}
		seen[g.seq] = true
	}
	for seq := range first {
		if !seen[seq] {
			t.Fatalf("packet %d arrived, never reported (got %v)", seq, got)
		}
	}
}

func seqRun(from uint16, n int, at, step int64) []arrival {
	var as []arrival
	for i := range n {
		as = append(as, arrival{seq: from + uint16(i), at: at + int64(i)*step}) //nolint:gosec // test
	}
	return as
}

func TestTWCCFeedbackDecodesToTheArrivals(t *testing.T) {
	cases := []struct {
		name     string
		arrivals []arrival
		packets  int // feedback packets
	}{
		{"one", []arrival{{7, 1_000}}, 1},
		{"a run of small deltas", seqRun(100, 40, 5_000, 1_000), 1},
		{"gaps", []arrival{{10, 0}, {11, 500}, {14, 900}, {20, 3_000}, {21, 3_100}}, 1},
		{"reordered: negative deltas", []arrival{{1, 10_000}, {3, 11_000}, {2, 11_200}, {5, 11_300}, {4, 11_400}}, 1},
		{"large deltas", []arrival{{1, 0}, {2, 70_000}, {3, 70_250}, {4, 400_000}}, 1},
		{"a delta beyond 16 bits starts a new feedback", []arrival{{1, 0}, {2, 1_000}, {3, 9_000_000}, {4, 9_001_000}}, 2},
		{"sequence wrap", seqRun(65530, 12, 100_000, 2_000), 1},
		{"a long loss: several runs", []arrival{{1, 0}, {10_000, 5_000}, {10_001, 5_500}}, 1},
		{"too many for one packet", alternate(seqRun(1, 3000, 0, 100)), 3},
	}
	var runs, oneBit, twoBit int
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newTWCCRecorder()
			for _, a := range c.arrivals {
				r.Record(0xABC, a.seq, a.at)
			}
			b := r.AppendFeedback(nil, 0x1234)
			got, rl, ob, tb := decodeFeedback(t, b)
			runs, oneBit, twoBit = runs+rl, oneBit+ob, twoBit+tb
			checkReported(t, got, c.arrivals)
			pkts, _ := rtcp.Unmarshal(b)
			if len(pkts) != c.packets {
				t.Errorf("%d feedback packets, want %d", len(pkts), c.packets)
			}
			for i, p := range pkts {
				cc := p.(*rtcp.TransportLayerCC)
				if cc.SenderSSRC != 0x1234 || cc.MediaSSRC != 0xABC || cc.FbPktCount != uint8(i) { //nolint:gosec // test
					t.Errorf("packet %d: sender %x media %x count %d", i, cc.SenderSSRC, cc.MediaSSRC, cc.FbPktCount)
				}
				if cc.MarshalSize() > maxFeedbackSize {
					t.Errorf("packet %d is %d bytes, over %d", i, cc.MarshalSize(), maxFeedbackSize)
				}
			}
			if more := r.AppendFeedback(nil, 0x1234); len(more) != 0 {
				t.Errorf("a second feedback with nothing new: % x", more)
			}
		})
	}
	if runs == 0 || oneBit == 0 || twoBit == 0 {
		t.Errorf("chunks used: %d runs, %d one-bit and %d two-bit vectors; want every kind", runs, oneBit, twoBit)
	}
}

// alternate drops every third packet.
func alternate(as []arrival) []arrival {
	var out []arrival
	for i, a := range as {
		if i%3 != 1 {
			out = append(out, a)
		}
	}
	return out
}

// trace is a random arrival trace: losses, reordering, duplicates, pauses,
// bursts and sequence wraps, in arrival order, with a feedback every 50 ms
// (build[i]: build after arrivals[i]).
func trace(rng *rand.Rand, n int) (as []arrival, build []bool) {
	seq := uint16(rng.IntN(1 << 16))
	at := int64(rng.IntN(1 << 20))
	next := at + 50_000
	for range n {
		switch k := rng.IntN(100); {
		case k < 8:
			seq += uint16(2 + rng.IntN(5)) //nolint:gosec // a loss
		case k < 10:
			seq -= uint16(1 + rng.IntN(4)) //nolint:gosec // a late packet
		case k < 11: // a duplicate
		default:
			seq++
		}
		switch k := rng.IntN(200); {
		case k < 2:
			at += int64(rng.IntN(10_000_000)) // a pause, maybe beyond 16-bit deltas
		case k < 60:
			// a burst: same time
		default:
			at += int64(rng.IntN(8_000))
		}
		as = append(as, arrival{seq: seq, at: at})
		b := at >= next
		if b {
			next = at + 50_000
		}
		build = append(build, b)
	}
	return as, build
}

// TestTWCCRecorderMatchesPion: on random traces our feedback is pion's
// Recorder's, byte for byte, and decodes to the arrivals.
func TestTWCCRecorderMatchesPion(t *testing.T) {
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 19))
		as, build := trace(rng, 3000)
		if !matchPion(t, as, build) {
			t.Fatalf("seed %d: pion's feedback outgrew %d bytes", seed, maxFeedbackSize)
		}
	}
}

// matchPion compares our feedback with pion's after each build of the
// trace, until pion's outgrows maxFeedbackSize (then it reports false).
func matchPion(t *testing.T, as []arrival, build []bool) bool {
	t.Helper()
	ours, theirs := newTWCCRecorder(), twcc.NewRecorder(0x5eed)
	var buf []byte
	for i, a := range as {
		ours.Record(0xA, a.seq, a.at)
		theirs.Record(0xA, a.seq, a.at)
		if !build[i] && i != len(as)-1 {
			continue
		}
		buf = ours.AppendFeedback(buf[:0], 0x5eed)
		pkts := theirs.BuildFeedbackPacket()
		for _, p := range pkts {
			// Ours ends a packet up to feedbackSlack bytes before
			// maxFeedbackSize, where pion's goes on.
			if p.MarshalSize() > maxFeedbackSize-feedbackSlack {
				return false
			}
		}
		want, err := rtcp.Marshal(pkts)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf, want) {
			t.Fatalf("after arrival %d (%+v):\nours  % x\npion's % x", i, a, buf, want)
		}
	}
	return true
}

// TestTWCCFeedbackDoesNotAllocate: recording and building feedback into a
// reused buffer allocate nothing once the arrival ring has its size.
func TestTWCCFeedbackDoesNotAllocate(t *testing.T) {
	r := newTWCCRecorder()
	buf := make([]byte, 0, 1500)
	seq, at := uint16(65000), int64(0)
	round := func() { // 50 ms of a 2.5 Mb/s video with some losses and reordering
		for i := range 25 {
			seq++
			if i%11 == 3 {
				seq++
			}
			at += 2_000
			r.Record(0xA, seq, at)
			if i%13 == 5 {
				r.Record(0xA, seq-3, at+100)
			}
		}
		buf = r.AppendFeedback(buf[:0], 1)
	}
	for range 100 {
		round()
	}
	if allocs := testing.AllocsPerRun(200, round); allocs != 0 {
		t.Errorf("%v allocations per feedback, want 0", allocs)
	}
	if len(buf) == 0 {
		t.Fatal("no feedback built")
	}
}

// FuzzTWCCFeedback: any arrival set encodes to feedback that pion decodes to
// those arrivals, and to pion's own bytes while they fit one packet.
func FuzzTWCCFeedback(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8})
	f.Add([]byte{0xff, 0xff, 0, 0, 0x80, 0, 0xff, 0xff, 0xff, 0xff, 1, 1})
	f.Add(bytes.Repeat([]byte{1, 0x10, 0, 3, 0x80, 0x40}, 40))
	f.Fuzz(func(t *testing.T, b []byte) {
		// Each 3 bytes: a sequence step (signed), a time step in 250 µs
		// units (its top bit: ×64), and whether to build feedback after it.
		var as []arrival
		var build []bool
		seq, at := uint16(65500), int64(0)
		for ; len(b) >= 3; b = b[3:] {
			seq += uint16(int8(b[0])) //nolint:gosec // test
			step := int64(b[1] & 0x7f)
			if b[1]&0x80 != 0 {
				step *= 64 * 64
			}
			at += step * twccDeltaUS
			as = append(as, arrival{seq: seq, at: at})
			build = append(build, b[2]&1 == 1)
		}
		if len(as) == 0 {
			return
		}
		// Decoded, every report is an arrival of that packet.
		r := newTWCCRecorder()
		var got []arrival
		for i, a := range as {
			r.Record(0xA, a.seq, a.at)
			if build[i] || i == len(as)-1 {
				g, _, _, _ := decodeFeedback(t, r.AppendFeedback(nil, 1))
				got = append(got, g...)
			}
		}
		// (Any arrival of its number: far enough from the last, a number
		// unwraps to a new packet, as in pion.)
		arrived := map[uint16][]int64{}
		for _, a := range as {
			arrived[a.seq] = append(arrived[a.seq], a.at)
		}
		for _, g := range got {
			if !slices.ContainsFunc(arrived[g.seq], func(at int64) bool { return g.at-at >= -twccDeltaUS/2 && g.at-at <= twccDeltaUS/2 }) {
				t.Fatalf("packet %d reported at %d µs; it arrived at %v", g.seq, g.at, arrived[g.seq])
			}
		}
		matchPion(t, as, build)
	})
}
