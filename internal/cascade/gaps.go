package cascade

import (
	"sync/atomic"
	"time"

	"github.com/podium-sfu/podium/internal/relay"
)

// The subscriber's half of repair on the relay hop: which packets of a
// relayed stream are missing, and when to ask its origin for them. Audio and
// video alike: a relayed stream's sequence numbers are continuous (Opus DTX
// sends fewer packets, not fewer numbers; the origin renumbers around the
// silence it does not relay), so every gap is loss.

// nackSpan is the largest gap NACKed: a longer one is an outage or the
// stream's start, which keyframes repair (audio: lost).
const nackSpan = 128

// NACK retries: a packet still missing 1.25 round trips (at least
// minRetry) after its NACK is asked for again, up to nackTries times in all,
// while it is within missSlots-nackSpan of the newest. Five tries: at 2 %
// loss each way a try fails 4 % of the time, and three tries left about one
// of 60,000 packets unrepaired at the origin's 30 participants (a packet
// each run).
const (
	missSlots = 512
	nackTries = 5
	minRetry  = 20 * time.Millisecond
)

type miss struct {
	seq    uint16
	active bool
	tries  uint8
	at     int64 // unix nanos of the latest NACK
}

// Repair counts the subscriber's repair of one kind of relayed media, in
// sequence numbers: what the relay hop lost, and what became of it.
type Repair struct {
	Lost     uint64 // found missing and NACKed
	Repaired uint64 // of those, arrived later
	GaveUp   uint64 // still missing after nackTries NACKs
	Aged     uint64 // still missing when missSlots-nackSpan behind the newest
	Ended    uint64 // still missing when the track ended
	Outage   uint64 // in gaps longer than nackSpan: not NACKed
}

// repairCounters are Repair's atomics, shared by a kind's tracks.
type repairCounters struct {
	lost, repaired, gaveUp, aged, ended, outage atomic.Uint64
}

func (c *repairCounters) load() Repair {
	return Repair{Lost: c.lost.Load(), Repaired: c.repaired.Load(), GaveUp: c.gaveUp.Load(),
		Aged: c.aged.Load(), Ended: c.ended.Load(), Outage: c.outage.Load()}
}

// gapDetector finds the missing packets of one relayed stream and says
// which to NACK when. Time is an argument; one goroutine owns it (the
// track's reader), and nothing here allocates after the first NACK.
type gapDetector struct {
	counts  *repairCounters
	started bool
	highest uint16
	missing [missSlots]miss
	active  int   // entries of missing that are active
	due     int64 // unix nanos of the earliest retry (0: none)
	pairs   []relay.NACKPair
}

// received notes packet seq's arrival at now and adds the packets missing
// before it to the NACK being built (Pairs).
func (g *gapDetector) received(now time.Time, seq uint16, rtt time.Duration) {
	if m := &g.missing[seq%missSlots]; m.active && m.seq == seq {
		m.active = false
		g.active--
		g.counts.repaired.Add(1)
	}
	if !g.started {
		g.started, g.highest = true, seq
		return
	}
	d := int16(seq - g.highest)
	if d <= 0 {
		return
	}
	if d > nackSpan {
		g.counts.outage.Add(uint64(d - 1))
	} else if d > 1 {
		for s := g.highest + 1; s != seq; s++ {
			g.forget(&g.missing[s%missSlots], &g.counts.aged)
			g.missing[s%missSlots] = miss{seq: s, active: true, tries: 1, at: now.UnixNano()}
			g.active++
			g.addLost(s)
		}
		g.counts.lost.Add(uint64(d - 1))
		if next := now.UnixNano() + int64(retryAfter(rtt)); g.due == 0 || next < g.due {
			g.due = next
		}
	}
	g.highest = seq
}

// retryAfter is how long a NACK is given before it is sent again.
func retryAfter(rtt time.Duration) time.Duration { return max(rtt*5/4, minRetry) }

// retry adds to the NACK being built the packets whose NACK got no answer
// within retryAfter(rtt), and gives up on those asked nackTries times or
// too far behind the newest.
func (g *gapDetector) retry(now time.Time, rtt time.Duration) {
	if g.active == 0 || g.due == 0 || now.UnixNano() < g.due {
		return
	}
	after := int64(retryAfter(rtt))
	g.due = 0
	for i := range g.missing {
		m := &g.missing[i]
		if !m.active {
			continue
		}
		if uint16(g.highest-m.seq) >= missSlots-nackSpan {
			g.forget(m, &g.counts.aged)
			continue
		}
		if now.UnixNano()-m.at >= after {
			if m.tries >= nackTries {
				g.forget(m, &g.counts.gaveUp)
				continue
			}
			m.tries++
			m.at = now.UnixNano()
			g.addLost(m.seq)
		}
		if next := m.at + after; g.due == 0 || next < g.due {
			g.due = next
		}
	}
}

// forget ends an active entry, counting it under why.
func (g *gapDetector) forget(m *miss, why *atomic.Uint64) {
	if m.active {
		m.active = false
		g.active--
		why.Add(1)
	}
}

// next is when retry has something to do (zero: nothing missing).
func (g *gapDetector) next() time.Time {
	if g.active == 0 || g.due == 0 {
		return time.Time{}
	}
	return time.Unix(0, g.due)
}

// end counts what is still missing as the track ends.
func (g *gapDetector) end() {
	for i := range g.missing {
		g.forget(&g.missing[i], &g.counts.ended)
	}
}

// take returns the NACK built since the last take (empty: none); it is
// valid until the next call.
func (g *gapDetector) take() []relay.NACKPair {
	p := g.pairs
	g.pairs = g.pairs[:0]
	return p
}

// addLost adds s to the NACK being built (pairs of up to 17 sequence numbers).
func (g *gapDetector) addLost(s uint16) {
	for i := range g.pairs {
		p := &g.pairs[i]
		if d := s - p.First; d == 0 {
			return
		} else if d <= 16 {
			p.Mask |= 1 << (d - 1)
			return
		}
	}
	if len(g.pairs) < relay.MaxNACKPairs {
		g.pairs = append(g.pairs, relay.NACKPair{First: s})
	}
}
