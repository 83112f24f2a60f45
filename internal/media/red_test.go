package media

import (
	"bytes"
	"errors"
	"testing"
)

func TestParseRED(t *testing.T) {
	for _, c := range []struct {
		name    string
		payload []byte
		room    int // len of the red slice given
		want    []REDBlock
		primary REDBlock
		err     error
	}{
		{name: "primary only", payload: []byte{111, 0xaa, 0xbb}, room: 2,
			primary: REDBlock{PayloadType: 111, Data: []byte{0xaa, 0xbb}}},
		{name: "primary empty", payload: []byte{111}, room: 2, primary: REDBlock{PayloadType: 111, Data: []byte{}}},
		// RFC 2198's figure: a block 960 ticks back (20 ms of Opus), 3 bytes.
		{name: "one redundant", payload: []byte{0x80 | 111, 0x0f, 0x00, 3, 111, 1, 2, 3, 9, 9},
			room: 2, want: []REDBlock{{PayloadType: 111, TSOffset: 960, Data: []byte{1, 2, 3}}},
			primary: REDBlock{PayloadType: 111, Data: []byte{9, 9}}},
		{name: "largest offset and length", payload: append([]byte{0x80 | 111, 0xff, 0xff, 0xff, 111}, make([]byte, REDMaxBlock+1)...),
			room: 1, want: []REDBlock{{PayloadType: 111, TSOffset: REDMaxOffset, Data: make([]byte, REDMaxBlock)}},
			primary: REDBlock{PayloadType: 111, Data: []byte{0}}},
		{name: "two redundant, room for the newest", payload: []byte{0x80 | 111, 0x1e, 0x00, 1, 0x80 | 111, 0x0f, 0x00, 2, 111, 7, 8, 8, 9},
			room: 1, want: []REDBlock{{PayloadType: 111, TSOffset: 960, Data: []byte{8, 8}}},
			primary: REDBlock{PayloadType: 111, Data: []byte{9}}},
		{name: "two redundant, no room", payload: []byte{0x80 | 111, 0x1e, 0x00, 1, 0x80 | 111, 0x0f, 0x00, 2, 111, 7, 8, 8, 9},
			room: 0, primary: REDBlock{PayloadType: 111, Data: []byte{9}}},
		{name: "empty", payload: nil, err: ErrBadRED},
		{name: "only redundant headers", payload: []byte{0x80 | 111, 0, 0, 0}, err: ErrBadRED},
		{name: "header cut", payload: []byte{0x80 | 111, 0, 0}, err: ErrBadRED},
		{name: "block longer than the payload", payload: []byte{0x80 | 111, 0, 0, 5, 111, 1, 2, 3, 4}, err: ErrBadRED},
	} {
		red := make([]REDBlock, c.room)
		primary, n, err := ParseRED(c.payload, red)
		if !errors.Is(err, c.err) {
			t.Errorf("%s: err %v, want %v", c.name, err, c.err)
			continue
		}
		if err != nil {
			continue
		}
		if !sameBlock(primary, c.primary) {
			t.Errorf("%s: primary %+v, want %+v", c.name, primary, c.primary)
		}
		if n != len(c.want) {
			t.Errorf("%s: %d redundant blocks, want %d", c.name, n, len(c.want))
			continue
		}
		for i := range n {
			if !sameBlock(red[i], c.want[i]) {
				t.Errorf("%s: block %d %+v, want %+v", c.name, i, red[i], c.want[i])
			}
		}
	}
}

func sameBlock(a, b REDBlock) bool {
	return a.PayloadType == b.PayloadType && a.TSOffset == b.TSOffset && bytes.Equal(a.Data, b.Data)
}

func TestAppendRED(t *testing.T) {
	red := []REDBlock{{PayloadType: 111, TSOffset: 1920, Data: []byte{1}}, {PayloadType: 111, TSOffset: 960, Data: []byte{2, 2}}}
	got, err := AppendRED(nil, red, 111, []byte{3, 3, 3})
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{0x80 | 111, 0x1e, 0x00, 1, 0x80 | 111, 0x0f, 0x00, 2, 111, 1, 2, 2, 3, 3, 3}
	if !bytes.Equal(got, want) {
		t.Fatalf("AppendRED = % x, want % x", got, want)
	}
	back := make([]REDBlock, 2)
	primary, n, err := ParseRED(got, back)
	if err != nil || n != 2 || !sameBlock(back[0], red[0]) || !sameBlock(back[1], red[1]) || !bytes.Equal(primary.Data, []byte{3, 3, 3}) {
		t.Fatalf("parsed back: %+v %d %v %+v", primary, n, err, back)
	}

	dst := make([]byte, 0, 64)
	if allocs := testing.AllocsPerRun(100, func() { dst, _ = AppendRED(dst[:0], red, 111, []byte{3}) }); allocs != 0 {
		t.Errorf("AppendRED allocates %.0f times with room in dst", allocs)
	}
	if allocs := testing.AllocsPerRun(100, func() { _, _, _ = ParseRED(want, back) }); allocs != 0 {
		t.Errorf("ParseRED allocates %.0f times", allocs)
	}

	for _, bad := range []struct {
		red []REDBlock
		pt  uint8
	}{
		{[]REDBlock{{PayloadType: 111, TSOffset: REDMaxOffset + 1}}, 111},
		{[]REDBlock{{PayloadType: 111, Data: make([]byte, REDMaxBlock+1)}}, 111},
		{[]REDBlock{{PayloadType: 128}}, 111},
		{nil, 128},
	} {
		out, err := AppendRED([]byte{42}, bad.red, bad.pt, nil)
		if !errors.Is(err, ErrREDBlock) || !bytes.Equal(out, []byte{42}) {
			t.Errorf("AppendRED(%+v, %d) = % x, %v; want dst unchanged and ErrREDBlock", bad.red, bad.pt, out, err)
		}
	}
}

// Untrusted bytes from a publisher: ParseRED never panics, its blocks lie
// within the payload, and a payload it accepts is rebuilt byte for byte
// from what it returned.
func FuzzParseRED(f *testing.F) {
	f.Add([]byte{111, 1, 2})
	f.Add([]byte{0x80 | 111, 0x0f, 0x00, 2, 111, 8, 8, 9})
	f.Add([]byte{0x80 | 111, 0x1e, 0x00, 1, 0x80 | 111, 0x0f, 0x00, 2, 111, 7, 8, 8, 9})
	f.Add([]byte{0x80 | 111, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		red := make([]REDBlock, 8)
		primary, n, err := ParseRED(b, red)
		if err != nil {
			return
		}
		if n == len(red) {
			return // some blocks may have been skipped: nothing to rebuild from
		}
		again, err := AppendRED(nil, red[:n], primary.PayloadType, primary.Data)
		if err != nil {
			t.Fatalf("rebuilding % x: %v", b, err)
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("rebuilt % x from % x", again, b)
		}
	})
}
