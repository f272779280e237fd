package netguard

import (
	"net/netip"
	"strconv"
	"strings"
)

// Class is what kind of address an IP is, as far as the policy cares.
type Class string

// The classes, from always refused to always allowed.
const (
	Metadata    Class = "cloud metadata"
	LinkLocal   Class = "link-local"
	Unspecified Class = "unspecified"
	Multicast   Class = "multicast"
	Broadcast   Class = "broadcast"
	Reserved    Class = "reserved"
	Loopback    Class = "loopback"
	Private     Class = "private"
	Public      Class = "public"
)

var metadataAddrs = map[netip.Addr]bool{
	netip.MustParseAddr("169.254.169.254"): true, // AWS, GCP, Azure, OpenStack, Oracle...
	netip.MustParseAddr("169.254.170.2"):   true, // AWS ECS task metadata
	netip.MustParseAddr("fd00:ec2::254"):   true, // AWS over IPv6
	netip.MustParseAddr("100.100.100.200"): true, // Alibaba Cloud
}

var ranges = []struct {
	p     netip.Prefix
	class Class
}{
	{netip.MustParsePrefix("0.0.0.0/8"), Unspecified},
	{netip.MustParsePrefix("127.0.0.0/8"), Loopback},
	{netip.MustParsePrefix("169.254.0.0/16"), LinkLocal},
	{netip.MustParsePrefix("10.0.0.0/8"), Private},
	{netip.MustParsePrefix("172.16.0.0/12"), Private},
	{netip.MustParsePrefix("192.168.0.0/16"), Private},
	{netip.MustParsePrefix("100.64.0.0/10"), Private}, // carrier-grade NAT
	{netip.MustParsePrefix("192.0.0.0/24"), Private},  // IETF protocol assignments
	{netip.MustParsePrefix("198.18.0.0/15"), Private}, // benchmarking
	{netip.MustParsePrefix("224.0.0.0/4"), Multicast},
	{netip.MustParsePrefix("255.255.255.255/32"), Broadcast},
	{netip.MustParsePrefix("240.0.0.0/4"), Reserved},
	{netip.MustParsePrefix("::/128"), Unspecified},
	{netip.MustParsePrefix("::1/128"), Loopback},
	{netip.MustParsePrefix("fe80::/10"), LinkLocal},
	{netip.MustParsePrefix("fec0::/10"), Private}, // deprecated site-local
	{netip.MustParsePrefix("fc00::/7"), Private},  // unique local
	{netip.MustParsePrefix("ff00::/8"), Multicast},
}

// Classify says what kind of address ip is. IPv6 forms that carry an IPv4
// address (mapped, compatible, NAT64, 6to4) are classified as that address.
func Classify(ip netip.Addr) Class {
	ip = Normalize(ip)
	if !ip.IsValid() {
		return Unspecified
	}
	if metadataAddrs[ip] {
		return Metadata
	}
	for _, r := range ranges {
		if r.p.Contains(ip) {
			return r.class
		}
	}
	return Public
}

var (
	compatible = netip.MustParsePrefix("::/96")
	nat64      = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour  = netip.MustParsePrefix("2002::/16")
)

// Normalize drops a zone and turns IPv6 forms that embed an IPv4 address
// into that address: ::ffff:a.b.c.d (mapped), ::a.b.c.d (compatible),
// 64:ff9b::a.b.c.d (NAT64) and 2002:aabb:ccdd:: (6to4).
func Normalize(ip netip.Addr) netip.Addr {
	ip = ip.WithZone("")
	if !ip.Is6() {
		return ip
	}
	if ip.Is4In6() {
		return ip.Unmap()
	}
	b := ip.As16()
	switch {
	case compatible.Contains(ip) && ip != netip.IPv6Unspecified() && ip != netip.IPv6Loopback():
		return netip.AddrFrom4([4]byte(b[12:16]))
	case nat64.Contains(ip):
		return netip.AddrFrom4([4]byte(b[12:16]))
	case sixToFour.Contains(ip):
		return netip.AddrFrom4([4]byte(b[2:6]))
	}
	return ip
}

// ParseHost reads a URL's host (with or without brackets) as an IP address
// the way the C library and browsers do, so that every spelling of an
// address is classified as the address it reaches: IPv6 with a zone, and
// IPv4 in the inet_aton forms Go's net.ParseIP refuses: one to four parts,
// each decimal, octal (leading 0) or hex (0x), the last filling the
// remaining bytes (2130706433, 0177.0.0.1, 0x7f.1, 127.1). The result is
// normalised (see Normalize). ok is false for a host name.
func ParseHost(host string) (netip.Addr, bool) {
	h := strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.Contains(h, ":") {
		ip, err := netip.ParseAddr(h)
		if err != nil {
			return netip.Addr{}, false
		}
		return Normalize(ip), true
	}
	return parseIPv4(strings.TrimSuffix(h, "."))
}

func parseIPv4(s string) (netip.Addr, bool) {
	parts := strings.Split(s, ".")
	if s == "" || len(parts) > 4 {
		return netip.Addr{}, false
	}
	vals := make([]uint64, len(parts))
	for i, p := range parts {
		v, ok := parsePart(p)
		if !ok {
			return netip.Addr{}, false
		}
		vals[i] = v
	}
	var n uint64
	for i, v := range vals[:len(vals)-1] {
		if v > 255 {
			return netip.Addr{}, false
		}
		n |= v << (8 * (3 - i))
	}
	last := vals[len(vals)-1]
	if last >= 1<<(8*(5-len(vals))) {
		return netip.Addr{}, false
	}
	n |= last
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true
}

func parsePart(p string) (uint64, bool) {
	base := 10
	switch {
	case p == "":
		return 0, false
	case len(p) > 2 && (p[:2] == "0x" || p[:2] == "0X"):
		base, p = 16, p[2:]
	case p == "0x" || p == "0X":
		return 0, true
	case len(p) > 1 && p[0] == '0':
		base, p = 8, p[1:]
	}
	v, err := strconv.ParseUint(p, base, 64)
	if err != nil || v > 0xffffffff {
		return 0, false
	}
	return v, true
}
