package peer

import (
	"encoding/binary"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/podium-sfu/podium/internal/wire"
)

// Ingress: datagrams the data plane takes before pion sees them.
//
// For a connection that registered an RTCP handler (the subscribe
// connections: everything they receive is the receivers' feedback on what we
// send), once its keys are exported and its ICE pair is a UDP pair on one of
// our sockets, the socket's reader (the goroutine of pion's UDP mux) takes
// every SRTCP datagram from the peer's address, authenticates and decrypts it
// in place with the connection's own inbound context and hands the compound
// packet to the handler synchronously, with the reader's send batch for
// whatever it answers (NACK → RTX). Pion's SRTCP session would decrypt it, then
// decode every packet of it (allocating per transport-wide feedback status
// chunk and delta) and queue it for another goroutine. STUN, DTLS, RTP and
// datagrams from any other address go to pion as before.
//
// In the default mode (rtp) a connection's inConn is feedbackOnly: the reader
// takes only the datagrams whose first packet, in SRTCP's clear header, is
// transport-wide feedback (browsers and pion send it on its own, ten or more
// times a second per receiver) and leaves the rest (receiver reports, NACKs,
// keyframe requests) to pion's SRTCP session untouched, except datagrams of
// reports alone, which nothing reads (dropReports). Pion's decoding of that
// feedback was two thirds of the server's heap allocations in meeting-8.
//
// For a publish connection (rtp set) the reader takes, besides its taken
// streams' SRTP, the SRTCP that leads with one of those streams' sender
// reports (takeSenderReport), with the connection's own opener.

// RTCPHandler takes one authenticated, decrypted compound RTCP packet (valid
// only during the call) and queues what it sends in out (flushed after).
type RTCPHandler func(now time.Time, compound []byte, out *wire.Batch)

// ingress is the table of connections whose RTCP the sockets' readers take.
type ingress struct {
	arrivals *arrivals                                  // confirms taken RTP for the transport-wide feedback
	byAddr   atomic.Pointer[map[netip.AddrPort]*inConn] // copied on write
	mu       sync.Mutex                                 // one writer at a time
	taken    atomic.Uint64                              // all connections' datagrams handled
	rejected atomic.Uint64                              // and refused
}

// inConn is one connection's inbound state: its SRTCP (subscribe
// connections: handle set) or its taken streams' SRTP and their sender
// reports' SRTCP (publish connections: rtp set), never both.
type inConn struct {
	mu     sync.Mutex // the opener is used by whichever socket reads the peer
	open   *wire.RTCPOpener
	handle RTCPHandler
	// feedbackOnly: handle gets only datagrams led by transport-wide
	// feedback; pion's SRTCP session decrypts the others (with its own
	// context: SRTCP is only opened, never sealed, with these keys).
	feedbackOnly bool
	scratch      [1500]byte // feedbackOnly: reports decrypted to be checked (dropReports)
	rtp          *wire.Inbound
	consent      *consent      // nil: pion keeps the connection's ICE consent
	taken        atomic.Uint64 // datagrams authenticated and handled
	rejected     atomic.Uint64 // datagrams that failed authentication or replay
}

func newIngress(a *arrivals) *ingress {
	in := &ingress{arrivals: a}
	in.byAddr.Store(&map[netip.AddrPort]*inConn{})
	return in
}

// set maps addr to c (nil: removes whatever addr maps to, if it is old).
func (in *ingress) set(addr netip.AddrPort, c, old *inConn) {
	in.mu.Lock()
	defer in.mu.Unlock()
	cur := *in.byAddr.Load()
	next := make(map[netip.AddrPort]*inConn, len(cur)+1)
	for k, v := range cur {
		if v != old {
			next[k] = v
		}
	}
	if c != nil {
		next[addr] = c
	}
	in.byAddr.Store(&next)
}

// isRTCP: an RTP/RTCP version 2 datagram whose second byte is an RTCP packet
// type (RFC 5761 section 4: 192–223).
func isRTCP(b []byte) bool {
	return len(b) >= 8 && b[0]>>6 == 2 && b[1] >= 192 && b[1] <= 223
}

// leadsWithTransportCC: the first RTCP packet of datagram b (in the clear
// even in SRTCP) is transport-wide feedback (RTPFB, FMT 15).
func leadsWithTransportCC(b []byte) bool {
	return b[1] == 205 && b[0]&0x1f == 15
}

