package clip

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
	"time"
)

func TestEmbeddedVideoClips(t *testing.T) {
	for _, c := range []struct {
		name          string
		width, height int
		fps           int
		kbps          int
	}{
		{Video180p, 320, 180, 30, 150},
		{Video360p, 640, 360, 30, 500},
		{Video720p, 1280, 720, 30, 2500},
		{Video180p15, 320, 180, 15, 100},
	} {
		v, err := LoadVideo(c.name)
		if err != nil {
			t.Fatal(err)
		}
		if v.Width != c.width || v.Height != c.height {
			t.Errorf("%s: %dx%d, want %dx%d", c.name, v.Width, v.Height, c.width, c.height)
		}
		if want := time.Second / time.Duration(c.fps); v.FrameDuration < want-time.Millisecond || v.FrameDuration > want+time.Millisecond {
			t.Errorf("%s: frame duration %v, want %v", c.name, v.FrameDuration, want)
		}
		if kbps := v.Bitrate() / 1000; kbps < c.kbps*8/10 || kbps > c.kbps*12/10 {
			t.Errorf("%s: %d kb/s, want about %d", c.name, kbps, c.kbps)
		}
		if got := time.Duration(len(v.Frames)) * v.FrameDuration; got < 3900*time.Millisecond || got > 4100*time.Millisecond {
			t.Errorf("%s lasts %v, want 4 s", c.name, got)
		}
		keys := 0
		for i, f := range v.Frames {
			if f.Key {
				keys++
				if f.TID != 0 {
					t.Errorf("%s: keyframe %d in temporal layer %d", c.name, i, f.TID)
				}
				if i%4 != 0 {
					t.Errorf("%s: keyframe %d breaks the 4-frame temporal pattern", c.name, i)
				}
			}
		}
		// A keyframe every 1.33 s: 3 in a 4 s clip.
		if keys != 3 {
			t.Errorf("%s: %d keyframes, want 3", c.name, keys)
		}
		if got := v.NextKey(1); !v.Frames[got].Key || got == 0 {
			t.Errorf("%s: NextKey(1) = %d", c.name, got)
		}
		if got := v.NextKey(len(v.Frames) - 1); got != 0 {
			t.Errorf("%s: NextKey(last) = %d, want to wrap to 0", c.name, got)
		}
	}
}

func TestEmbeddedAudioClips(t *testing.T) {
	for _, name := range []string{Speech, Noise} {
		a, err := LoadAudio(name)
		if err != nil {
			t.Fatal(err)
		}
		if len(a.Packets) < 150 {
			t.Errorf("%s: %d packets", name, len(a.Packets))
		}
		if d := len(a.Packets) - len(a.Levels); d < -2 || d > 2 {
			t.Errorf("%s: %d packets but %d levels", name, len(a.Packets), len(a.Levels))
		}
		for i, p := range a.Packets {
			if len(p) == 0 || len(p) > 400 {
				t.Fatalf("%s: packet %d has %d bytes", name, i, len(p))
			}
		}
	}
	speech, _ := LoadAudio(Speech)
	noise, _ := LoadAudio(Noise)
	loud := func(a *Audio) (n int) {
		for _, l := range a.Levels {
			if l < 50 {
				n++
			}
		}
		return n
	}
	if loud(speech) < len(speech.Levels)/3 {
		t.Errorf("speech has only %d of %d frames louder than -50 dBov", loud(speech), len(speech.Levels))
	}
	if loud(noise) != 0 {
		t.Errorf("room noise has %d frames louder than -50 dBov", loud(noise))
	}
}

// ivf builds an IVF file of frames at 1/30 s.
func ivf(frames ...[]byte) []byte {
	var b bytes.Buffer
	h := make([]byte, 32)
	copy(h, "DKIF")
	binary.LittleEndian.PutUint16(h[6:], 32)
	copy(h[8:], "VP80")
	binary.LittleEndian.PutUint16(h[12:], 64)
	binary.LittleEndian.PutUint16(h[14:], 48)
	binary.LittleEndian.PutUint32(h[16:], 30)
	binary.LittleEndian.PutUint32(h[20:], 1)
	b.Write(h)
	for i, f := range frames {
		fh := make([]byte, 12)
		binary.LittleEndian.PutUint32(fh, uint32(len(f)))
		binary.LittleEndian.PutUint64(fh[4:], uint64(i))
		b.Write(fh)
		b.Write(f)
	}
	return b.Bytes()
}

