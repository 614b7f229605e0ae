package turnserver

import (
	"net"
	"net/netip"

	"github.com/pion/transport/v5"
)

// nonPublic are the ranges refused as peers unless Config.AllowPeers admits
// them: private (RFC 1918), shared/CGNAT (RFC 6598), "this network", IETF
// protocol assignments, benchmarking, documentation, reserved, and IPv6
// unique-local, documentation and IPv4-mapped forms.
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("10.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("172.16.0.0/12"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("192.168.0.0/16"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("fc00::/7"),
	netip.MustParsePrefix("2001:db8::/32"),
	netip.MustParsePrefix("64:ff9b::/96"),
}

// policy decides which peer addresses a relay may talk to. It is immutable
// after New, so any goroutine may use it.
type policy struct {
	allow            []netip.Prefix
	own              map[netip.Addr]bool // the server's own addresses
	minPort, maxPort int
	ownPorts         map[int]bool // also reachable on the own addresses (Config.OwnPorts)
}

// allowIP reports whether a relay may exchange datagrams with ip at all
// (the permission check: TURN permissions name an IP, not a port).
func (p *policy) allowIP(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !ip.IsValid() {
		return false
	}
	for _, pre := range p.allow {
		if pre.Contains(ip) {
			return true
		}
	}
	if p.own[ip] {
		return true // relay to relay; allowAddr checks the port
	}
	if ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsUnspecified() || ip == netip.IPv4Unspecified() ||
		ip == netip.AddrFrom4([4]byte{255, 255, 255, 255}) {
		return false
	}
	for _, pre := range nonPublic {
		if pre.Contains(ip) {
			return false
		}
	}
	return true
}

// allowAddr reports whether a relay may exchange a datagram with ap: an
// allowed IP and, for the server's own addresses, a port of the relay range.
func (p *policy) allowAddr(ap netip.AddrPort) bool {
	ip := ap.Addr().Unmap()
	if !p.allowIP(ip) {
		return false
	}
	if p.own[ip] {
		port := int(ap.Port())
		return (port >= p.minPort && port <= p.maxPort) || p.ownPorts[port]
	}
	return true
}

// allowNetAddr is allowAddr for a net.Addr (the relay socket's peers are UDP).
func (p *policy) allowNetAddr(a net.Addr) bool {
	ua, ok := a.(*net.UDPAddr)
	if !ok {
		return false
	}
	return p.allowAddr(ua.AddrPort())
}

// interfaceAddrs returns the addresses of the machine's interfaces (of n's,
// when n is set).
func interfaceAddrs(n transport.Net) []net.Addr {
	if n == nil {
		addrs, _ := net.InterfaceAddrs()
		return addrs
	}
	ifs, err := n.Interfaces()
	if err != nil {
		return nil
	}
	var out []net.Addr
	for _, ifc := range ifs {
		if a, err := ifc.Addrs(); err == nil {
			out = append(out, a...)
		}
	}
	return out
}

// ownAddrs returns the interface addresses ifaddrs plus extra (the listen and
// public addresses). Loopback and link-local interface addresses are left
// out, so that they stay refused outright, unless extra names one (a server
// listening on loopback, in tests).
func ownAddrs(ifaddrs []net.Addr, extra ...net.IP) map[netip.Addr]bool {
	own := make(map[netip.Addr]bool)
	for _, a := range ifaddrs {
		var ip net.IP
		switch a := a.(type) {
		case *net.IPNet:
			ip = a.IP
		case *net.IPAddr:
			ip = a.IP
		}
		if addr, ok := netip.AddrFromSlice(ip); ok && !addr.IsLoopback() && !addr.IsLinkLocalUnicast() {
			own[addr.Unmap()] = true
		}
	}
	for _, e := range extra {
		if ip, ok := netip.AddrFromSlice(e); ok && !ip.IsUnspecified() {
			own[ip.Unmap()] = true
		}
	}
	return own
}
