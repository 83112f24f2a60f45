package bwe

import "time"

// Grouping of packets into bursts (libwebrtc's InterArrival): the delay of a
// single packet is noisy, the delay between consecutive bursts is the signal.
const (
	groupSpan       = 5 * time.Millisecond   // packets sent within this of a group's first belong to it
	burstArrival    = 5 * time.Millisecond   // …and so do packets arriving this close after it while catching up
	maxBurst        = 100 * time.Millisecond // a burst group spans at most this much arrival time
	arrivalJump     = 3 * time.Second        // a larger jump of the receiver clock resets grouping
	reorderedResets = 3                      // consecutive reordered groups that reset grouping
)

// group is a burst of packets.
type group struct {
	firstSend, lastSend       time.Duration
	firstArrival, lastArrival time.Duration
	size                      int
	packets                   int
}

// delta is the change between two consecutive groups: how much later the
// newer group arrived than it was sent, relative to the older one.
type delta struct {
	send, arrival time.Duration // between the groups' last packets
	at            time.Duration // arrival time of the newer group
}

// interArrival turns acknowledged packets, in send order, into group deltas.
type interArrival struct {
	cur, prev group
	havePrev  bool
	reordered int
	resets    int // times grouping restarted (the trendline restarts with it)
}

func (ia *interArrival) reset() { *ia = interArrival{resets: ia.resets + 1} }

func (g *group) start(send, arrival time.Duration, size int) {
	*g = group{firstSend: send, lastSend: send, firstArrival: arrival, lastArrival: arrival, size: size, packets: 1}
}

// belongs reports whether a packet joins the current group: it was sent within
// groupSpan of the group's first packet, or it is part of a burst that the
// network delivered back to back (arriving sooner after the group than it was
// sent, within burstArrival).
func (g *group) belongs(send, arrival time.Duration) bool {
	if send-g.firstSend <= groupSpan {
		return true
	}
	arr := arrival - g.lastArrival
	return arr-(send-g.lastSend) < 0 && arr <= burstArrival && arrival-g.firstArrival < maxBurst
}

// add takes one received packet and returns a delta when it completes a group.
func (ia *interArrival) add(send, arrival time.Duration, size int) (delta, bool) {
	if ia.cur.packets == 0 {
		ia.cur.start(send, arrival, size)
		return delta{}, false
	}
	if send < ia.cur.firstSend {
		return delta{}, false // sent before the current group: reordered, skip it
	}
	if jump := arrival - ia.cur.lastArrival - (send - ia.cur.lastSend); jump >= arrivalJump || jump <= -arrivalJump {
		ia.reset() // the receiver's clock jumped
		ia.cur.start(send, arrival, size)
		return delta{}, false
	}
	if ia.cur.belongs(send, arrival) {
		g := &ia.cur
		g.lastSend = max(g.lastSend, send)
		g.lastArrival = max(g.lastArrival, arrival)
		g.size += size
		g.packets++
		return delta{}, false
	}
	var d delta
	ok := false
	if ia.havePrev {
		d = delta{
			send:    ia.cur.lastSend - ia.prev.lastSend,
			arrival: ia.cur.lastArrival - ia.prev.lastArrival,
			at:      ia.cur.lastArrival,
		}
		switch {
		case d.arrival-d.send >= arrivalJump || d.arrival <= -arrivalJump:
			ia.reset() // the receiver's clock jumped
			ia.cur.start(send, arrival, size)
			return delta{}, false
		case d.arrival < 0:
			ia.reordered++
			if ia.reordered >= reorderedResets {
				ia.reset()
				ia.cur.start(send, arrival, size)
				return delta{}, false
			}
		default:
			ia.reordered = 0
			ok = true
		}
	}
	ia.prev, ia.havePrev = ia.cur, true
	ia.cur.start(send, arrival, size)
	return d, ok
}
