package load

import (
	"net"
	"testing"
	"time"
)

// TestDelayConn: datagrams sent through a delayed socket and echoed back wait
// the delay on the way out and again on the way in, and keep their order.
func TestDelayConn(t *testing.T) {
	const delay = 20 * time.Millisecond
	n, err := newDelayNet(delay)
	if err != nil {
		t.Fatal(err)
	}
	c, err := n.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	echo, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		b := make([]byte, 100)
		for {
			k, a, err := echo.ReadFrom(b)
			if err != nil {
				return
			}
			_, _ = echo.WriteTo(b[:k], a)
		}
	}()
	start := time.Now()
	for i := range 5 {
		if _, err := c.WriteTo([]byte{byte(i)}, echo.LocalAddr()); err != nil {
			t.Fatal(err)
		}
	}
	b := make([]byte, 100)
	for i := range 5 {
		k, _, err := c.ReadFrom(b)
		if err != nil {
			t.Fatal(err)
		}
		if k != 1 || b[0] != byte(i) {
			t.Fatalf("datagram %d: got %v", i, b[:k])
		}
	}
	// Sent and received through the delayed socket: one delay out, one back.
	if rtt := time.Since(start); rtt < 2*delay || rtt > 2*delay+500*time.Millisecond {
		t.Fatalf("round trip %v through a %v one-way delay", rtt, delay)
	}
}
