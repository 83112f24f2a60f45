package turn

import (
	"net/netip"
	"slices"
	"sync/atomic"
)

// Policy decides which peers a relay may reach. The classic TURN abuse is to
// use the relay, which sits inside the server's network, to reach what the
// client cannot: loopback services, the cloud metadata endpoint, the private
// network behind the server. So a relay reaches only public addresses, and
// of the server's own addresses only the SFU's media port and the ports of
// live relays (another participant's relay) — unless an operator allows a range.
//
// Policy is immutable after NewPolicy and safe for concurrent use; its
// methods do not allocate.
type Policy struct {
	allow    []netip.Prefix
	own      []netip.Addr // sorted, unmapped
	relayIPs []netip.Addr // own addresses relays listen on; nil with relayAnyOwn
	// relayAnyOwn: relays listen on every address (bound to 0.0.0.0 or ::).
	relayAnyOwn bool
	sfuPort     uint16   // 0: no SFU exception
	live        *PortSet // ports of the relays open now
}

// PolicyParams configure a Policy.
type PolicyParams struct {
	// Allow are ranges relays may reach although they are denied (turn-allow-peer).
	Allow []netip.Prefix
	// Own are the server's addresses (its interfaces, its public IPs).
	Own []netip.Addr
	// RelayIPs are the own addresses relays listen on; an unspecified address
	// (0.0.0.0, ::) means all of Own.
	RelayIPs []netip.Addr
	// Live are the ports of the relays open now (nil: none).
	Live *PortSet
	// SFUPort is the SFU's UDP media port, reachable on every own address (0: none).
	SFUPort uint16
}

// NewPolicy builds the policy.
func NewPolicy(p PolicyParams) *Policy {
	pol := &Policy{sfuPort: p.SFUPort, live: p.Live}
	if pol.live == nil {
		pol.live = &PortSet{}
	}
	for _, a := range p.Allow {
		pol.allow = append(pol.allow, a.Masked())
	}
	for _, a := range p.Own {
		pol.own = append(pol.own, a.Unmap())
	}
	for _, a := range p.RelayIPs {
		a = a.Unmap()
		if a.IsUnspecified() {
			pol.relayAnyOwn = true
			continue
		}
		pol.relayIPs = append(pol.relayIPs, a)
		pol.own = append(pol.own, a)
	}
	slices.SortFunc(pol.own, netip.Addr.Compare)
	pol.own = slices.Compact(pol.own)
	return pol
}

// PermitIP reports whether a client may have a permission (or a channel) for
// ip: CreatePermission and ChannelBind are refused otherwise.
func (p *Policy) PermitIP(ip netip.Addr) bool {
	ip = ip.Unmap()
	if p.allowed(ip) {
		return true
	}
	if p.isOwn(ip) {
		return p.sfuPort != 0 || p.isRelayIP(ip)
	}
	return !Denied(ip)
}

// PermitAddr reports whether a relay may send to (or take packets from) ap;
// own addresses are reachable at the SFU's port and live relays' ports only.
func (p *Policy) PermitAddr(ap netip.AddrPort) bool {
	ip := ap.Addr().Unmap()
	if p.allowed(ip) {
		return true
	}
	if p.isOwn(ip) {
		port := ap.Port()
		return (p.sfuPort != 0 && port == p.sfuPort) ||
			(p.isRelayIP(ip) && p.live.Has(port))
	}
	return !Denied(ip)
}

func (p *Policy) allowed(ip netip.Addr) bool {
	for _, pre := range p.allow {
		if pre.Contains(ip) {
			return true
		}
	}
	return false
}

func (p *Policy) isOwn(ip netip.Addr) bool {
	_, found := slices.BinarySearchFunc(p.own, ip, netip.Addr.Compare)
	return found
}

func (p *Policy) isRelayIP(ip netip.Addr) bool {
	return p.relayAnyOwn || slices.Contains(p.relayIPs, ip)
}

// denied4 and denied6 are the ranges no relay reaches without turn-allow-peer:
// not globally reachable (RFC 6890 and its IANA registries) or not unicast.
var (
	denied4 = prefixes(
		"0.0.0.0/8",       // "this network", unspecified
		"10.0.0.0/8",      // private (RFC 1918)
		"100.64.0.0/10",   // shared address space (carrier-grade NAT, some clouds' internal services)
		"127.0.0.0/8",     // loopback
		"169.254.0.0/16",  // link-local, the cloud metadata endpoint
		"172.16.0.0/12",   // private
		"192.0.0.0/24",    // IETF protocol assignments
		"192.0.2.0/24",    // documentation
		"192.88.99.0/24",  // 6to4 relay anycast (deprecated)
		"192.168.0.0/16",  // private
		"198.18.0.0/15",   // benchmarking
		"198.51.100.0/24", // documentation
		"203.0.113.0/24",  // documentation
		"224.0.0.0/4",     // multicast
		"240.0.0.0/4",     // reserved, and 255.255.255.255 broadcast
	)
	denied6 = prefixes(
		"::/96",          // unspecified, loopback, IPv4-compatible (deprecated)
		"::ffff:0:0/96",  // IPv4-mapped (checked as IPv4 first)
		"64:ff9b:1::/48", // local-use NAT64
		"100::/64",       // discard
		"2001:db8::/32",  // documentation
		"fc00::/7",       // unique local (ULA)
		"fe80::/10",      // link-local
		"fec0::/10",      // site-local (deprecated)
		"ff00::/8",       // multicast
	)
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

func prefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

// Denied reports whether ip is loopback, private (RFC 1918, ULA), link-local,
// unspecified, multicast or otherwise not a public unicast address. IPv6
// addresses that embed an IPv4 address (NAT64, 6to4) are judged by it.
func Denied(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !ip.IsValid() {
		return true
	}
	if ip.Is4() {
		for _, pre := range denied4 {
			if pre.Contains(ip) {
				return true
			}
		}
		return false
	}
	b := ip.As16()
	switch {
	case nat64.Contains(ip):
		return Denied(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}))
	case sixToFour.Contains(ip):
		return Denied(netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}))
	}
	for _, pre := range denied6 {
		if pre.Contains(ip) {
			return true
		}
	}
	return false
}

// PortSet is a set of ports, safe for concurrent use without a lock.
type PortSet struct {
	bits [1024]atomic.Uint64
}

// Add puts port in the set.
func (s *PortSet) Add(port uint16) { s.bits[port/64].Or(1 << (port % 64)) }

// Remove takes port out of the set.
func (s *PortSet) Remove(port uint16) { s.bits[port/64].And(^(1 << (port % 64))) }

// Has reports whether port is in the set.
func (s *PortSet) Has(port uint16) bool { return s.bits[port/64].Load()&(1<<(port%64)) != 0 }
