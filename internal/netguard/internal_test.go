package netguard_test

import (
	"context"
	"net/netip"
	"testing"

	"github.com/toolgate/toolgate/internal/netguard"
)

func TestInternal_OnlyAllowedLoopbackOrPrivateHosts(t *testing.T) {
	lookup := func(_ context.Context, host string) ([]netip.Addr, error) {
		switch host {
		case "hooks.corp":
			return []netip.Addr{netip.MustParseAddr("10.1.2.3")}, nil
		case "mixed.corp":
			return []netip.Addr{netip.MustParseAddr("10.1.2.4"), netip.MustParseAddr("93.184.216.34")}, nil
		}
		return []netip.Addr{netip.MustParseAddr("93.184.216.34")}, nil
	}
	for _, tc := range []struct {
		name string
		cfg  netguard.Config
		host string
		want bool
	}{
		{"allowed loopback", netguard.Config{AllowedHosts: "127.0.0.1"}, "127.0.0.1", true},
		{"loopback not allowed", netguard.Config{}, "127.0.0.1", false},
		{"private allowed", netguard.Config{AllowPrivate: true}, "hooks.corp", true},
		{"private not allowed", netguard.Config{}, "hooks.corp", false},
		{"public", netguard.Config{AllowPrivate: true}, "example.com", false},
		{"one public address", netguard.Config{AllowPrivate: true}, "mixed.corp", false},
		{"metadata", netguard.Config{AllowPrivate: true, AllowLoopback: true}, "169.254.169.254", false},
	} {
		tc.cfg.Lookup = lookup
		if got := guard(t, tc.cfg).Internal(context.Background(), tc.host); got != tc.want {
			t.Errorf("%s: Internal(%q) = %v, want %v", tc.name, tc.host, got, tc.want)
		}
	}
}
