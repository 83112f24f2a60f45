//go:build linux && (amd64 || arm64)

package peer

import (
	"net"
	"testing"
	"time"

	"github.com/podium-sfu/podium/internal/wire"
)

// The kernel stamps a datagram when it arrives, not when we read it.
func TestKernelArrivalStamp(t *testing.T) {
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !enableRxTimestamps(c) {
		t.Fatal("SO_TIMESTAMPNS refused")
	}
	out, err := net.DialUDP("udp4", nil, c.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	sent := time.Now()
	if _, err := out.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // read late
	var b [16]byte
	var oob [wire.ReadOOBSize]byte // what the socket reader keeps per datagram
	_, oobn, _, _, err := c.ReadMsgUDPAddrPort(b[:], oob[:])
	if err != nil {
		t.Fatal(err)
	}
	at, ok := rxTime(oob[:oobn])
	if !ok {
		t.Fatalf("no stamp in %d bytes of control messages", oobn)
	}
	if d := at.Sub(sent); d < -time.Millisecond || d > 20*time.Millisecond {
		t.Errorf("stamped %v after sending, want about 0 (it was read 50 ms later)", d)
	}
}

func TestRxTimeRejectsTruncatedControlMessages(t *testing.T) {
	for _, oob := range [][]byte{nil, make([]byte, 8), {200, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 35, 0, 0, 0}} {
		if _, ok := rxTime(oob); ok {
			t.Errorf("stamp found in %v", oob)
		}
	}
}
