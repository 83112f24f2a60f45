package cascade

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/podium-sfu/podium/internal/relay"
)

// nacked lists the sequence numbers of the NACK the detector built.
func nacked(g *gapDetector) []uint16 {
	var seqs []uint16
	for _, p := range g.take() {
		p.Lost(func(s uint16) { seqs = append(seqs, s) })
	}
	slices.Sort(seqs)
	return seqs
}

func wantNACK(t *testing.T, g *gapDetector, want ...uint16) {
	t.Helper()
	if got := nacked(g); !slices.Equal(got, want) {
		t.Fatalf("NACKed %v, want %v", got, want)
	}
}

// Gaps are NACKed at once; what is still missing 1.25 round trips later is
// asked for again, up to nackTries times in all, on time whether packets
// come or not; what arrives is not; a gap longer than nackSpan is left to
// keyframes; sequence numbers wrap.
func TestGapNACKs(t *testing.T) {
	const rtt = 40 * time.Millisecond
	g := &gapDetector{counts: &repairCounters{}}
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	step := func(ms int, seq uint16) {
		g.received(at(ms), seq, rtt)
		g.retry(at(ms), rtt)
	}
	step(0, 65533)
	step(0, 65534)
	wantNACK(t, g)
	step(0, 2) // 65535, 0, 1 lost across the wrap
	wantNACK(t, g, 0, 1, 65535)
	if next := g.next(); !next.Equal(at(50)) {
		t.Fatalf("next retry at %v, want 1.25 RTT later", next.Sub(t0))
	}
	step(10, 0) // repaired
	wantNACK(t, g)
	step(30, 3) // within the round trip: no retry
	wantNACK(t, g)
	g.retry(at(50), rtt) // 1.25 RTT later, without a packet: the rest again
	wantNACK(t, g, 1, 65535)
	ms := 50
	for try := 3; try <= nackTries; try++ {
		step(ms+40, 4) // 40 ms after the last try: not yet
		wantNACK(t, g)
		ms += 50
		step(ms, 5)
		wantNACK(t, g, 1, 65535)
	}
	g.retry(at(ms+49), rtt)
	wantNACK(t, g)
	g.retry(at(ms+50), rtt) // the last try unanswered: given up
	wantNACK(t, g)
	if !g.next().IsZero() {
		t.Fatalf("a retry due at %v with nothing missing", g.next().Sub(t0))
	}
	step(200, 6+nackSpan+1) // an outage
	wantNACK(t, g)
	want := Repair{Lost: 3, Repaired: 1, GaveUp: 2, Outage: nackSpan + 1}
	if c := g.counts.load(); c != want {
		t.Fatalf("counted %+v, want %+v", c, want)
	}
}

// Packets too far behind the newest are given up as aged, and those still
// missing when the track ends are counted as ended.
func TestGapAgedAndEnded(t *testing.T) {
	const rtt = 10 * time.Millisecond
	g := &gapDetector{counts: &repairCounters{}}
	now := time.Unix(1000, 0)
	g.received(now, 0, rtt)
	g.received(now, 2, rtt) // 1 lost
	for s := uint16(3); s < missSlots; s++ {
		g.received(now, s, rtt) // no time passes: no retry of 1
	}
	g.received(now, missSlots+1, rtt) // missSlots lost
	g.retry(now.Add(time.Second), rtt)
	g.end()
	if c := g.counts.load(); c.Aged != 1 || c.Ended != 1 || c.Lost != 2 {
		t.Fatalf("counted %+v, want 1 aged, 1 ended of 2 lost", c)
	}
}

