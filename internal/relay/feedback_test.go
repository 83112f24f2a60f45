package relay

import "testing"

// AppendLost names what Lost does, appended, across the sequence wrap.
func TestAppendLost(t *testing.T) {
	p := NACKPair{First: 65535, Mask: 0x8001}
	got := p.AppendLost([]uint16{7})
	if want := []uint16{7, 65535, 0, 15}; !equal(got, want) {
		t.Fatalf("appended %v, want %v", got, want)
	}
}
