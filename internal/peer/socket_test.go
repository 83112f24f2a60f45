package peer

import (
	"errors"
	"net"
	"testing"
	"time"
)

func lanIPv4(t *testing.T) net.IP {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			return n.IP.To4()
		}
	}
	t.Skip("no non-loopback IPv4 address")
	return nil
}

func receiveOn(t *testing.T, ip net.IP) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: ip})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func expect(t *testing.T, c *net.UDPConn, want string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	buf := make([]byte, 16)
	n, _, err := c.ReadFromUDP(buf)
	if err != nil || string(buf[:n]) != want {
		t.Fatalf("read %q, %v; want %q", buf[:n], err, want)
	}
}

// A socket on 127.0.0.1 sends nothing to an address another of our sockets is
// on: pion (the controlling agent of subscribe connections) nominated the pair
// 127.0.0.1 → a browser's LAN address, which Firefox never validates, and
// Firefox's subscribe connection stayed checking (issue 12, "Firefox
// participants see nobody"). Without a socket on that address (media on
// 127.0.0.1 only) the loopback socket serves it.
func TestLoopbackSocketLeavesOurOtherAddressesToTheirSockets(t *testing.T) {
	lan := lanIPv4(t)
	n, err := newObservingNet(newArrivals(), nil, &guard{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	lc, err := n.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	lo := lc.(*observingConn)
	browserLo, browserLAN := receiveOn(t, net.IPv4(127, 0, 0, 1)), receiveOn(t, lan)
	toLAN := browserLAN.LocalAddr().(*net.UDPAddr)

	// Media on 127.0.0.1 only: it reaches a browser on the LAN address.
	if _, err := lo.WriteToAddrPort([]byte("a"), toLAN.AddrPort()); err != nil {
		t.Fatal(err)
	}
	expect(t, browserLAN, "a")

	// With a socket of ours on the LAN address, that one must be used.
	sc, err := n.ListenUDP("udp4", &net.UDPAddr{IP: lan})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	if _, err := lo.WriteToAddrPort([]byte("x"), toLAN.AddrPort()); !errors.Is(err, errUseSibling) {
		t.Fatalf("WriteToAddrPort 127.0.0.1 → %v: %v, want errUseSibling", toLAN, err)
	}
	if _, err := lo.WriteTo([]byte("x"), toLAN); !errors.Is(err, errUseSibling) {
		t.Fatalf("WriteTo 127.0.0.1 → %v: %v, want errUseSibling", toLAN, err)
	}
	// Loopback to loopback and the LAN socket to anyone go through.
	if _, err := lo.WriteTo([]byte("b"), browserLo.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	expect(t, browserLo, "b")
	if _, err := sc.(*observingConn).WriteToAddrPort([]byte("c"), toLAN.AddrPort()); err != nil {
		t.Fatal(err)
	}
	expect(t, browserLAN, "c")
}
