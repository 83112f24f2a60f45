package rewrite

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/podium-sfu/podium/internal/media"
)

func TestApply(t *testing.T) {
	out := Output{SequenceNumber: 0xfedc, Timestamp: 0x89abcdef, PictureID: 0x1234, TL0PICIDX: 0x56, KEYIDX: 0x17, Marker: true}
	tests := []struct {
		name string
		spec pktSpec
	}{
		{"every field, 15-bit picture id", pktSpec{ext: true, pidBits: 15, pid: 7, hasL: true, tl0: 9, hasT: true, tid: 2, sync: true, hasK: true, keyidx: 3, start: true}},
		{"7-bit picture id takes the low bits", pktSpec{pidBits: 7, pid: 7, hasL: true, hasT: true, tid: 1}},
		{"TID only", pktSpec{hasT: true, tid: 1, marker: true}},
		{"K only", pktSpec{hasK: true, keyidx: 30}},
		{"L only", pktSpec{hasL: true, tl0: 200}},
		{"X without fields", pktSpec{start: true, key: true}},
		{"no X", pktSpec{noX: true, start: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.spec.seq, tt.spec.ts, tt.spec.ssrc, tt.spec.body = 1, 2, 3, []byte{9, 8, 7}
			checkApplied(t, tt.spec.build(), out)
			unmarked := out
			unmarked.Marker = false
			checkApplied(t, tt.spec.build(), unmarked)
		})
	}
}

func TestApplyErrors(t *testing.T) {
	good := pktSpec{seq: 1, ts: 2, ssrc: 3, pidBits: 15, pid: 4, hasL: true, start: true}.build()
	var h media.RTPHeader
	if err := media.ParseRTPHeader(good, &h); err != nil {
		t.Fatal(err)
	}
	out := Output{SequenceNumber: 99, Timestamp: 99, PictureID: 99}
	truncated := func(n int) ([]byte, media.RTPHeader) {
		b := slices.Clone(good[:n])
		hh := h
		hh.PayloadEnd = n
		return b, hh
	}
	tests := []struct {
		name string
		b    []byte
		h    media.RTPHeader
	}{
		{"shorter than an RTP header", good[:11], h},
		{"header offsets past the packet", good[:15], h},
		{"payload offset inside the fixed header", good, func() media.RTPHeader { hh := h; hh.PayloadOffset = 4; return hh }()},
		{"empty payload", good, func() media.RTPHeader { hh := h; hh.PayloadEnd = hh.PayloadOffset; return hh }()},
	}
	for _, n := range []int{13, 14, 15, 16} { // X, I (15-bit), L cut short
		b, hh := truncated(n)
		tests = append(tests, struct {
			name string
			b    []byte
			h    media.RTPHeader
		}{fmt.Sprintf("descriptor cut at byte %d", n), b, hh})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := slices.Clone(tt.b)
			if err := Apply(b, &tt.h, out); !errors.Is(err, media.ErrShortPacket) {
				t.Fatalf("Apply = %v, want ErrShortPacket", err)
			}
			if !bytes.Equal(b, tt.b) {
				t.Fatal("packet changed on error")
			}
		})
	}
}
