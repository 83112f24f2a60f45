//go:build !linux

package wire

import (
	"net/netip"
	"syscall"
)

type rawConn = syscall.RawConn

type sockaddr struct{}

func makeSockaddr(netip.AddrPort) sockaddr { return sockaddr{} }

func probeGSO(rawConn) bool { return false }

// batchSys without sendmmsg or GSO: one write per datagram.
type batchSys struct{}

func (s *batchSys) init(*Batch, int) {}

// queued: not known here, so a holding owner flushes after every datagram.
func (s *batchSys) queued(*Socket) bool { return false }

func (s *batchSys) send(b *Batch, run []int32) (sent, calls, trains int) {
	for _, i := range run {
		off := int(i) * SlotSize
		if _, err := b.dests[i].Sock.conn.WriteToUDPAddrPort(b.buf[off:off+b.lens[i]], b.dests[i].Addr); err == nil {
			sent++
		}
		calls++
	}
	return sent, calls, 0
}