// take handles datagram b from addr, read on sock at now (reaching the host
// at arrived), if it is from a registered connection and the data plane's to
// handle: SRTCP, SRTP of a taken stream, or STUN on the connection's pair
// (consent). It decrypts in place: b is the reader's buffer, reused for the
// next read.
func (in *ingress) take(b []byte, sock *wire.Socket, ip netip.Addr, port uint16, now, arrived time.Time, out *wire.Batch) verdict {
	c := (*in.byAddr.Load())[netip.AddrPortFrom(ip, port)]
	if c == nil {
		return passToPion
	}
	var taken bool
	switch {
	case isRTCP(b):
		taken = in.takeRTCP(c, b, now, out)
	case len(b) >= 12 && b[0]>>6 == 2:
		taken = in.takeRTP(c, b, now, arrived, out)
	case c.consent != nil && wire.IsSTUN(b):
		return c.consent.take(b, sock, netip.AddrPortFrom(ip, port), now, out)
	}
	if taken {
		return takenHere
	}
	return passToPion
}

// takeRTCP handles SRTCP datagram b from c's peer, reporting whether it did
// (then pion must not see it).
func (in *ingress) takeRTCP(c *inConn, b []byte, now time.Time, out *wire.Batch) bool {
	if c.rtp != nil {
		return in.takeSenderReport(c, b, now, out)
	}
	if c.handle == nil {
		return false
	}
	if c.feedbackOnly && !leadsWithTransportCC(b) {
		return in.dropReports(c, b)
	}
	return in.openAndHand(c, b, now, out, c.handle)
}

// openAndHand authenticates and decrypts SRTCP datagram b in place with c's
// opener and hands the plain packet to h; a datagram that does not
// authenticate is counted and dropped. It reports that b was taken.
func (in *ingress) openAndHand(c *inConn, b []byte, now time.Time, out *wire.Batch, h func(time.Time, []byte, *wire.Batch)) bool {
	c.mu.Lock()
	plain, err := c.open.Open(b[:0], b)
	c.mu.Unlock()
	if err != nil {
		c.rejected.Add(1)
		in.rejected.Add(1)
		return true // pion's context could not authenticate it either
	}
	c.taken.Add(1)
	in.taken.Add(1)
	h(now, plain, out)
	return true
}

// dropReports takes datagram b when it holds nothing but reports (SR, RR,
// SDES, BYE), which the handler would skip too: a receiver's reports on what
// we send serve nothing here (subscribe connections have no interceptors),
// and pion's session would decode each into fresh packets. It decrypts into
// c's scratch, so a datagram it leaves to pion goes as it came.
func (in *ingress) dropReports(c *inConn, b []byte) bool {
	if b[1] < 200 || b[1] > 203 {
		return false // led by something else: not decrypted twice
	}
	c.mu.Lock()
	plain, err := c.open.Open(c.scratch[:0], b)
	reports := err == nil && onlyReports(plain)
	c.mu.Unlock()
	switch {
	case err != nil:
		c.rejected.Add(1)
		in.rejected.Add(1)
		return true // pion's context could not authenticate it either
	case !reports:
		return false
	}
	c.taken.Add(1)
	in.taken.Add(1)
	return true
}

// onlyReports: compound RTCP packet b is well formed and holds only SR, RR,
// SDES and BYE packets.
func onlyReports(b []byte) bool {
	if len(b) < 4 {
		return false
	}
	for len(b) >= 4 {
		size := 4 * (int(binary.BigEndian.Uint16(b[2:])) + 1)
		if size > len(b) || b[1] < 200 || b[1] > 203 {
			return false
		}
		b = b[size:]
	}
	return len(b) == 0
}

// takeSenderReport handles SRTCP datagram b from a publish connection when
// its first packet, in SRTCP's clear header, is the sender report of a
// stream taken with its reports (wire.Inbound.TakeWithReports): it is
// authenticated and decrypted in place with the connection's own opener and
// handed to that stream's handler, whole. Nothing on a publish connection
// reads more of its RTCP than the streams' sender reports (its SDES, BYE,
// report blocks serve nothing here), so the rest of such a compound goes
// with it. Anything else stays with pion's SRTCP session, which decrypted
// each report and decoded it into fresh packets (14 % of meeting-8's
// remaining allocations).
func (in *ingress) takeSenderReport(c *inConn, b []byte, now time.Time, out *wire.Batch) bool {
	if b[1] != 200 || c.open == nil {
		return false
	}
	h := c.rtp.Reports(binary.BigEndian.Uint32(b[4:]))
	if h == nil {
		return false
	}
	return in.openAndHand(c, b, now, out, h)
}

// takeRTP handles RTP datagram b from c's peer if it is SRTP of a stream a publish
// connection's data plane took (see wire.Inbound), reporting whether it did.
// The packet counts for the transport-wide feedback, at arrived, once it
// authenticated.
func (in *ingress) takeRTP(c *inConn, b []byte, now, arrived time.Time, out *wire.Batch) bool {
	if c.rtp == nil {
		return false
	}
	plain, handle, st := c.rtp.Open(b)
	switch st {
	case wire.NotTaken:
		return false
	case wire.Refused:
		in.rejected.Add(1)
		return true
	}
	in.arrivals.record(plain, arrived, now)
	handle(now, plain, out)
	return true
}
