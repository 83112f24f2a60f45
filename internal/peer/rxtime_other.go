//go:build !(linux && (amd64 || arm64))

package peer

import (
	"net"
	"time"
)

// enableRxTimestamps: kernel arrival stamps are read on 64-bit Linux only;
// elsewhere datagrams are stamped when read.
func enableRxTimestamps(*net.UDPConn) bool { return false }

func rxTime([]byte) (time.Time, bool) { return time.Time{}, false }
