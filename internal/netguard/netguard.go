// Package netguard is the policy for the URLs Toolgate fetches itself (MCP
// tool discovery): which addresses it may connect to. The check runs on the
// address actually dialled, after name resolution, so a name that resolves
// to one address when registered and another when fetched (DNS rebinding)
// cannot reach what the policy refuses.
//
// Link-local and cloud metadata addresses are always refused, and so are
// unspecified, multicast, broadcast and reserved ones. Private ranges need
// MCP_ALLOWED_HOSTS or MCP_ALLOW_PRIVATE=true; loopback needs offline mode or
// an MCP_ALLOWED_HOSTS entry.
package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Config is what the policy allows beyond public addresses.
type Config struct {
	// AllowedHosts is MCP_ALLOWED_HOSTS: a comma-separated list of host
	// names ("mcp.internal", "*.corp.example"), IP addresses and CIDRs
	// that may be reached although private or loopback.
	AllowedHosts string
	// AllowPrivate is MCP_ALLOW_PRIVATE: every private range may be reached
	// (not loopback, link-local or metadata addresses).
	AllowPrivate bool
	// AllowLoopback is true in offline mode, where the demo MCP server runs
	// on 127.0.0.1.
	AllowLoopback bool
	// Lookup resolves a host name; nil uses the system resolver.
	Lookup func(ctx context.Context, host string) ([]netip.Addr, error)
}

// Guard applies a Config. Its zero value is not usable; call New.
type Guard struct {
	transportOnce sync.Once
	transport     *http.Transport

	allowPrivate, allowLoopback bool
	names                       []string // lower case, no trailing dot; "*.x" matches subdomains of x
	prefixes                    []netip.Prefix
	lookup                      func(ctx context.Context, host string) ([]netip.Addr, error)
}

// New checks c and returns its Guard. A bad MCP_ALLOWED_HOSTS entry is an
// error naming the entry.
func New(c Config) (*Guard, error) {
	names, prefixes, err := ParseAllowedHosts(c.AllowedHosts)
	if err != nil {
		return nil, err
	}
	g := &Guard{allowPrivate: c.AllowPrivate, allowLoopback: c.AllowLoopback, names: names, prefixes: prefixes, lookup: c.Lookup}
	if g.lookup == nil {
		g.lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	return g, nil
}

// ParseAllowedHosts splits an MCP_ALLOWED_HOSTS value into host names and
// address prefixes (an IP is a one-address prefix).
func ParseAllowedHosts(s string) (names []string, prefixes []netip.Prefix, err error) {
	for _, raw := range strings.Split(s, ",") {
		e := strings.TrimSpace(raw)
		if e == "" {
			continue
		}
		if strings.Contains(e, "/") {
			p, err := netip.ParsePrefix(strings.Trim(e, "[]"))
			if err != nil {
				return nil, nil, fmt.Errorf("MCP_ALLOWED_HOSTS entry %q is not a valid CIDR such as 10.0.0.0/8", e)
			}
			if p.Addr().Is4In6() {
				p = netip.PrefixFrom(p.Addr().Unmap(), max(p.Bits()-96, 0))
			}
			prefixes = append(prefixes, p.Masked())
			continue
		}
		if ip, ok := ParseHost(e); ok {
			prefixes = append(prefixes, netip.PrefixFrom(ip, ip.BitLen()))
			continue
		}
		name := normName(e)
		if !validName(strings.TrimPrefix(name, "*.")) {
			return nil, nil, fmt.Errorf("MCP_ALLOWED_HOSTS entry %q is not a host name, IP address or CIDR (e.g. mcp.internal, 10.1.2.3, 10.0.0.0/8)", e)
		}
		names = append(names, name)
	}
	return names, prefixes, nil
}

func validName(n string) bool {
	if n == "" || len(n) > 253 {
		return false
	}
	for _, c := range n {
		if !(c == '-' || c == '.' || c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z') {
			return false
		}
	}
	return true
}

func normName(h string) string { return strings.TrimSuffix(strings.ToLower(h), ".") }

// metadataNames are host names of cloud metadata services, refused by name
// whatever they resolve to.
var metadataNames = map[string]bool{"metadata.google.internal": true, "metadata.goog": true}

// RefusedError says why the policy refuses a host or address, in a sentence
// that names the variable to set when one would allow it.
type RefusedError struct {
	Host  string     // as written in the URL (or the dialled address)
	Addr  netip.Addr // the address refused; invalid when refused by name
	Class Class
}

func (e *RefusedError) Error() string {
	what := e.Host
	if e.Addr.IsValid() && normName(e.Host) != e.Addr.String() {
		what = fmt.Sprintf("%s (which is %s)", e.Host, e.Addr)
	}
	switch e.Class {
	case Metadata:
		return fmt.Sprintf("%s is a cloud metadata address; Toolgate never connects to it", what)
	case LinkLocal:
		return fmt.Sprintf("%s is a link-local address (169.254.0.0/16, fe80::/10); Toolgate never connects to those", what)
	case Private:
		return fmt.Sprintf("%s is a private network address; to let Toolgate reach it, list it in MCP_ALLOWED_HOSTS (host names, IPs or CIDRs, comma-separated) or set MCP_ALLOW_PRIVATE=true", what)
	case Loopback:
		return fmt.Sprintf("%s is a loopback address (this machine); to let Toolgate reach it, list it in MCP_ALLOWED_HOSTS, e.g. MCP_ALLOWED_HOSTS=%s", what, e.allowHint())
	}
	return fmt.Sprintf("%s is a %s address, which is never an MCP server; Toolgate does not connect to it", what, e.Class)
}

func (e *RefusedError) allowHint() string {
	if ip, ok := ParseHost(e.Host); ok { // any spelling of an address: name the address
		return ip.String()
	}
	return normName(e.Host)
}

// IsRefused reports whether err (or one it wraps) is a refusal of the policy.
func IsRefused(err error) (*RefusedError, bool) {
	var r *RefusedError
	ok := errors.As(err, &r)
	return r, ok
}

// RedirectError is a redirect to another origin, which is not followed.
type RedirectError struct{ From, To string }

func (e *RedirectError) Error() string {
	return fmt.Sprintf("the server redirected to another host (%s); Toolgate does not follow redirects to another host: register the URL it redirects to if you trust it", e.To)
}

// Check tells whether the policy lets Toolgate connect to ip, reached under
// the name host (the URL's host, used to match MCP_ALLOWED_HOSTS names).
func (g *Guard) Check(host string, ip netip.Addr) error {
	if metadataNames[normName(host)] {
		return &RefusedError{Host: host, Class: Metadata}
	}
	ip = Normalize(ip)
	class := Classify(ip)
	switch class {
	case Public:
		return nil
	case Loopback:
		if g.allowLoopback || g.allowed(host, ip) {
			return nil
		}
	case Private:
		if g.allowPrivate || g.allowed(host, ip) {
			return nil
		}
	}
	return &RefusedError{Host: host, Addr: ip, Class: class}
}

// allowed reports whether an MCP_ALLOWED_HOSTS entry names host or ip.
func (g *Guard) allowed(host string, ip netip.Addr) bool {
	h := normName(host)
	for _, n := range g.names {
		if n == h || strings.HasPrefix(n, "*.") && strings.HasSuffix(h, n[1:]) {
			return true
		}
	}
	for _, p := range g.prefixes {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// CheckURL checks a URL before it is stored, so a person learns at once that
// it will be refused: a literal address is classified, a name is resolved
// and refused when none of its addresses may be reached. A name that does
// not resolve (yet) passes; discovery will say so.
func (g *Guard) CheckURL(ctx context.Context, raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return nil // the URL's own validation reports it
	}
	host := u.Hostname()
	if metadataNames[normName(host)] {
		return &RefusedError{Host: host, Class: Metadata}
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	ips, err := g.resolve(ctx, host)
	if err != nil {
		return nil
	}
	var refused error
	for _, ip := range ips {
		err := g.Check(host, ip)
		if err == nil {
			return nil
		}
		if refused == nil {
			refused = err
		}
	}
	return refused
}

// resolve returns the addresses of host: a literal address in any form
// (see ParseHost) without asking DNS, else what the resolver says.
func (g *Guard) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if ip, ok := ParseHost(host); ok {
		return []netip.Addr{ip}, nil
	}
	return g.lookup(ctx, host)
}

// DialContext resolves addr's host, keeps the addresses the policy allows
// and connects to one of them; the dialer checks the connected address once
// more. It is an http.Transport's DialContext.
func (g *Guard) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if metadataNames[normName(host)] {
		return nil, &RefusedError{Host: host, Class: Metadata}
	}
	ips, err := g.resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	var refused, dialErr error
	for _, ip := range ips {
		if err := g.Check(host, ip); err != nil {
			if refused == nil {
				refused = err
			}
			continue
		}
		d := net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: g.control(host)}
		c, err := d.DialContext(ctx, network, net.JoinHostPort(Normalize(ip).String(), port))
		if err == nil {
			return c, nil
		}
		dialErr = err
	}
	if dialErr != nil {
		return nil, dialErr
	}
	if refused != nil {
		return nil, refused
	}
	return nil, &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}
}

