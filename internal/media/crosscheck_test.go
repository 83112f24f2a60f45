package media

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
	"testing"

	"github.com/pion/rtp"
	"github.com/pion/rtp/codecs"
)

// crossCheckRTP compares ParseRTPHeader's verdict on b (err, and h when err
// is nil) with pion/rtp's. It skips what pion does not define the same way:
// pion ignores the version field, and treats two-byte profiles with
// non-zero application bits (0x1001..0x100F) as opaque.
func crossCheckRTP(t testing.TB, b []byte, h *RTPHeader, err error) {
	t.Helper()
	if errors.Is(err, ErrBadVersion) {
		return
	}
	appBits := false
	if len(b) >= rtpFixedLen && b[0]&0x10 != 0 {
		if n := rtpFixedLen + 4*int(b[0]&0x0f); len(b) >= n+2 {
			p := binary.BigEndian.Uint16(b[n:])
			appBits = p&profileTwoByteMask == ProfileTwoByte && p != ProfileTwoByte
		}
	}
	var p rtp.Packet
	perr := p.Unmarshal(b)
	if appBits && errors.Is(err, ErrBadExtension) {
		return
	}
	if (err == nil) != (perr == nil) {
		t.Fatalf("packet % x: ours err=%v, pion err=%v", b, err, perr)
	}
	if err != nil {
		return
	}
	if h.Marker != p.Marker || h.PayloadType != p.PayloadType || h.SequenceNumber != p.SequenceNumber ||
		h.Timestamp != p.Timestamp || h.SSRC != p.SSRC || h.Extension != p.Extension ||
		h.PaddingSize != p.Header.PaddingSize {
		t.Fatalf("packet % x: ours %+v, pion %+v", b, *h, p.Header)
	}
	if h.Extension && h.ExtensionProfile != p.ExtensionProfile {
		t.Fatalf("packet % x: profile %x, pion %x", b, h.ExtensionProfile, p.ExtensionProfile)
	}
	csrc := make([]uint32, h.CSRCCount)
	for i := range csrc {
		csrc[i] = h.CSRC(b, i)
	}
	if !slices.Equal(csrc, p.CSRC) {
		t.Fatalf("packet % x: CSRC %v, pion %v", b, csrc, p.CSRC)
	}
	if !bytes.Equal(h.Payload(b), p.Payload) {
		t.Fatalf("packet % x: payload % x, pion % x", b, h.Payload(b), p.Payload)
	}
	if appBits {
		return
	}
	for id := 1; id < 256; id++ {
		ours, ok := FindExtension(b, h, uint8(id))
		theirs := p.GetExtension(uint8(id))
		if ok != (theirs != nil) || !bytes.Equal(ours, theirs) {
			t.Fatalf("packet % x: extension %d = % x %v, pion % x", b, id, ours, ok, theirs)
		}
	}
}

// crossCheckVP8 compares ParseVP8's verdict on b with pion/rtp/codecs'.
func crossCheckVP8(t testing.TB, b []byte, d *VP8Descriptor, err error) {
	t.Helper()
	var p codecs.VP8Packet
	payload, perr := p.Unmarshal(b)
	if (err == nil) != (perr == nil) {
		t.Fatalf("payload % x: ours err=%v, pion err=%v", b, err, perr)
	}
	if err != nil {
		return
	}
	bit := func(v bool) uint8 {
		if v {
			return 1
		}
		return 0
	}
	type fields struct {
		X, N, S, PID, I, L, T, K, TL0PICIDX, TID, Y, KEYIDX uint8
		PictureID                                           uint16
	}
	ours := fields{
		bit(d.Extended), bit(d.NonReference), bit(d.Start), d.PartitionID,
		bit(d.HasPictureID), bit(d.HasTL0PICIDX), bit(d.HasTID), bit(d.HasKEYIDX),
		d.TL0PICIDX, d.TID, bit(d.LayerSync), d.KEYIDX, d.PictureID,
	}
	theirs := fields{p.X, p.N, p.S, p.PID, p.I, p.L, p.T, p.K, p.TL0PICIDX, p.TID, p.Y, p.KEYIDX, p.PictureID}
	if ours != theirs {
		t.Fatalf("payload % x:\n ours %+v\npion %+v", b, ours, theirs)
	}
	if d.HeaderLen != len(b)-len(payload) {
		t.Fatalf("payload % x: header length %d, pion %d", b, d.HeaderLen, len(b)-len(payload))
	}
}
