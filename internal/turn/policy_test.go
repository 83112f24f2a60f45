package turn

import (
	"net/netip"
	"testing"
)

func TestDenied(t *testing.T) {
	for _, tc := range []struct {
		ip     string
		denied bool
	}{
		{"127.0.0.1", true}, {"127.255.0.9", true}, {"::1", true},
		{"10.1.2.3", true}, {"172.16.0.1", true}, {"172.31.255.255", true}, {"192.168.1.1", true},
		{"169.254.169.254", true}, {"fe80::1", true},
		{"fc00::1", true}, {"fd00:ec2::254", true},
		{"0.0.0.0", true}, {"::", true},
		{"224.0.0.1", true}, {"239.255.255.250", true}, {"ff02::1", true}, {"255.255.255.255", true},
		{"100.64.0.1", true}, {"100.100.100.200", true},
		{"::ffff:127.0.0.1", true}, {"::ffff:10.0.0.1", true},
		{"64:ff9b::a00:1", true},    // NAT64 of 10.0.0.1
		{"64:ff9b::808:808", false}, // NAT64 of 8.8.8.8
		{"2002:a00:1::1", true},     // 6to4 of 10.0.0.1
		{"2002:808:808::1", false},  // 6to4 of 8.8.8.8
		{"::7f00:1", true},          // IPv4-compatible 127.0.0.1
		{"8.8.8.8", false}, {"1.1.1.1", false}, {"172.32.0.1", false}, {"100.128.0.1", false}, {"169.255.0.1", false},
		{"2a00:1450:4001::1", false}, {"::ffff:8.8.8.8", false},
	} {
		if got := Denied(netip.MustParseAddr(tc.ip)); got != tc.denied {
			t.Errorf("Denied(%s) = %v, want %v", tc.ip, got, tc.denied)
		}
	}
	if !Denied(netip.Addr{}) {
		t.Error("the zero Addr is not denied")
	}
}

func TestPolicy(t *testing.T) {
	own := []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("10.0.0.5"), netip.MustParseAddr("203.0.114.7"), netip.MustParseAddr("::1")}
	ap := netip.MustParseAddrPort
	live := &PortSet{}
	live.Add(50001)
	live.Add(50500)
	withSFU := NewPolicy(PolicyParams{Own: own, RelayIPs: []netip.Addr{netip.MustParseAddr("10.0.0.5")}, Live: live, SFUPort: 7882})
	noSFU := NewPolicy(PolicyParams{Own: own, RelayIPs: []netip.Addr{netip.MustParseAddr("10.0.0.5")}, Live: live})
	anyRelay := NewPolicy(PolicyParams{Own: own, RelayIPs: []netip.Addr{netip.MustParseAddr("0.0.0.0")}, Live: live})
	allowing := NewPolicy(PolicyParams{Own: own, Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("10.9.0.0/16")}, Live: live})
	for _, tc := range []struct {
		name string
		p    *Policy
		addr netip.AddrPort
		ip   bool // PermitIP
		pkt  bool // PermitAddr
	}{
		{"public peer", withSFU, ap("8.8.8.8:3478"), true, true},
		{"public own address, SFU port", withSFU, ap("203.0.114.7:7882"), true, true},
		{"public own address, SSH", withSFU, ap("203.0.114.7:22"), true, false},
		{"public own address, no SFU", noSFU, ap("203.0.114.7:7882"), false, false},
		{"loopback, SFU port", withSFU, ap("127.0.0.1:7882"), true, true},
		{"loopback, another port", withSFU, ap("127.0.0.1:6379"), true, false},
		{"loopback, no SFU", noSFU, ap("127.0.0.1:7882"), false, false},
		{"loopback at a live relay's port, not a relay IP", noSFU, ap("127.0.0.1:50001"), false, false},
		{"mapped loopback", noSFU, ap("[::ffff:127.0.0.1]:7882"), false, false},
		{"relay IP, a live relay", noSFU, ap("10.0.0.5:50001"), true, true},
		{"relay IP, no relay there", noSFU, ap("10.0.0.5:50002"), true, false},
		{"relay IP, TURN port", noSFU, ap("10.0.0.5:3478"), true, false},
		{"relays on all addresses: own public address, a live relay", anyRelay, ap("203.0.114.7:50500"), true, true},
		{"relays on all addresses: no relay there", anyRelay, ap("203.0.114.7:80"), true, false},
		{"private peer", withSFU, ap("10.0.0.6:7882"), false, false},
		{"metadata", withSFU, ap("169.254.169.254:80"), false, false},
		{"ULA", withSFU, ap("[fd00::1]:7882"), false, false},
		{"multicast", withSFU, ap("239.255.255.250:1900"), false, false},
		{"unspecified", withSFU, ap("0.0.0.0:7882"), false, false},
		{"allowed loopback", allowing, ap("127.0.0.1:6379"), true, true},
		{"allowed private range", allowing, ap("10.9.1.1:80"), true, true},
		{"private outside the allowed range", allowing, ap("10.8.1.1:80"), false, false},
	} {
		if got := tc.p.PermitIP(tc.addr.Addr()); got != tc.ip {
			t.Errorf("%s: PermitIP(%s) = %v, want %v", tc.name, tc.addr.Addr(), got, tc.ip)
		}
		if got := tc.p.PermitAddr(tc.addr); got != tc.pkt {
			t.Errorf("%s: PermitAddr(%s) = %v, want %v", tc.name, tc.addr, got, tc.pkt)
		}
	}
}

func TestPolicyDoesNotAllocate(t *testing.T) {
	p := NewPolicy(PolicyParams{Own: []netip.Addr{netip.MustParseAddr("127.0.0.1")}, SFUPort: 7882})
	a, own := netip.MustParseAddrPort("8.8.8.8:3478"), netip.MustParseAddrPort("127.0.0.1:7882")
	if n := testing.AllocsPerRun(100, func() { p.PermitAddr(a); p.PermitAddr(own) }); n != 0 {
		t.Fatalf("%v allocations per PermitAddr", n)
	}
}

func TestPortSet(t *testing.T) {
	var s PortSet
	added := []uint16{0, 1, 63, 64, 7882, 65535}
	for _, p := range added {
		s.Add(p)
	}
	n := 0
	for p := range 65536 {
		if s.Has(uint16(p)) {
			n++
		}
	}
	if n != len(added) {
		t.Fatalf("%d ports in the set, want %d", n, len(added))
	}
	s.Remove(64)
	if s.Has(64) || !s.Has(63) || !s.Has(65535) {
		t.Fatal("Remove(64)")
	}
}
