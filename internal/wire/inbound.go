package wire

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/rtp"
	"github.com/pion/srtp/v3"
)

// RTPHandler takes one authenticated, decrypted RTP packet of a taken stream
// (valid only during the call: it is the socket reader's buffer) and queues
// what it sends in out, which the reader flushes after.
type RTPHandler func(now time.Time, pkt []byte, out *Batch)

// Inbound is one peer connection's received SRTP as the data plane takes it
// at the socket: the connection's own inbound context (with replay
// protection) and the streams (SSRCs) it takes, each with its handler. A
// stream not taken, or any packet before the keys, stays with pion.
//
// Its context only ever sees the taken streams' packets, pion's only the
// others' (and the taken ones' before they were taken): every SSRC's packet
// index is followed by one context at a time.
type Inbound struct {
	mu  sync.Mutex // ctx and hdr: whichever socket reads the peer
	ctx *srtp.Context
	hdr rtp.Header

	streams  atomic.Pointer[map[uint32]RTPHandler] // copied on write under smu
	smu      sync.Mutex
	Taken    atomic.Uint64 // packets authenticated and handled
	Rejected atomic.Uint64 // packets of taken streams that failed authentication or replay
}

// NewInbound returns a connection's inbound side with no keys yet.
func NewInbound() *Inbound {
	in := &Inbound{}
	in.streams.Store(&map[uint32]RTPHandler{})
	return in
}

// SetContext starts taking the streams with ctx (made by Keys.Inbound).
func (in *Inbound) SetContext(ctx *srtp.Context) {
	in.mu.Lock()
	in.ctx = ctx
	in.mu.Unlock()
}

// Take hands the packets of ssrc to h from now on.
func (in *Inbound) Take(ssrc uint32, h RTPHandler) { in.edit(ssrc, h) }

// Release gives ssrc back to pion.
func (in *Inbound) Release(ssrc uint32) { in.edit(ssrc, nil) }

func (in *Inbound) edit(ssrc uint32, h RTPHandler) {
	in.smu.Lock()
	defer in.smu.Unlock()
	cur := *in.streams.Load()
	next := make(map[uint32]RTPHandler, len(cur)+1)
	for k, v := range cur {
		if k != ssrc {
			next[k] = v
		}
	}
	if h != nil {
		next[ssrc] = h
	}
	in.streams.Store(&next)
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
func (in *Inbound) Open(b []byte) ([]byte, RTPHandler, OpenStatus) {
	if !isRTP(b) {
		return nil, nil, NotTaken
	}
	h := (*in.streams.Load())[binary.BigEndian.Uint32(b[8:])]
	if h == nil {
		return nil, nil, NotTaken
	}
	in.mu.Lock()
	if in.ctx == nil {
		in.mu.Unlock()
		return nil, nil, NotTaken
	}
	plain, err := in.ctx.DecryptRTP(b[:0], b, &in.hdr)
	in.mu.Unlock()
	if err != nil {
		in.Rejected.Add(1)
		return nil, nil, Refused
	}
	in.Taken.Add(1)
	return plain, h, Opened
}

// isRTP: version 2, at least a fixed header, and a payload type outside
// RTCP's 64–95 (RFC 5761), as media.IsRTP.
func isRTP(b []byte) bool {
	if len(b) < 12 || b[0]>>6 != 2 {
		return false
	}
	pt := b[1] & 0x7f
	return pt < 64 || pt > 95
}
