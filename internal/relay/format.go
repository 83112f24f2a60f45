// Package relay is the media relay between bridges (docs/cluster.md, Relay):
// one UDP socket per node multiplexing every conference, each datagram sealed
// with AES-GCM under the sending node's current key. This file is the
// datagram format and its pure parser.
//
//	0      version (1)
//	1      kind (media, feedback, report, probe)
//	2..5   sender: the sending node's relay tag (random per process)
//	6..9   key id  \ together the 12-byte GCM nonce: a key id names one
//	10..17 counter / key of one sender, whose counter never repeats
//	18..   sealed: stream id (4 bytes) and body, then the 16-byte GCM tag
//
// The first 18 bytes are the additional authenticated data: a datagram whose
// header or body was changed, or that was sealed under another key, fails to
// open.
package relay

import (
	"encoding/binary"
	"errors"
)

// Version is the datagram format's version.
const Version = 1

const (
	// HeaderLen is the clear header: version, kind, sender, key id, counter.
	HeaderLen = 18
	// tagLen is AES-GCM's authentication tag.
	tagLen    = 16
	streamLen = 4
	// Overhead is what sealing adds to a body.
	Overhead = HeaderLen + streamLen + tagLen
	// MaxDatagram is the largest datagram sent or read.
	MaxDatagram = 1500
	// MaxBody is the largest body that fits a datagram.
	MaxBody = MaxDatagram - Overhead
)

// Kind says what a datagram's body is.
type Kind uint8

const (
	// KindMedia carries one RTP packet of a relayed stream, origin → subscriber.
	KindMedia Kind = 1
	// KindFeedback carries a keyframe request or NACKs for a relayed stream,
	// subscriber → origin (ParseFeedback).
	KindFeedback Kind = 2
	// KindReport carries RTCP of a relayed stream, origin → subscriber: its
	// sender reports, which receivers need for lip sync.
	KindReport Kind = 3
	// KindProbe carries a probe or its echo between two nodes' relays, which
	// measure their round trip with them (ParseProbe).
	KindProbe Kind = 4
)

func (k Kind) String() string {
	switch k {
	case KindMedia:
		return "media"
	case KindFeedback:
		return "feedback"
	case KindReport:
		return "report"
	case KindProbe:
		return "probe"
	}
	return "unknown"
}

// Header is a datagram's clear header.
type Header struct {
	Kind    Kind
	Sender  uint32
	KeyID   uint32
	Counter uint64
}

var (
	ErrShort   = errors.New("relay: datagram too short")
	ErrLong    = errors.New("relay: datagram too long")
	ErrVersion = errors.New("relay: unknown version")
	ErrKind    = errors.New("relay: unknown kind")
)

// Parse reads b's clear header into h. It checks only what can be checked
// without the key: the length, the version and the kind.
func Parse(b []byte, h *Header) error {
	if len(b) < Overhead {
		return ErrShort
	}
	if len(b) > MaxDatagram {
		return ErrLong
	}
	if b[0] != Version {
		return ErrVersion
	}
	h.Kind = Kind(b[1])
	if h.Kind < KindMedia || h.Kind > KindProbe {
		return ErrKind
	}
	h.Sender = binary.BigEndian.Uint32(b[2:])
	h.KeyID = binary.BigEndian.Uint32(b[6:])
	h.Counter = binary.BigEndian.Uint64(b[10:])
	return nil
}

// putHeader writes h into b[:HeaderLen].
func putHeader(b []byte, h *Header) {
	b[0] = Version
	b[1] = byte(h.Kind)
	binary.BigEndian.PutUint32(b[2:], h.Sender)
	binary.BigEndian.PutUint32(b[6:], h.KeyID)
	binary.BigEndian.PutUint64(b[10:], h.Counter)
}

// nonce is the GCM nonce inside a datagram: key id and counter.
func nonce(b []byte) []byte { return b[6:HeaderLen] }
