//go:build linux

package forward

import (
	"testing"

	"github.com/pion/srtp/v3"

	"github.com/podium-sfu/podium/internal/wire"
)

// The socket reader's batch is held: a video frame's packets wait in it until
// the frame's marker packet, then each receiver's packets of the frame leave
// together, as one GSO train where the kernel has UDP GSO, and in order.
func TestHeldBatchSendsAFrameTogether(t *testing.T) {
	const receivers, frame = 3, 4
	l := newSocketLoop(t, receivers, srtp.ProtectionProfileAeadAes128Gcm)
	var c wire.Counters
	l.out.Hold, l.out.Stats = true, &c
	for k := range frame {
		l.plain[1] = srcVideoPT
		if k == frame-1 {
			l.plain[1] |= 0x80 // marker: the frame's last packet
		}
		l.handleNext(t)
		if want := receivers * (k + 1) % (receivers * frame); l.out.Len() != want {
			t.Fatalf("after packet %d of the frame %d datagrams wait, want %d", k+1, l.out.Len(), want)
		}
	}
	if c.Datagrams.Load() != receivers*frame || c.Calls.Load() != 1 {
		t.Fatalf("%d datagrams in %d system calls, want %d in one", c.Datagrams.Load(), c.Calls.Load(), receivers*frame)
	}
	if l.sock.GSO() && c.Trains.Load() != receivers {
		t.Fatalf("%d GSO trains, want one per receiver", c.Trains.Load())
	}
	for _, e := range l.ends {
		var first uint16
		for k := range frame {
			e.read(t)
			if k == 0 {
				first = e.hdr.SequenceNumber
			} else if e.hdr.SequenceNumber != first+uint16(k) {
				t.Fatalf("receiver got sequence %d as packet %d of the frame, want %d", e.hdr.SequenceNumber, k+1, first+uint16(k))
			}
		}
	}
}