func TestParseIVF(t *testing.T) {
	key, delta := []byte{0x10, 1, 2}, []byte{0x11, 3}
	v, err := ParseIVF(ivf(key, delta, delta, delta, delta, key))
	if err != nil {
		t.Fatal(err)
	}
	if v.Width != 64 || v.Height != 48 || len(v.Frames) != 6 {
		t.Fatalf("parsed %dx%d with %d frames", v.Width, v.Height, len(v.Frames))
	}
	if v.FrameDuration < 33*time.Millisecond || v.FrameDuration > 34*time.Millisecond {
		t.Errorf("frame duration %v", v.FrameDuration)
	}
	want := []struct {
		key  bool
		tid  uint8
		sync bool
	}{{true, 0, false}, {false, 2, true}, {false, 1, true}, {false, 2, false}, {false, 0, false}, {true, 0, false}}
	for i, w := range want {
		f := v.Frames[i]
		if f.Key != w.key || f.TID != w.tid || f.Sync != w.sync {
			t.Errorf("frame %d: key %v tid %d sync %v, want %v %d %v", i, f.Key, f.TID, f.Sync, w.key, w.tid, w.sync)
		}
	}
	for name, b := range map[string][]byte{
		"empty":           nil,
		"not ivf":         []byte("RIFF0000000000000000000000000000"),
		"no frames":       ivf(),
		"delta first":     ivf(delta),
		"truncated frame": ivf(key)[:34],
		"zero frame":      ivf([]byte{}),
	} {
		if _, err := ParseIVF(b); !errors.Is(err, ErrFormat) {
			t.Errorf("%s: err %v, want ErrFormat", name, err)
		}
	}
}

// oggPage builds one Ogg page carrying segs (lacing values) over body.
func oggPage(flags byte, lacing []byte, body []byte) []byte {
	h := make([]byte, 27)
	copy(h, "OggS")
	h[5] = flags
	h[26] = byte(len(lacing))
	return append(append(h, lacing...), body...)
}

func TestParseOggOpus(t *testing.T) {
	head := append([]byte("OpusHead"), make([]byte, 11)...)
	tags := []byte("OpusTags")
	big := bytes.Repeat([]byte{7}, 300) // spans two pages: 255 on the first, 45 on the next
	var file []byte
	file = append(file, oggPage(2, []byte{byte(len(head))}, head)...)
	file = append(file, oggPage(0, []byte{byte(len(tags))}, tags)...)
	file = append(file, oggPage(0, []byte{3, 255}, append([]byte{1, 2, 3}, big[:255]...))...)
	file = append(file, oggPage(1, []byte{45, 2}, append(append([]byte(nil), big[255:]...), 9, 9))...)
	packets, err := ParseOggOpus(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(packets) != 3 || !bytes.Equal(packets[0], []byte{1, 2, 3}) || !bytes.Equal(packets[1], big) || !bytes.Equal(packets[2], []byte{9, 9}) {
		t.Fatalf("packets %v", packets)
	}
	for name, b := range map[string][]byte{
		"empty":     nil,
		"not ogg":   []byte("this is not an ogg file at all, really"),
		"no head":   oggPage(0, []byte{3}, []byte{1, 2, 3}),
		"truncated": file[:len(file)-1],
	} {
		if _, err := ParseOggOpus(b); !errors.Is(err, ErrFormat) {
			t.Errorf("%s: err %v, want ErrFormat", name, err)
		}
	}
}

func FuzzParseIVF(f *testing.F) {
	f.Add(ivf([]byte{0x10, 1}, []byte{0x11}))
	f.Add([]byte("DKIF"))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := ParseIVF(b)
		if err != nil {
			return
		}
		for _, fr := range v.Frames {
			if len(fr.Data) == 0 {
				t.Fatal("empty frame accepted")
			}
		}
		_ = v.NextKey(len(v.Frames) / 2)
	})
}

func FuzzParseOggOpus(f *testing.F) {
	head := append([]byte("OpusHead"), make([]byte, 11)...)
	f.Add(append(oggPage(2, []byte{byte(len(head))}, head), oggPage(0, []byte{2, 1}, []byte{1, 2, 3})...))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = ParseOggOpus(b)
	})
}
