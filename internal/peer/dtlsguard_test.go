package peer

import (
	"encoding/binary"
	"testing"
)

// record is one DTLS 1.2 record header with its content.
func record(typ byte, epoch uint16, content ...byte) []byte {
	b := make([]byte, recordHeaderLen, recordHeaderLen+len(content))
	b[0], b[1], b[2] = typ, 0xfe, 0xfd
	binary.BigEndian.PutUint16(b[3:], epoch)
	b[10] = 7 // sequence number
	binary.BigEndian.PutUint16(b[11:], uint16(len(content)))
	return append(b, content...)
}

func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

func TestPlaintextNonHandshake(t *testing.T) {
	hello := record(22, 0, 1, 0, 0, 0)
	ccs := record(20, 0, 1)
	finished := record(22, 1, make([]byte, 40)...)
	for _, tc := range []struct {
		name string
		b    []byte
		want bool
	}{
		{"empty", nil, false},
		{"RTP", []byte{0x80, 96, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0xaa}, false},
		{"STUN", []byte{0, 1, 0, 0, 0x21, 0x12, 0xa4, 0x42, 0, 0, 0, 0, 0, 0, 0}, false},
		{"epoch-0 close_notify", record(21, 0, 1, 0), true},
		{"epoch-0 fatal alert", record(21, 0, 2, 40), true},
		{"epoch-0 application data", record(23, 0, 1, 2, 3), true},
		{"epoch-0 unknown type", record(30, 0, 1, 2), true},
		{"epoch-0 heartbeat", record(24, 0, 1, 2), true},
		{"epoch-1 alert (encrypted, authenticated by pion)", record(21, 1, make([]byte, 26)...), false},
		{"epoch-1 application data", record(23, 1, make([]byte, 30)...), false},
		{"handshake flight", cat(hello, hello), false},
		{"retransmitted final flight: CCS and Finished", cat(ccs, finished), false},
		{"handshake then forged alert", cat(hello, record(21, 0, 1, 0)), true},
		{"alert after an epoch-1 record", cat(finished, record(21, 0, 2, 10)), true},
		{"truncated header", record(21, 0, 1, 0)[:10], false},
		{"length past the end: pion drops it all", cat(hello, record(22, 0, 1, 2)[:15]), false},
		{"alert before broken framing", cat(record(21, 0, 1, 0), []byte{22, 0xfe}), true},
	} {
		if got := plaintextNonHandshake(tc.b); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestGuardCountsDropsWithoutAllocating(t *testing.T) {
	var g guard
	rtp := []byte{0x80, 96, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0xaa}
	alert := record(21, 0, 1, 0)
	if n := testing.AllocsPerRun(100, func() { g.drop(rtp); g.drop(alert) }); n != 0 {
		t.Errorf("%v allocations per datagram pair", n)
	}
	g.dropped.Store(0)
	if g.drop(rtp) || !g.drop(alert) || g.dropped.Load() != 1 {
		t.Errorf("RTP dropped or alert passed: dropped count %d", g.dropped.Load())
	}
}

// FuzzPlaintextNonHandshake checks the record walk on arbitrary datagrams
// against a plain restatement of pion's record splitting.
func FuzzPlaintextNonHandshake(f *testing.F) {
	f.Add(record(21, 0, 1, 0))
	f.Add(cat(record(22, 0, 1, 0, 0, 0), record(20, 0, 1)))
	f.Add(cat(record(22, 1, 9, 9), record(23, 0, 1)))
	f.Add([]byte{0x80, 96, 0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		got := plaintextNonHandshake(b)
		want := false
		if len(b) > 0 && b[0] >= 20 && b[0] <= 63 {
			for off := 0; off+recordHeaderLen <= len(b); {
				r := b[off:]
				if r[3] == 0 && r[4] == 0 && r[0] != 20 && r[0] != 22 {
					want = true
					break
				}
				off += recordHeaderLen + int(r[11])<<8 + int(r[12])
			}
		}
		if got != want {
			t.Fatalf("plaintextNonHandshake(%x) = %v, want %v", b, got, want)
		}
	})
}
