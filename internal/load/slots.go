package load

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/podium-sfu/podium/internal/signal"
)

// Audio slots (Config.AudioSlots, docs/speaker.md "Audio selection"): a
// receiver's slot packets count as received audio, and are credited to the
// speaker the latest audio-slots message names for the slot (a packet or two
// at a switch may go to the neighbour).

// slotMap is one receiver's slots: whom each carries, and the audio packets
// each speaker's voice brought through them.
type slotMap struct {
	mu     sync.Mutex
	owners []string
	heard  map[string]uint64
}

func (m *slotMap) set(ids []string) {
	m.mu.Lock()
	m.owners = slices.Clone(ids)
	m.mu.Unlock()
}

func (m *slotMap) credit(slot int) {
	m.mu.Lock()
	if slot < len(m.owners) && m.owners[slot] != "" {
		if m.heard == nil {
			m.heard = map[string]uint64{}
		}
		m.heard[m.owners[slot]]++
	}
	m.mu.Unlock()
}

func (m *slotMap) snapshot() map[string]uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]uint64, len(m.heard))
	for id, n := range m.heard {
		out[id] = n
	}
	return out
}

// slotIndex is the slot a stream id names ("audio-slot-<i>").
func slotIndex(stream string) (int, bool) {
	s, ok := strings.CutPrefix(stream, signal.SlotStreamPrefix)
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(s)
	return i, err == nil && i >= 0
}

// Heard is what one receiver's audio slots brought: audio packets by the
// speaker's participant name.
type Heard struct {
	Receiver string
	Speakers map[string]uint64
}

// SlotAudio lists, for every participant in spec order, whose audio arrived
// through its slots since it joined (reconnects start it again).
func (r *Run) SlotAudio() []Heard {
	names := map[string]string{}
	r.byID.Range(func(id, p any) bool {
		names[id.(string)] = p.(*participant).spec.Name
		return true
	})
	out := make([]Heard, 0, len(r.parts))
	for _, p := range r.parts {
		h := Heard{Receiver: p.spec.Name, Speakers: map[string]uint64{}}
		for id, n := range p.recv.slots.snapshot() {
			h.Speakers[cmpName(names, id)] += n
		}
		out = append(out, h)
	}
	return out
}

func cmpName(names map[string]string, id string) string {
	if n, ok := names[id]; ok {
		return n
	}
	return id
}

// String is one line: the receiver, then each speaker heard and its packets, most first.
func (h Heard) String() string {
	who := make([]string, 0, len(h.Speakers))
	for s := range h.Speakers {
		who = append(who, s)
	}
	slices.SortFunc(who, func(a, b string) int {
		if d := int(h.Speakers[b]) - int(h.Speakers[a]); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	var b strings.Builder
	fmt.Fprintf(&b, "%s heard", h.Receiver)
	if len(who) == 0 {
		b.WriteString(" nobody")
	}
	for _, s := range who {
		fmt.Fprintf(&b, " %s (%d)", s, h.Speakers[s])
	}
	return b.String()
}
