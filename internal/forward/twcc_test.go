package forward

import (
	"math/rand"
	"slices"
	"testing"

	"github.com/pion/interceptor/pkg/twcc"
	"github.com/pion/rtcp"

	"github.com/podium-sfu/podium/internal/algo/bwe"
)

// viaPion decodes b as the server did before: pion's rtcp decoder, then
// bwe.FromTransportCC.
func viaPion(b []byte) (bwe.Feedback, error) {
	var p rtcp.TransportLayerCC
	var fb bwe.Feedback
	if err := p.Unmarshal(b); err != nil {
		return fb, err
	}
	return fb, bwe.FromTransportCC(&fb, &p)
}

// feedbacks builds real feedback packets with pion's recorder (run-length and
// both vector kinds, small and large deltas, losses) from seeded arrivals.
func feedbacks(t testing.TB, seed int64) [][]byte {
	t.Helper()
	rng := rand.New(rand.NewSource(seed))
	rec := twcc.NewRecorder(1)
	var out [][]byte
	at := int64(1_000_000)
	seq := uint16(rng.Intn(65536))
	for range 20 {
		for range 1 + rng.Intn(120) {
			seq++
			if rng.Intn(10) == 0 { // lost
				continue
			}
			switch rng.Intn(4) {
			case 0:
				at += int64(rng.Intn(70_000)) // large delta
			default:
				at += int64(rng.Intn(1_000))
			}
			rec.Record(2, seq, at)
		}
		for _, p := range rec.BuildFeedbackPacket() {
			if _, ok := p.(*rtcp.TransportLayerCC); !ok {
				continue
			}
			b, err := p.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, b)
		}
	}
	return out
}

func TestParseTransportCCMatchesPion(t *testing.T) {
	var fb bwe.Feedback
	n := 0
	for seed := range int64(30) {
		for _, b := range feedbacks(t, seed) {
			want, err := viaPion(b)
			if err != nil {
				t.Fatalf("pion rejects its own feedback: %v", err)
			}
			if err := parseTransportCC(b, &fb); err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			if fb.BaseSeq != want.BaseSeq || !slices.Equal(fb.Packets, want.Packets) {
				t.Fatalf("seed %d: decoded %d packets from %d, pion %d from %d", seed, len(fb.Packets), fb.BaseSeq, len(want.Packets), want.BaseSeq)
			}
			n++
		}
	}
	if n < 100 {
		t.Fatalf("only %d feedbacks compared", n)
	}
}

func TestParseTransportCCDoesNotAllocate(t *testing.T) {
	pkts := feedbacks(t, 1)
	var fb bwe.Feedback
	for _, b := range pkts {
		_ = parseTransportCC(b, &fb) // grow Packets once
	}
	i := 0
	allocs := testing.AllocsPerRun(500, func() {
		if err := parseTransportCC(pkts[i%len(pkts)], &fb); err != nil {
			t.Fatal(err)
		}
		i++
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per feedback", allocs)
	}
}

// FuzzParseTransportCC: on any bytes, the in-place decoder accepts exactly
// what pion's decoder and bwe.FromTransportCC accept, with the same result.
func FuzzParseTransportCC(f *testing.F) {
	for _, b := range feedbacks(f, 7)[:8] {
		f.Add(b)
	}
	f.Add([]byte{0x8f, 0xcd, 0x00, 0x04, 0, 0, 0, 1, 0, 0, 0, 2, 0, 1, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		var fb bwe.Feedback
		err := parseTransportCC(b, &fb)
		want, werr := viaPion(b)
		if (err == nil) != (werr == nil) {
			t.Fatalf("in place: %v; pion: %v", err, werr)
		}
		if err == nil && (fb.BaseSeq != want.BaseSeq || !slices.Equal(fb.Packets, want.Packets)) {
			t.Fatalf("decoded %+v, pion %+v", fb, want)
		}
	})
}
