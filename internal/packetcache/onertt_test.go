package packetcache

import (
	"math/rand"
	"testing"
	"time"
)

// The one-RTT rule at a 600 ms round trip (300 ms each way, as issue 22's
// delay tests): 2 % of 2000 packets are lost and the receiver NACKs each
// missing packet again every 20 ms (pion's generator interval; a browser
// repeats less often) until the retransmission arrives a round trip after it
// was sent. The cache answers at most once per RTT, so retransmissions stay
// within 1.5× the packets lost (here: once each), where answering every NACK
// would resend each about 30 times.
func TestOneRTTRuleAt600ms(t *testing.T) {
	const (
		rtt     = 600 * time.Millisecond
		packets = 2000
		spacing = 5 * time.Millisecond // 200 packets/s
		repeat  = 20 * time.Millisecond
	)
	c, err := New(4096, DefaultSlotSize)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(22))
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	type miss struct {
		seq      uint16
		nackFrom time.Time // the receiver sees the gap half a round trip after the send
		repaired time.Time // zero until a retransmission is on its way
	}
	var missing []miss
	buf := make([]byte, 1200)
	dst := make([]byte, DefaultSlotSize)
	lost, resent, nacks := 0, 0, 0
	end := base.Add(packets*spacing + 3*rtt)
	next := 0
	for now := base; now.Before(end); now = now.Add(repeat / 4) {
		for next < packets && !base.Add(time.Duration(next)*spacing).After(now) {
			sent := base.Add(time.Duration(next) * spacing)
			if err := c.Store(uint16(next), buf, sent); err != nil {
				t.Fatal(err)
			}
			if rng.Float64() < 0.02 {
				lost++
				missing = append(missing, miss{seq: uint16(next), nackFrom: sent.Add(rtt / 2)})
			}
			next++
		}
		if now.Sub(base)%repeat != 0 {
			continue
		}
		kept := missing[:0]
		for _, m := range missing {
			if !m.repaired.IsZero() && now.Sub(m.repaired) >= rtt/2 {
				continue // the retransmission arrived: no more NACKs
			}
			if !now.Before(m.nackFrom) {
				nacks++
				if _, ok := c.Resend(m.seq, dst, now, rtt, 4*rtt); ok {
					resent++
					if m.repaired.IsZero() {
						m.repaired = now
					}
				}
			}
			kept = append(kept, m)
		}
		missing = kept
	}
	t.Logf("RTT %v: %d of %d packets lost, %d NACKs, %d retransmissions", rtt, lost, packets, nacks, resent)
	if lost == 0 || nacks < 10*lost {
		t.Fatalf("%d lost, %d NACKs: the trace does not repeat NACKs", lost, nacks)
	}
	if float64(resent) > 1.5*float64(lost) {
		t.Errorf("%d retransmissions for %d lost packets, want at most 1.5×", resent, lost)
	}
	if resent < lost {
		t.Errorf("%d retransmissions for %d lost packets: every loss must be answered once", resent, lost)
	}
}
