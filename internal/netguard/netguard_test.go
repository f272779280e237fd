package netguard_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolgate/toolgate/internal/netguard"
)

func TestClassifyKnowsEveryRange(t *testing.T) {
	for _, tc := range []struct {
		ip   string
		want netguard.Class
	}{
		{"169.254.169.254", netguard.Metadata},
		{"169.254.170.2", netguard.Metadata},
		{"fd00:ec2::254", netguard.Metadata},
		{"100.100.100.200", netguard.Metadata},
		{"::ffff:a9fe:a9fe", netguard.Metadata}, // 169.254.169.254 mapped
		{"169.254.1.1", netguard.LinkLocal},
		{"fe80::1", netguard.LinkLocal},
		{"fe80::1%eth0", netguard.LinkLocal},
		{"febf::1", netguard.LinkLocal},
		{"10.0.0.1", netguard.Private},
		{"172.16.0.1", netguard.Private},
		{"172.31.255.255", netguard.Private},
		{"172.32.0.1", netguard.Public},
		{"192.168.1.1", netguard.Private},
		{"100.64.0.1", netguard.Private},
		{"100.127.255.255", netguard.Private},
		{"100.128.0.1", netguard.Public},
		{"fc00::1", netguard.Private},
		{"fd12:3456::1", netguard.Private},
		{"::ffff:10.1.2.3", netguard.Private},
		{"127.0.0.1", netguard.Loopback},
		{"127.255.0.9", netguard.Loopback},
		{"::1", netguard.Loopback},
		{"::ffff:127.0.0.1", netguard.Loopback},
		{"::127.0.0.1", netguard.Loopback},       // IPv4-compatible
		{"64:ff9b::7f00:1", netguard.Loopback},   // NAT64
		{"2002:a9fe:a9fe::1", netguard.Metadata}, // 6to4 of 169.254.169.254
		{"0.0.0.0", netguard.Unspecified},
		{"0.1.2.3", netguard.Unspecified},
		{"::", netguard.Unspecified},
		{"224.0.0.1", netguard.Multicast},
		{"239.255.255.250", netguard.Multicast},
		{"ff02::1", netguard.Multicast},
		{"255.255.255.255", netguard.Broadcast},
		{"240.0.0.1", netguard.Reserved},
		{"8.8.8.8", netguard.Public},
		{"2606:4700::1111", netguard.Public},
		{"::ffff:8.8.8.8", netguard.Public},
	} {
		if got := netguard.Classify(netip.MustParseAddr(tc.ip)); got != tc.want {
			t.Errorf("Classify(%s) = %s, want %s", tc.ip, got, tc.want)
		}
	}
}

// TestParseHostReadsEverySpellingOfAnAddress: Go's URL parser keeps these
// hosts as they are and net.ParseIP refuses most of them, but the C library
// and browsers connect to the address they spell, so the policy must too.
func TestParseHostReadsEverySpellingOfAnAddress(t *testing.T) {
	for _, tc := range []struct {
		rawURL  string
		want    string // "" = a host name
		parseIP bool   // whether net.ParseIP understands the host
	}{
		{"http://127.0.0.1/", "127.0.0.1", true},
		{"http://2130706433/", "127.0.0.1", false},
		{"http://0177.0.0.1/", "127.0.0.1", false},
		{"http://0x7f.0.0.1/", "127.0.0.1", false},
		{"http://0x7F000001/", "127.0.0.1", false},
		{"http://017700000001/", "127.0.0.1", false},
		{"http://127.1/", "127.0.0.1", false},
		{"http://127.0.1/", "127.0.0.1", false},
		{"http://127.0.0.1./", "127.0.0.1", false},
		{"http://169.254.43518/", "169.254.169.254", false},
		{"http://0xa9fea9fe/", "169.254.169.254", false},
		{"http://[::ffff:127.0.0.1]/", "127.0.0.1", true},
		{"http://[::ffff:7f00:1]/", "127.0.0.1", true},
		{"http://[::ffff:a9fe:a9fe]/", "169.254.169.254", true},
		{"http://[fe80::1%25eth0]/", "fe80::1", false},
		{"http://[::1]:8080/", "::1", true},
		{"http://example.com/", "", false},
		{"http://1.2.3.4.5/", "", false},
		{"http://256.1.1.1/", "", false},
		{"http://08.1.1.1/", "", false}, // 8 is not an octal digit
		{"http://4294967296/", "", false},
		{"http://1.2.65536/", "", false},
		{"http://0x/", "0.0.0.0", false},
	} {
		u, err := url.Parse(tc.rawURL)
		if err != nil {
			t.Errorf("url.Parse(%s): %v", tc.rawURL, err)
			continue
		}
		host := u.Hostname()
		if got := net.ParseIP(host) != nil; got != tc.parseIP {
			t.Errorf("net.ParseIP(%q) understood = %v, want %v (the reason ParseHost exists)", host, got, tc.parseIP)
		}
		ip, ok := netguard.ParseHost(host)
		got := ""
		if ok {
			got = ip.String()
		}
		if got != tc.want {
			t.Errorf("ParseHost(%q) from %s = %q, want %q", host, tc.rawURL, got, tc.want)
		}
	}
}

