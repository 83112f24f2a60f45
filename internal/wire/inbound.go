package wire

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
	"time"
)

// RTPHandler takes one authenticated, decrypted RTP packet of a taken stream
// (valid only during the call: it is the socket reader's buffer) and queues
// what it sends in out, which the reader flushes after.
type RTPHandler func(now time.Time, pkt []byte, out *Batch)

// Inbound is one peer connection's received SRTP as the data plane takes it
// at the socket: the connection's own opener (with replay protection) and
// the streams (SSRCs) it takes, each with its handler. A stream not taken,
// or any packet before the keys, stays with pion.
//
// Its opener only ever sees the taken streams' packets, pion's context only
// the others' (and the taken ones' before they were taken): every SSRC's
// packet index is followed by one of them at a time.
type Inbound struct {
	mu    sync.Mutex // open, spare and the streams' opened: whichever socket reads the peer
	open  *RTPOpener
	spare []byte // a stream's first datagram, kept for a second try (see Open)

	streams  atomic.Pointer[map[uint32]*taken] // copied on write under smu
	smu      sync.Mutex
	Taken    atomic.Uint64 // packets authenticated and handled
	Rejected atomic.Uint64 // packets of taken streams that failed authentication or replay
}

// taken is one taken stream.
type taken struct {
	handle  RTPHandler
	reports RTPHandler // its SRTCP led by its sender report (nil: pion's)
	opened  bool       // a packet authenticated: its rollover counter is known
}

// NewInbound returns a connection's inbound side with no keys yet.
func NewInbound() *Inbound {
	in := &Inbound{}
	in.streams.Store(&map[uint32]*taken{})
	return in
}

// SetOpener starts taking the streams with o (made by Keys.RTPOpener).
func (in *Inbound) SetOpener(o *RTPOpener) {
	in.mu.Lock()
	in.open = o
	in.mu.Unlock()
}

// Take hands the packets of ssrc to h from now on.
func (in *Inbound) Take(ssrc uint32, h RTPHandler) { in.edit(ssrc, h, nil) }

// TakeWithReports is Take, and also hands reports the stream's sender's
// compound RTCP packets, each authenticated and decrypted (by the
// connection's SRTCP opener, see Reports), that lead with ssrc's sender
// report.
func (in *Inbound) TakeWithReports(ssrc uint32, h, reports RTPHandler) { in.edit(ssrc, h, reports) }

// Release gives ssrc back to pion.
func (in *Inbound) Release(ssrc uint32) { in.edit(ssrc, nil, nil) }

// Reports is the handler of the SRTCP led by ssrc's sender report (nil: the
// stream is not taken with reports). The caller opens the packet: SRTCP
// leaves the first packet's header and SSRC in the clear, and its index
// space is the connection's, not the SRTP context's.
func (in *Inbound) Reports(ssrc uint32) RTPHandler {
	if t := (*in.streams.Load())[ssrc]; t != nil {
		return t.reports
	}
	return nil
}

func (in *Inbound) edit(ssrc uint32, h, reports RTPHandler) {
	in.smu.Lock()
	defer in.smu.Unlock()
	cur := *in.streams.Load()
	next := make(map[uint32]*taken, len(cur)+1)
	for k, v := range cur {
		if k != ssrc {
			next[k] = v
		}
	}
	if h != nil {
		next[ssrc] = &taken{handle: h, reports: reports}
	}
	in.streams.Store(&next)
	if h == nil {
		in.mu.Lock()
		if in.open != nil {
			in.open.Forget(ssrc) // a stream released keeps no state of ours
		}
		in.mu.Unlock()
	}
}

// Takes reports whether some stream is taken (a cheap check per datagram).
func (in *Inbound) Takes() bool { return len(*in.streams.Load()) > 0 }

// OpenStatus is what Open did with a datagram.
type OpenStatus uint8

const (
	// NotTaken: not RTP of a taken stream, or no keys yet: pion's.
	NotTaken OpenStatus = iota
	// Opened: authenticated and decrypted in place; hand it to the handler.
	Opened
	// Refused: a taken stream's packet that did not authenticate (or a
	// replay): dropped, as pion's context would have.
	Refused
)

// Open authenticates and decrypts datagram b in place if it is an SRTP
// packet of a taken stream, returning the plain packet and its handler. It
// parses only the fixed header's SSRC before authentication, and does not
// allocate.
//
// Our opener meets a stream mid-way, after pion's context has read its first
// packets, and guesses a rollover counter of 0. A stream whose sequence
// number wrapped before it was taken (a sender that starts near 65535;
// browsers start below 32768) has 1: until one of its packets authenticates,
// a packet that fails is tried again with 1 (from a copy: a failed AES-GCM
// open clears what it decrypted).
func (in *Inbound) Open(b []byte) ([]byte, RTPHandler, OpenStatus) {
	if !isRTP(b) {
		return nil, nil, NotTaken
	}
	ssrc := binary.BigEndian.Uint32(b[8:])
	t := (*in.streams.Load())[ssrc]
	if t == nil {
		return nil, nil, NotTaken
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.open == nil {
		return nil, nil, NotTaken
	}
	first := !t.opened && len(b) <= maxDatagram
	if first {
		if in.spare == nil {
			in.spare = make([]byte, maxDatagram)
		}
		copy(in.spare, b)
	}
	plain, err := in.open.Open(b)
	if err != nil && first {
		copy(b, in.spare[:len(b)])
		in.open.SetROC(ssrc, 1)
		if plain, err = in.open.Open(b); err != nil {
			in.open.SetROC(ssrc, 0) // as before the try
		}
	}
	if err != nil {
		in.Rejected.Add(1)
		return nil, nil, Refused
	}
	t.opened = true
	in.Taken.Add(1)
	return plain, t.handle, Opened
}

// maxDatagram is the largest datagram a stream's first packets are kept for.
const maxDatagram = 1500

// isRTP: version 2, at least a fixed header, and a payload type outside
// RTCP's 64–95 (RFC 5761), as media.IsRTP.
func isRTP(b []byte) bool {
	if len(b) < 12 || b[0]>>6 != 2 {
		return false
	}
	pt := b[1] & 0x7f
	return pt < 64 || pt > 95
}