// Audio over a lossy relay hop, in simulated time: a source speaking in
// talkspurts with Opus DTX between them (a packet every 400 ms) and
// stretches of digital silence the origin does not relay; 10 % of the
// datagrams lost each way, feedback included; 40 ms round trip. The origin
// numbers around the silence, keeps what it sent and answers NACKs under
// the one-RTT rule; the subscriber gets every packet the origin relayed,
// and asks for no packet it did not relay.
func TestAudioRepairSimulated(t *testing.T) {
	const (
		rtt   = 40 * time.Millisecond
		delay = rtt / 2
	)
	type datagram struct {
		at   time.Time
		nack []relay.NACKPair // feedback; else media
		seq  uint16
	}
	rng := rand.New(rand.NewPCG(7, 7))
	var toSub, toOrigin []datagram
	lose := func() bool { return rng.Float64() < 0.10 }
	store := newAudioStore()
	var numbering silenceGaps
	down := &relayDown{}
	down.rtt.Store(int64(rtt))
	g := &gapDetector{counts: &repairCounters{}}
	relayed := map[uint16]bool{}
	got := map[uint16]bool{}
	resent, refused := 0, 0
	var last uint16
	t0 := time.Unix(1000, 0)
	src := uint16(65000) // the source's numbering wraps during the run
	for tick := 0; tick < 3000; tick++ {
		now := t0.Add(time.Duration(tick) * 20 * time.Millisecond)
		phase := tick % 150
		send, silent := true, false
		switch {
		case phase >= 100 && phase < 125: // DTX: fewer packets, numbers continuous
			send = phase%20 == 0
		case phase >= 125: // digital silence (level 127): not relayed
			silent = true
		}
		if silent {
			numbering.skip(src)
			src++
		} else if send {
			seq, ok := numbering.number(src)
			src++
			if !ok {
				t.Fatal("an in-order packet taken for late")
			}
			last = seq
			store.keep(seq, []byte{0x80, 0, byte(seq >> 8), byte(seq)}, now)
			relayed[seq] = true
			if !lose() {
				toSub = append(toSub, datagram{at: now.Add(delay), seq: seq})
			}
		}
		// Deliver what is due, in order, both ways.
		for len(toSub) > 0 && !toSub[0].at.After(now) {
			d := toSub[0]
			toSub = toSub[1:]
			got[d.seq] = true
			g.received(d.at, d.seq, rtt)
		}
		g.retry(now, rtt)
		if pairs := g.take(); len(pairs) > 0 && !lose() {
			toOrigin = append(toOrigin, datagram{at: now.Add(delay), nack: slices.Clone(pairs)})
		}
		for len(toOrigin) > 0 && !toOrigin[0].at.After(now) {
			d := toOrigin[0]
			toOrigin = toOrigin[1:]
			for _, p := range d.nack {
				p.Lost(func(seq uint16) {
					if !relayed[seq] {
						t.Fatalf("NACKed %d, which the origin never relayed", seq)
					}
					if !down.allowResend(d.at, seq) {
						refused++
						return
					}
					var buf [audioSlotSize]byte
					if _, ok := store.get(seq, buf[:]); !ok {
						t.Fatalf("%d not in the store", seq)
					}
					resent++
					if !lose() {
						toSub = append(toSub, datagram{at: d.at.Add(delay), seq: seq})
					}
				})
			}
		}
	}
	// The last packet relayed might be lost with nothing after it to show
	// the gap (the next talkspurt would): leave it out.
	missed := 0
	for seq := range relayed {
		if !got[seq] && seq != last {
			missed++
		}
	}
	c := g.counts.load()
	t.Logf("relayed %d, lost on the hop %d, resent %d (%d refused by the one-RTT rule), missed %d; %+v", len(relayed), c.Lost, resent, refused, missed, c)
	if missed > 0 || c.GaveUp > 0 {
		t.Fatalf("missed %d of %d relayed audio packets after repair (%+v)", missed, len(relayed), c)
	}
	if c.Lost < 100 || c.Repaired != c.Lost {
		t.Fatalf("lost %d, repaired %d: want a loss to repair, all repaired", c.Lost, c.Repaired)
	}
}

// Relayed audio is numbered down by the silent packets not relayed; a
// packet from before the newest of them arriving late is not relayed (its
// number went on), and the numbering survives wraps.
func TestSilenceGaps(t *testing.T) {
	var g silenceGaps
	check := func(seq, want uint16, wantOK bool) {
		t.Helper()
		if got, ok := g.number(seq); ok != wantOK || ok && got != want {
			t.Fatalf("%d numbered %d %v, want %d %v", seq, got, ok, want, wantOK)
		}
	}
	check(65534, 65534, true) // nothing skipped: as is
	g.skip(65535)
	g.skip(0)
	check(1, 65535, true)
	check(65533, 0, false) // late, from before the silence
	check(2, 0, true)
	for s := uint16(3); s != 2; s++ { // a whole wrap later
		if s == 1 {
			continue
		}
		check(s, s-2, true)
	}
}