func guard(t *testing.T, c netguard.Config) *netguard.Guard {
	t.Helper()
	g, err := netguard.New(c)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestCheckAppliesTheConfiguration(t *testing.T) {
	strict := netguard.Config{}
	offline := netguard.Config{AllowLoopback: true}
	private := netguard.Config{AllowPrivate: true}
	listed := netguard.Config{AllowedHosts: " mcp.corp , 10.1.0.0/16, 192.168.1.5, *.lab.example, 127.0.0.1, 169.254.0.0/16, fd00:ec2::/32, metadata.google.internal"}
	for _, tc := range []struct {
		name   string
		cfg    netguard.Config
		host   string
		ip     string
		wantOK bool
		msg    string // part of the refusal
	}{
		{"public always", strict, "example.com", "93.184.216.34", true, ""},
		{"metadata never", private, "169.254.169.254", "169.254.169.254", false, "cloud metadata address"},
		{"metadata never, even listed", listed, "169.254.169.254", "169.254.169.254", false, "cloud metadata"},
		{"metadata v6 never, even listed", listed, "x", "fd00:ec2::254", false, "cloud metadata"},
		{"metadata name never", listed, "metadata.google.internal", "8.8.8.8", false, "cloud metadata"},
		{"metadata name with dot and case", strict, "Metadata.Google.Internal.", "8.8.8.8", false, "cloud metadata"},
		{"link-local never, even listed", listed, "169.254.9.9", "169.254.9.9", false, "link-local"},
		{"link-local v6 never", private, "fe80::1", "fe80::1", false, "link-local"},
		{"private refused", strict, "10.1.2.3", "10.1.2.3", false, "MCP_ALLOWED_HOSTS (host names, IPs or CIDRs, comma-separated) or set MCP_ALLOW_PRIVATE=true"},
		{"cgnat refused", strict, "100.64.1.1", "100.64.1.1", false, "private network"},
		{"ula refused", strict, "fd12::1", "fd12::1", false, "private network"},
		{"private allowed by MCP_ALLOW_PRIVATE", private, "10.1.2.3", "10.1.2.3", true, ""},
		{"private allowed by CIDR", listed, "10.1.2.3", "10.1.2.3", true, ""},
		{"private outside the CIDR", listed, "10.2.2.3", "10.2.2.3", false, "private network"},
		{"private allowed by IP", listed, "192.168.1.5", "192.168.1.5", true, ""},
		{"private allowed by name", listed, "MCP.corp.", "10.9.9.9", true, ""},
		{"private allowed by wildcard", listed, "a.lab.example", "172.16.0.4", true, ""},
		{"wildcard is not the bare name", listed, "lab.example", "172.16.0.4", false, "private network"},
		{"name does not leak to others", listed, "other.corp", "10.9.9.9", false, "private"},
		{"loopback refused online", strict, "127.0.0.1", "127.0.0.1", false, "MCP_ALLOWED_HOSTS=127.0.0.1"},
		{"loopback name refused online", strict, "localhost", "127.0.0.1", false, "localhost (which is 127.0.0.1) is a loopback address (this machine); to let Toolgate reach it, list it in MCP_ALLOWED_HOSTS, e.g. MCP_ALLOWED_HOSTS=localhost"},
		{"loopback not covered by MCP_ALLOW_PRIVATE", private, "127.0.0.1", "127.0.0.1", false, "loopback"},
		{"loopback allowed offline", offline, "127.0.0.1", "127.0.0.1", true, ""},
		{"loopback v6 allowed offline", offline, "::1", "::1", true, ""},
		{"loopback allowed by entry", listed, "127.0.0.1", "127.0.0.1", true, ""},
		{"mapped loopback allowed by the v4 entry", listed, "::ffff:127.0.0.1", "::ffff:127.0.0.1", true, ""},
		{"other loopback not listed", listed, "127.0.0.2", "127.0.0.2", false, "loopback"},
		{"private not allowed offline", offline, "10.0.0.1", "10.0.0.1", false, "private"},
		{"unspecified never", listed, "0.0.0.0", "0.0.0.0", false, "unspecified address"},
		{"unspecified v6 never", offline, "::", "::", false, "unspecified"},
		{"multicast never", private, "224.0.0.1", "224.0.0.1", false, "multicast"},
		{"broadcast never", private, "255.255.255.255", "255.255.255.255", false, "broadcast"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := guard(t, tc.cfg).Check(tc.host, netip.MustParseAddr(tc.ip))
			if (err == nil) != tc.wantOK {
				t.Fatalf("Check(%s, %s) = %v, want allowed=%v", tc.host, tc.ip, err, tc.wantOK)
			}
			if err != nil && !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("refusal %q does not say %q", err, tc.msg)
			}
			if _, ok := netguard.IsRefused(err); err != nil && !ok {
				t.Errorf("refusal %T is not a *RefusedError", err)
			}
		})
	}
}

