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

// batchSys without sendmmsg: one write per datagram.
type batchSys struct{}

func (s *batchSys) init(*Batch, int) {}

func (s *batchSys) send(b *Batch, start, end int) (sent, msgs, calls int) {
	for i := start; i < end; i++ {
		off := i * SlotSize
		if _, err := b.dests[i].Sock.conn.WriteToUDPAddrPort(b.buf[off:off+b.lens[i]], b.dests[i].Addr); err == nil {
			sent++
		}
		calls++
	}
	return sent, sent, calls
}
