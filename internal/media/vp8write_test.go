package media

import (
	"testing"
)

func TestPutVP8DescriptorRoundTrips(t *testing.T) {
	for _, d := range []VP8Descriptor{
		{Start: true},
		{Start: false, PartitionID: 3, NonReference: true},
		{Extended: true, Start: true, HasPictureID: true, PictureIDBits: 15, PictureID: 0x7abc},
		{Extended: true, HasPictureID: true, PictureIDBits: 7, PictureID: 0x55},
		{Extended: true, Start: true, HasPictureID: true, PictureIDBits: 15, PictureID: 513,
			HasTL0PICIDX: true, TL0PICIDX: 200, HasTID: true, TID: 2, LayerSync: true},
		{Extended: true, HasTID: true, TID: 1, HasKEYIDX: true, KEYIDX: 17},
		{Extended: true, HasKEYIDX: true, KEYIDX: 31},
	} {
		buf := make([]byte, 16)
		n, err := PutVP8Descriptor(buf, &d)
		if err != nil {
			t.Fatalf("%+v: %v", d, err)
		}
		if n != VP8DescriptorLen(&d) {
			t.Errorf("%+v: wrote %d bytes, VP8DescriptorLen says %d", d, n, VP8DescriptorLen(&d))
		}
		buf[n] = 0x01 // a delta frame's tag follows
		var got VP8Descriptor
		if err := ParseVP8(buf[:n+1], &got); err != nil {
			t.Fatalf("%+v: parse: %v", d, err)
		}
		want := d
		want.HeaderLen = n
		if !want.HasPictureID {
			want.PictureIDBits = 0
		}
		if got != want {
			t.Errorf("round trip\n got %+v\nwant %+v", got, want)
		}
	}
	if _, err := PutVP8Descriptor(make([]byte, 3), &VP8Descriptor{Extended: true, HasPictureID: true, PictureIDBits: 15, HasTL0PICIDX: true}); err != ErrShortPacket {
		t.Errorf("short buffer: %v", err)
	}
}

func TestPutVP8DescriptorMarksKeyframes(t *testing.T) {
	d := VP8Descriptor{Extended: true, Start: true, HasPictureID: true, PictureIDBits: 15, HasTL0PICIDX: true, HasTID: true}
	buf := make([]byte, 16)
	n, _ := PutVP8Descriptor(buf, &d)
	buf[n] = 0x10 // frame tag with P = 0: a keyframe
	var got VP8Descriptor
	if err := ParseVP8(buf[:n+1], &got); err != nil || !got.IsKeyframe() {
		t.Errorf("keyframe start not recognised: %v %+v", err, got)
	}
}
