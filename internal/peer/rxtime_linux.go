//go:build linux && (amd64 || arm64)

package peer

import (
	"encoding/binary"
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// enableRxTimestamps asks the kernel to stamp every datagram c receives with
// its arrival time (SO_TIMESTAMPNS), which no scheduling delay of ours shifts.
func enableRxTimestamps(c *net.UDPConn) bool {
	raw, err := c.SyscallConn()
	if err != nil {
		return false
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
	}); err != nil {
		return false
	}
	return serr == nil
}

// rxTime finds the kernel's arrival stamp among the control messages in oob
// (64-bit layout: a 16-byte header, then a 16-byte timespec).
func rxTime(oob []byte) (time.Time, bool) {
	const header, timespec = 16, 16
	for len(oob) >= header {
		n := int(binary.NativeEndian.Uint64(oob))
		level := int32(binary.NativeEndian.Uint32(oob[8:]))
		typ := int32(binary.NativeEndian.Uint32(oob[12:]))
		if n < header || n > len(oob) {
			return time.Time{}, false
		}
		if level == unix.SOL_SOCKET && typ == unix.SCM_TIMESTAMPNS && n >= header+timespec {
			sec := int64(binary.NativeEndian.Uint64(oob[header:]))
			nsec := int64(binary.NativeEndian.Uint64(oob[header+8:]))
			return time.Unix(sec, nsec), true
		}
		oob = oob[min((n+7)&^7, len(oob)):]
	}
	return time.Time{}, false
}