// control checks the address the socket is about to connect to.
func (g *Guard) control(host string) func(network, address string, _ syscall.RawConn) error {
	return func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("netguard: unexpected address %q", address)
		}
		return g.Check(host, ap.Addr())
	}
}

// Transport is the Guard's http.Transport (one per Guard, so connections
// are reused), which connects only where the policy allows. It uses no
// proxy: a proxy would resolve and connect on its own, out of the policy's
// reach.
func (g *Guard) Transport() *http.Transport {
	g.transportOnce.Do(func() {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.Proxy = nil
		t.DialContext = g.DialContext
		t.DialTLSContext = nil
		g.transport = t
	})
	return g.transport
}

// CheckRedirect is an http.Client's CheckRedirect: it follows redirects to
// the same origin only (scheme, host and port); each hop is dialled through
// the policy like the first.
func CheckRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	if Origin(req.URL) != Origin(via[0].URL) {
		return &RedirectError{From: via[0].URL.Redacted(), To: req.URL.Scheme + "://" + req.URL.Host}
	}
	return nil
}

// Origin is scheme://host:port of u, with the scheme's default port filled
// in and the host in lower case, so equal origins compare equal.
func Origin(u *url.URL) string {
	port := u.Port()
	if port == "" {
		switch strings.ToLower(u.Scheme) {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	host := normName(u.Hostname())
	if ip, ok := ParseHost(host); ok {
		host = ip.String()
	}
	return strings.ToLower(u.Scheme) + "://" + net.JoinHostPort(host, port)
}

// Internal reports whether host is on the operator's own network and the
// policy lets Toolgate reach it: every address it resolves to is loopback
// or private, and allowed. Decision hooks may use plain http only to such
// hosts. A name that does not resolve is not internal.
func (g *Guard) Internal(ctx context.Context, host string) bool {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	ips, err := g.resolve(ctx, host)
	if err != nil || len(ips) == 0 {
		return false
	}
	for _, ip := range ips {
		if c := Classify(Normalize(ip)); c != Loopback && c != Private || g.Check(host, ip) != nil {
			return false
		}
	}
	return true
}