func TestNewRefusesABadAllowedHostsEntry(t *testing.T) {
	for _, bad := range []string{"10.0.0.0/33", "exa mple.com", "http://x.com", "a/b"} {
		if _, err := netguard.New(netguard.Config{AllowedHosts: "ok.example," + bad}); err == nil || !strings.Contains(err.Error(), "MCP_ALLOWED_HOSTS") {
			t.Errorf("MCP_ALLOWED_HOSTS=%q: err %v, want one naming the variable", bad, err)
		}
	}
}

// fakeDNS answers from a table; names not in it do not exist.
func fakeDNS(table map[string][]string) func(context.Context, string) ([]netip.Addr, error) {
	return func(_ context.Context, host string) ([]netip.Addr, error) {
		ips, ok := table[strings.ToLower(host)]
		if !ok {
			return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
		}
		var out []netip.Addr
		for _, s := range ips {
			out = append(out, netip.MustParseAddr(s))
		}
		return out, nil
	}
}

func TestCheckURLClassifiesLiteralsAndResolvedNames(t *testing.T) {
	g := guard(t, netguard.Config{Lookup: fakeDNS(map[string][]string{
		"evil.example":     {"169.254.169.254"},
		"intranet.example": {"10.0.0.7"},
		"mixed.example":    {"10.0.0.7", "93.184.216.34"},
		"good.example":     {"93.184.216.34"},
	})})
	for _, tc := range []struct {
		url  string
		want string // "" = allowed; else part of the refusal
	}{
		{"https://good.example/mcp", ""},
		{"https://mixed.example/mcp", ""}, // discovery dials the public address only
		{"https://nowhere.example/mcp", ""},
		{"https://evil.example/mcp", "evil.example (which is 169.254.169.254) is a cloud metadata address"},
		{"https://intranet.example/mcp", "private network"},
		{"http://2130706433/mcp", "2130706433 (which is 127.0.0.1) is a loopback"},
		{"http://0177.0.0.1/mcp", "loopback"},
		{"http://0x7f.0.0.1/mcp", "loopback"},
		{"http://127.1/mcp", "loopback"},
		{"http://[::ffff:127.0.0.1]/mcp", "loopback"},
		{"http://[::ffff:a9fe:a9fe]/latest/meta-data", "cloud metadata"},
		{"http://169.254.169.254/latest/meta-data", "cloud metadata"},
		{"http://metadata.google.internal/computeMetadata/v1/", "cloud metadata"},
		{"http://[fe80::1%25eth0]:80/", "link-local"},
		{"http://0.0.0.0:8090/mcp", "unspecified"},
		{"http://[::]:8090/mcp", "unspecified"},
	} {
		err := g.CheckURL(t.Context(), tc.url)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("CheckURL(%s) = %v, want allowed", tc.url, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("CheckURL(%s) = %v, want a refusal saying %q", tc.url, err, tc.want)
		}
	}
}

func get(t *testing.T, g *netguard.Guard, u string) (*http.Response, error) {
	t.Helper()
	c := &http.Client{Transport: g.Transport(), CheckRedirect: netguard.CheckRedirect}
	t.Cleanup(c.CloseIdleConnections)
	res, err := c.Get(u)
	if err == nil {
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
	}
	return res, err
}

