package media

import (
	"bytes"
	"testing"

	"github.com/pion/rtp"
)

// Seeds shared by the fuzz targets besides the files in testdata/fuzz.
var rtpSeeds = []string{pktOpus, pktVP8Key, pktTwoByte, pktPadding, pktCSRC, pktGeneric}

func FuzzParseRTPHeader(f *testing.F) {
	for _, s := range rtpSeeds {
		f.Add(hx(f, s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var h RTPHeader
		err := ParseRTPHeader(b, &h)
		if err == nil {
			checkHeaderInvariants(t, b, &h)
		}
		crossCheckRTP(t, b, &h, err)
	})
}

// The SRTP header parse is the RTP one without the padding: it accepts every
// packet ParseRTPHeader accepts, with the same fields, and never panics.
func FuzzParseSRTPHeader(f *testing.F) {
	for _, s := range rtpSeeds {
		f.Add(hx(f, s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var h, plain RTPHeader
		err := ParseSRTPHeader(b, &h)
		if err == nil {
			checkHeaderInvariants(t, b, &h)
		}
		if ParseRTPHeader(b, &plain) == nil {
			if err != nil {
				t.Fatalf("RTP header accepted, SRTP header refused: %v", err)
			}
			plain.PayloadEnd, plain.PaddingSize = len(b), 0
			if h != plain {
				t.Fatalf("SRTP header %+v, RTP header %+v", h, plain)
			}
		}
	})
}

func checkHeaderInvariants(t *testing.T, b []byte, h *RTPHeader) {
	t.Helper()
	if h.PayloadOffset < rtpFixedLen+4*int(h.CSRCCount) || h.PayloadOffset > h.PayloadEnd || h.PayloadEnd > len(b) {
		t.Fatalf("offsets out of range: %+v for %d bytes", *h, len(b))
	}
	if h.PayloadEnd+int(h.PaddingSize) != len(b) {
		t.Fatalf("payload end %d + padding %d != %d", h.PayloadEnd, h.PaddingSize, len(b))
	}
	if h.Extension && h.ExtensionOffset+h.ExtensionLen != h.PayloadOffset {
		t.Fatalf("extension block %d+%d does not end at payload %d", h.ExtensionOffset, h.ExtensionLen, h.PayloadOffset)
	}
	for id := range 256 {
		ext, ok := FindExtension(b, h, uint8(id))
		if !ok {
			continue
		}
		if len(ext) > h.ExtensionLen || !within(b[h.ExtensionOffset:h.PayloadOffset], ext) {
			t.Fatalf("extension %d (%d bytes) outside the block", id, len(ext))
		}
	}
}

// within reports whether sub aliases a range inside outer.
func within(outer, sub []byte) bool {
	if len(sub) == 0 {
		return true
	}
	for i := 0; i+len(sub) <= len(outer); i++ {
		if &outer[i] == &sub[0] {
			return true
		}
	}
	return false
}

func FuzzAudioLevel(f *testing.F) {
	for _, s := range rtpSeeds {
		f.Add(hx(f, s), uint8(1))
	}
	f.Add(hx(f, pktTwoByte), uint8(200))
	f.Fuzz(func(t *testing.T, b []byte, id uint8) {
		var h RTPHeader
		if ParseRTPHeader(b, &h) != nil {
			return
		}
		ext, found := FindExtension(b, &h, id)
		level, voice, ok := AudioLevel(ext)
		if ok && (!found || level > 127) {
			t.Fatalf("level %d ok=%v from found=%v", level, ok, found)
		}
		// See crossCheckRTP for the profiles pion treats differently; pion
		// also returns a non-RFC 8285 block as "extension 0".
		var p rtp.Packet
		if id == 0 || p.Unmarshal(b) != nil ||
			(h.ExtensionProfile&profileTwoByteMask == ProfileTwoByte && h.ExtensionProfile != ProfileTwoByte) {
			return
		}
		var a rtp.AudioLevelExtension
		perr := a.Unmarshal(p.GetExtension(id))
		if ok != (perr == nil) || ok && (a.Level != level || a.Voice != voice) {
			t.Fatalf("ours %d %v %v, pion %+v %v", level, voice, ok, a, perr)
		}
	})
}

func FuzzParseVP8(f *testing.F) {
	for _, s := range vp8Seeds {
		f.Add(hx(f, s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var d VP8Descriptor
		err := ParseVP8(b, &d)
		crossCheckVP8(t, b, &d, err)
		if err != nil {
			return
		}
		if d.HeaderLen < 1 || d.HeaderLen > len(b) {
			t.Fatalf("header length %d of %d bytes", d.HeaderLen, len(b))
		}
		wantKey := d.Start && d.PartitionID == 0 && d.HeaderLen < len(b) && b[d.HeaderLen]&1 == 0
		if d.IsKeyframe() != wantKey {
			t.Fatalf("IsKeyframe %v, want %v", d.IsKeyframe(), wantKey)
		}
		checkRewrites(t, b, &d)
	})
}

// checkRewrites checks that each writer changes exactly its own field, or
// reports it absent and leaves the bytes alone.
func checkRewrites(t *testing.T, b []byte, d *VP8Descriptor) {
	t.Helper()
	const pid, tl0, key = 0x5a5a, 0xa5, 0x15
	c := bytes.Clone(b)
	err := SetVP8PictureID(c, pid)
	want := *d
	if d.HasPictureID {
		want.PictureID = pid & (1<<d.PictureIDBits - 1)
	}
	checkRewrite(t, "picture id", b, c, err, d.HasPictureID, want)

	c = bytes.Clone(b)
	err = SetVP8TL0PICIDX(c, tl0)
	want = *d
	if d.HasTL0PICIDX {
		want.TL0PICIDX = tl0
	}
	checkRewrite(t, "TL0PICIDX", b, c, err, d.HasTL0PICIDX, want)

	c = bytes.Clone(b)
	err = SetVP8KEYIDX(c, key)
	want = *d
	if d.HasKEYIDX {
		want.KEYIDX = key
	}
	checkRewrite(t, "KEYIDX", b, c, err, d.HasKEYIDX, want)
}

func checkRewrite(t *testing.T, field string, orig, rewritten []byte, err error, present bool, want VP8Descriptor) {
	t.Helper()
	if present != (err == nil) {
		t.Fatalf("%s: present=%v but err=%v", field, present, err)
	}
	if !present && !bytes.Equal(orig, rewritten) {
		t.Fatalf("%s: absent field rewrite changed bytes", field)
	}
	var got VP8Descriptor
	if err := ParseVP8(rewritten, &got); err != nil {
		t.Fatalf("%s: rewritten payload no longer parses: %v", field, err)
	}
	if got != want {
		t.Fatalf("%s rewrite of % x:\n got %+v\nwant %+v", field, orig, got, want)
	}
	if !bytes.Equal(orig[want.HeaderLen:], rewritten[want.HeaderLen:]) {
		t.Fatalf("%s: rewrite touched the VP8 payload", field)
	}
}
