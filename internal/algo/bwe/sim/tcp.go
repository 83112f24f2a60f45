package sim

import (
	"math"
	"time"
)

// TCPFlow is a competing bulk TCP flow (CUBIC, RFC 9438: β 0.7, C 0.4, with
// its Reno-friendly region) sharing the bottleneck queue with the video: a
// download on the same home link. It sends full-size packets whenever its
// window allows, its ACKs return after the path's delay (the reverse path is
// not congested), and a packet the queue drops is detected by duplicate ACKs
// a round trip later; the window is reduced at most once per window of data
// (fast recovery).
type TCPFlow struct {
	Start, Stop time.Duration // Stop 0: until the end
}

const (
	tcpPacket   = 1500 // bytes on the bottleneck
	tcpBeta     = 0.7
	tcpC        = 0.4
	tcpInitWin  = 10
	tcpMinWin   = 2
	tcpAckDelay = time.Millisecond // duplicate-ACK detection beyond the round trip
)

type tcpEvent struct {
	at   time.Duration
	seq  int64
	lost bool
}

type tcpConn struct {
	spec     TCPFlow
	cwnd     float64 // packets
	ssthresh float64
	wmax     float64
	k        float64 // seconds to reach wmax again
	epoch    time.Duration
	west     float64 // Reno-friendly window
	inflight int
	next     int64 // next sequence to send
	recover  int64 // losses of packets sent before this do not reduce again
	events   []tcpEvent
	acked    [50]int // delivered bytes per 10 ms over the last 500 ms
}

func newTCP(spec TCPFlow) tcpConn {
	return tcpConn{spec: spec, cwnd: tcpInitWin, ssthresh: math.Inf(1)}
}

func (c *tcpConn) active(t time.Duration) bool {
	return t >= c.spec.Start && (c.spec.Stop == 0 || t < c.spec.Stop)
}

// step runs the flow for one tick: ACKs and loss signals due by t, then new
// packets while the window allows.
func (c *tcpConn) step(t time.Duration, r *runner) {
	rtt := 2 * r.sc.Delay
	n := 0
	for n < len(c.events) && c.events[n].at <= t {
		e := c.events[n]
		n++
		c.inflight--
		if e.lost {
			if e.seq >= c.recover {
				c.reduce(t)
				c.recover = c.next
			}
			continue
		}
		c.acked[int(t/(10*time.Millisecond))%len(c.acked)] += tcpPacket
		c.grow(t, rtt)
	}
	c.events = c.events[n:]
	if !c.active(t) {
		return
	}
	for c.inflight < int(c.cwnd) {
		seq := c.next
		c.next++
		c.inflight++
		ev := tcpEvent{seq: seq}
		if arr, ok := r.lnk.send(t, tcpPacket); ok {
			ev.at = arr + r.sc.Delay
		} else {
			ev.lost = true
			ev.at = t + r.lnk.QueueDelay(t) + rtt + tcpAckDelay
		}
		c.insert(ev)
	}
}

// insert keeps events in time order (arrivals are ordered; loss signals
// interleave with them).
func (c *tcpConn) insert(ev tcpEvent) {
	i := len(c.events)
	for i > 0 && c.events[i-1].at > ev.at {
		i--
	}
	c.events = append(c.events, tcpEvent{})
	copy(c.events[i+1:], c.events[i:])
	c.events[i] = ev
}

func (c *tcpConn) reduce(t time.Duration) {
	c.wmax = c.cwnd
	c.cwnd = math.Max(c.cwnd*tcpBeta, tcpMinWin)
	c.ssthresh = c.cwnd
	c.west = c.cwnd
	c.epoch = t
	c.k = math.Cbrt(c.wmax * (1 - tcpBeta) / tcpC)
}

func (c *tcpConn) grow(t, rtt time.Duration) {
	if c.cwnd < c.ssthresh {
		c.cwnd++
		return
	}
	tt := (t - c.epoch + rtt).Seconds()
	target := tcpC*math.Pow(tt-c.k, 3) + c.wmax
	if target > c.cwnd {
		c.cwnd += math.Min(target-c.cwnd, c.cwnd) / c.cwnd
	} else {
		c.cwnd += 0.01 / c.cwnd
	}
	c.west += 3 * (1 - tcpBeta) / (1 + tcpBeta) / c.cwnd
	c.cwnd = math.Max(c.cwnd, c.west)
}

// rate is the flow's goodput over the last 500 ms, bits per second.
func (c *tcpConn) rate() int {
	sum := 0
	for _, b := range c.acked {
		sum += b
	}
	return sum * 8 * 2
}

func (c *tcpConn) roll(t time.Duration) {
	if t%(10*time.Millisecond) == 0 {
		c.acked[(int(t/(10*time.Millisecond))+1)%len(c.acked)] = 0
	}
}
