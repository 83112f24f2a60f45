package load

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// signalingCount counts the signaling messages the participants receive, by
// type: what joins and the room's updates cost in messages and bytes.
type signalingCount struct {
	messages, bytes atomic.Uint64
	byType          sync.Map // type → *typeCount
}

type typeCount struct{ messages, bytes atomic.Uint64 }

func (s *signalingCount) count(typ string, n int) {
	s.messages.Add(1)
	s.bytes.Add(uint64(n))
	v, ok := s.byType.Load(typ)
	if !ok {
		v, _ = s.byType.LoadOrStore(typ, new(typeCount))
	}
	c := v.(*typeCount)
	c.messages.Add(1)
	c.bytes.Add(uint64(n))
}

// Signaling is what the participants received over their signaling
// connections: messages and bytes (the JSON frames), in all and by type.
type Signaling struct {
	Messages, Bytes uint64
	ByType          map[string][2]uint64 // type → messages, bytes
}

func (s *signalingCount) snapshot() Signaling {
	out := Signaling{Messages: s.messages.Load(), Bytes: s.bytes.Load(), ByType: map[string][2]uint64{}}
	s.byType.Range(func(k, v any) bool {
		c := v.(*typeCount)
		out.ByType[k.(string)] = [2]uint64{c.messages.Load(), c.bytes.Load()}
		return true
	})
	return out
}

// Sub is what arrived between a and s.
func (s Signaling) Sub(a Signaling) Signaling {
	out := Signaling{Messages: s.Messages - a.Messages, Bytes: s.Bytes - a.Bytes, ByType: map[string][2]uint64{}}
	for t, v := range s.ByType {
		w := a.ByType[t]
		if d := [2]uint64{v[0] - w[0], v[1] - w[1]}; d[0] > 0 {
			out.ByType[t] = d
		}
	}
	return out
}

// PerJoin describes s spread over joins: messages and bytes per join, and the
// types that brought the most bytes.
func (s Signaling) PerJoin(joins uint64) string {
	if joins == 0 {
		return "no joins"
	}
	types := make([]string, 0, len(s.ByType))
	for t := range s.ByType {
		types = append(types, t)
	}
	slices.SortFunc(types, func(a, b string) int { return cmp.Compare(s.ByType[b][1], s.ByType[a][1]) })
	var top []string
	for _, t := range types[:min(5, len(types))] {
		top = append(top, fmt.Sprintf("%s %.1f/%.0f B", t, float64(s.ByType[t][0])/float64(joins), float64(s.ByType[t][1])/float64(joins)))
	}
	return fmt.Sprintf("%d messages, %.0f kB: %.1f messages, %.1f kB per join (by type, per join: %s)",
		s.Messages, float64(s.Bytes)/1000, float64(s.Messages)/float64(joins), float64(s.Bytes)/1000/float64(joins), strings.Join(top, "; "))
}