func TestTransportConnectsOnlyWhereThePolicyAllows(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	t.Cleanup(srv.Close)
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]

	for _, tc := range []struct {
		name   string
		cfg    netguard.Config
		url    string
		wantOK bool
	}{
		{"loopback refused online", netguard.Config{}, srv.URL, false},
		{"decimal loopback refused", netguard.Config{}, "http://2130706433:" + port, false},
		{"octal loopback refused", netguard.Config{}, "http://0177.0.0.1:" + port, false},
		{"mapped loopback refused", netguard.Config{}, "http://[::ffff:127.0.0.1]:" + port, false},
		{"private allowance does not open loopback", netguard.Config{AllowPrivate: true}, srv.URL, false},
		{"listed IP allowed", netguard.Config{AllowedHosts: "127.0.0.1"}, srv.URL, true},
		{"listed CIDR allowed", netguard.Config{AllowedHosts: "127.0.0.0/8"}, "http://127.1:" + port, true},
		{"offline allows loopback", netguard.Config{AllowLoopback: true}, srv.URL, true},
		{"offline allows the decimal spelling too", netguard.Config{AllowLoopback: true}, "http://2130706433:" + port, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := hits.Load()
			_, err := get(t, guard(t, tc.cfg), tc.url)
			if tc.wantOK {
				if err != nil || hits.Load() != before+1 {
					t.Fatalf("GET %s: %v (hits %d -> %d)", tc.url, err, before, hits.Load())
				}
				return
			}
			if _, ok := netguard.IsRefused(err); !ok {
				t.Fatalf("GET %s: err %v, want a policy refusal", tc.url, err)
			}
			if hits.Load() != before {
				t.Error("the refused request reached the server")
			}
		})
	}
}

// TestTransportChecksTheAddressItDials is DNS rebinding: the name resolves
// to a public address when the URL is registered and to loopback when
// discovery connects; the connection is refused.
func TestTransportChecksTheAddressItDials(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	t.Cleanup(srv.Close)
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]

	var lookups atomic.Int32
	g := guard(t, netguard.Config{Lookup: func(context.Context, string) ([]netip.Addr, error) {
		if lookups.Add(1) == 1 {
			return []netip.Addr{netip.MustParseAddr("93.184.216.34")}, nil
		}
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}})
	u := "http://rebind.example:" + port + "/mcp"
	if err := g.CheckURL(t.Context(), u); err != nil {
		t.Fatalf("at registration the name is public: %v", err)
	}
	_, err := get(t, g, u)
	if r, ok := netguard.IsRefused(err); !ok || r.Class != netguard.Loopback {
		t.Fatalf("GET after rebinding: %v, want a loopback refusal", err)
	}
	if hits.Load() != 0 {
		t.Error("the rebound name reached the loopback server")
	}
}

func TestRedirectsAreFollowedOnlyToTheSameOrigin(t *testing.T) {
	var otherHits atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { otherHits.Add(1) }))
	t.Cleanup(other.Close)
	mux := http.NewServeMux()
	mux.Handle("/away", http.RedirectHandler(other.URL+"/x", http.StatusTemporaryRedirect))
	mux.Handle("/here", http.RedirectHandler("/final", http.StatusFound))
	mux.HandleFunc("/final", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "ok") })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	g := guard(t, netguard.Config{AllowLoopback: true})

	res, err := get(t, g, srv.URL+"/here")
	if err != nil || res.Request.URL.Path != "/final" {
		t.Fatalf("same-origin redirect: %v", err)
	}
	_, err = get(t, g, srv.URL+"/away")
	var re *netguard.RedirectError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "does not follow redirects to another host") {
		t.Fatalf("cross-origin redirect: %v, want a RedirectError", err)
	}
	if otherHits.Load() != 0 {
		t.Error("the other origin was contacted")
	}
}

func TestOriginComparesSchemeHostAndPort(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{"https://A.example/mcp", "https://a.example:443/other", true},
		{"http://a.example/", "http://a.example:80/", true},
		{"http://a.example/", "https://a.example/", false},
		{"http://a.example:8080/", "http://a.example:8081/", false},
		{"http://a.example/", "http://b.example/", false},
		{"http://127.0.0.1/", "http://2130706433/", true},
		{"http://[::1]:9/", "http://[0:0::1]:9/", true},
	} {
		ua, _ := url.Parse(tc.a)
		ub, _ := url.Parse(tc.b)
		if got := netguard.Origin(ua) == netguard.Origin(ub); got != tc.same {
			t.Errorf("same origin %s %s = %v, want %v (%s vs %s)", tc.a, tc.b, got, tc.same, netguard.Origin(ua), netguard.Origin(ub))
		}
	}
}
