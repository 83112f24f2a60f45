package alloc

import "time"

// Beside flows that do not back off (ten CUBIC downloads), the queue stays
// full and 5-16 % of what arrives is dropped. There an encoding above the
// lowest can fit the estimate and still not play: its keyframe, tens of
// packets in one burst into the full queue, loses most of them, its repairs
// are lost again, and the receiver waits for the next keyframe. Measured
// (TCP-share run T, docs/adaptation.md): the stage on its middle encoding at
// 300 kb/s decoded 3.6 fps, frozen 15 s of 20, where its lowest encoding had
// decoded 25 fps a few seconds before. The estimate cannot see that; the
// breaks can: a segment the SFU gave up (Link resyncs) or a receiver's
// keyframe request.
//
// BreakCeiling turns a video's breaks into a ceiling on its encoding: a break
// on an encoding above the lowest while the path is crowded (bwe.Crowded: a
// loss window of 7 % or more behind a standing queue) holds it one encoding
// lower until the path is clear again (bwe.Clear: the flows stopped), for at
// most BreakHold.
//
//   - One break, not two: each is a picture frozen 2-3 s, and a phase waiting
//     for a second one froze 10 s of 20 (run U).
//   - Lifted when clear, not after a grace: the return to the previous
//     layers after the flows stop is asked within 5 s.
const BreakHold = 30 * time.Second

// BreakCeiling is one video's break history for one receiver. The zero
// value has no ceiling. Pure: time is an argument.
type BreakCeiling struct {
	seen     uint64    // the break counter at the last Update
	observed bool      // seen is set
	ceiling  int       // highest encoding allowed, while until is set
	until    time.Time // the ceiling holds until then (zero: none)
}

// Update takes the video's break counter (monotonic), the encoding it is
// forwarded on now (-1: none) and whether the path is crowded or clear (see
// BreakCeiling); it returns the highest encoding allowed, or -1 for no
// ceiling.
func (c *BreakCeiling) Update(now time.Time, breaks uint64, current int, crowded, clear bool) int {
	fresh := c.observed && breaks > c.seen
	c.seen, c.observed = breaks, true
	if !c.until.IsZero() && (!now.Before(c.until) || clear) {
		c.until = time.Time{}
	}
	if fresh && current > 0 && crowded {
		c.ceiling, c.until = current-1, now.Add(BreakHold)
	}
	return c.Held()
}

// Held is the ceiling as the last Update left it, -1 for none.
func (c *BreakCeiling) Held() int {
	if c.until.IsZero() {
		return -1
	}
	return c.ceiling
}
