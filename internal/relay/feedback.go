package relay

import (
	"encoding/binary"
	"errors"
)

// Feedback bodies (KindFeedback), subscriber → origin:
//
//	0     type: 1 keyframe request, 2 NACK
//	1..   NACK only: pairs of (first lost sequence number, bitmask of the 16
//	      following), as RTCP's generic NACK, big endian, at most MaxNACKPairs
const (
	FeedbackKeyframe = 1
	FeedbackNACK     = 2
	// MaxNACKPairs bounds a NACK body (and the parser's work).
	MaxNACKPairs = 64
)

// NACKPair is one lost sequence number and a bitmask of lost ones after it.
type NACKPair struct {
	First uint16
	Mask  uint16
}

// Feedback is a parsed feedback body.
type Feedback struct {
	Type  byte
	NACKs []NACKPair // reused by ParseFeedback
}

var ErrFeedback = errors.New("relay: malformed feedback")

// ParseFeedback reads body into f, reusing f.NACKs.
func ParseFeedback(body []byte, f *Feedback) error {
	f.NACKs = f.NACKs[:0]
	if len(body) < 1 {
		return ErrFeedback
	}
	f.Type = body[0]
	switch f.Type {
	case FeedbackKeyframe:
		if len(body) != 1 {
			return ErrFeedback
		}
	case FeedbackNACK:
		rest := body[1:]
		if len(rest) == 0 || len(rest)%4 != 0 || len(rest)/4 > MaxNACKPairs {
			return ErrFeedback
		}
		for ; len(rest) > 0; rest = rest[4:] {
			f.NACKs = append(f.NACKs, NACKPair{binary.BigEndian.Uint16(rest), binary.BigEndian.Uint16(rest[2:])})
		}
	default:
		return ErrFeedback
	}
	return nil
}

// AppendKeyframeRequest appends a keyframe request body to b.
func AppendKeyframeRequest(b []byte) []byte { return append(b, FeedbackKeyframe) }

// AppendNACK appends a NACK body for pairs (at most MaxNACKPairs) to b.
func AppendNACK(b []byte, pairs []NACKPair) []byte {
	b = append(b, FeedbackNACK)
	for _, p := range pairs[:min(len(pairs), MaxNACKPairs)] {
		b = binary.BigEndian.AppendUint16(b, p.First)
		b = binary.BigEndian.AppendUint16(b, p.Mask)
	}
	return b
}

// AppendLost appends every sequence number p names to dst (Lost without a
// function value, for the relay's reader: no allocation).
func (p NACKPair) AppendLost(dst []uint16) []uint16 {
	dst = append(dst, p.First)
	for i := range 16 {
		if p.Mask&(1<<i) != 0 {
			dst = append(dst, p.First+uint16(i)+1)
		}
	}
	return dst
}

// Lost calls fn with every sequence number p names.
func (p NACKPair) Lost(fn func(seq uint16)) {
	fn(p.First)
	for i := range 16 {
		if p.Mask&(1<<i) != 0 {
			fn(p.First + uint16(i) + 1)
		}
	}
}
