package packetcache

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
	"time"
)

// model is the obvious implementation: a map from extended sequence number
// to packet, holding only the last capacity numbers below the newest, and
// emptied when a packet 2·capacity or more behind restarts the numbering.
type model struct {
	capacity int64
	highest  int64
	started  bool
	pkts     map[int64][]byte
	sent     map[int64]time.Time
	restarts int
}

// extend picks the extended number for seq in [highest−32768, highest+32767].
func (m *model) extend(seq uint16) int64 {
	if !m.started {
		return int64(seq)
	}
	lo := m.highest - 32768
	return lo + ((int64(seq)-lo)%65536+65536)%65536
}

func (m *model) store(seq uint16, p []byte, now time.Time) error {
	if len(p) > DefaultSlotSize {
		return ErrTooLarge
	}
	ext := m.extend(seq)
	if m.started && ext <= m.highest-2*m.capacity {
		*m = model{capacity: m.capacity, pkts: map[int64][]byte{}, sent: map[int64]time.Time{}, restarts: m.restarts + 1}
		ext = m.extend(seq)
	} else if m.started && ext <= m.highest-m.capacity {
		return ErrTooOld
	}
	if !m.started || ext > m.highest {
		m.highest, m.started = ext, true
	}
	m.pkts[ext] = bytes.Clone(p)
	m.sent[ext] = now
	return nil
}

func (m *model) get(seq uint16) ([]byte, time.Time, bool) {
	ext := m.extend(seq)
	p, ok := m.pkts[ext]
	if !m.started || !ok || ext <= m.highest-m.capacity {
		return nil, time.Time{}, false
	}
	return p, m.sent[ext], true
}

func TestAgainstModel(t *testing.T) {
	const capacity = 64
	for seed := range uint64(8) {
		rng := rand.New(rand.NewPCG(seed, 42))
		c := newCache(t, capacity, DefaultSlotSize)
		m := &model{capacity: capacity, pkts: map[int64][]byte{}, sent: map[int64]time.Time{}}
		cursor := uint16(rng.Uint32())
		dst := make([]byte, DefaultSlotSize)
		src := make([]byte, DefaultSlotSize+1)
		var stored, tooOld, hits int
		for i := range 30000 {
			now := ms(i)
			var seq uint16
			switch r := rng.IntN(1000); {
			case r < 750: // in order, sometimes with a gap
				cursor += uint16(1 + rng.IntN(3)/2*rng.IntN(5))
				seq = cursor
			case r < 990: // late or duplicate
				seq = cursor - uint16(rng.IntN(capacity+capacity/4))
			case r < 995: // jump, sometimes far enough to read as old
				cursor += uint16(rng.IntN(40000))
				seq = cursor
			default: // arbitrary
				seq = uint16(rng.Uint32())
			}
			n := rng.IntN(200)
			if rng.IntN(200) == 0 {
				n = DefaultSlotSize + 1
			}
			p := src[:n]
			for j := range p {
				p[j] = byte(i + j)
			}
			err, want := c.Store(seq, p, now), m.store(seq, p, now)
			if !errors.Is(err, want) || (err == nil) != (want == nil) {
				t.Fatalf("seed %d op %d: Store(%d) = %v, model %v", seed, i, seq, err, want)
			}
			if err == nil {
				stored++
			} else if errors.Is(err, ErrTooOld) {
				tooOld++
			}
			if rng.IntN(4) == 0 {
				q := cursor - uint16(rng.IntN(3*capacity))
				ok := c.MarkResent(q, now)
				if _, _, wok := m.get(q); ok != wok {
					t.Fatalf("seed %d op %d: MarkResent(%d) = %v, model %v", seed, i, q, ok, wok)
				}
				if ok {
					m.sent[m.extend(q)] = now
				}
			}
			for range 2 {
				q := cursor + 2 - uint16(rng.IntN(capacity+capacity/2))
				got, at, ok := c.Get(q, dst)
				wp, wat, wok := m.get(q)
				if ok {
					hits++
				}
				if ok != wok || !bytes.Equal(dst[:got], wp) || !at.Equal(wat) {
					t.Fatalf("seed %d op %d: Get(%d) = %d bytes at %v %v, model %d bytes at %v %v",
						seed, i, q, got, at, ok, len(wp), wat, wok)
				}
			}
		}
		// Guard against a generator that never reaches the interesting cases.
		if stored < 25000 || tooOld < 50 || m.restarts < 20 || hits < 15000 {
			t.Fatalf("seed %d: weak run: %d stored, %d too old, %d restarts, %d hits", seed, stored, tooOld, m.restarts, hits)
		}
		if testing.Verbose() {
			t.Logf("seed %d: %d stored, %d too old, %d restarts, %d hits", seed, stored, tooOld, m.restarts, hits)
		}
	}
}
