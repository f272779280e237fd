package config

import (
	"log/slog"
	"strings"
	"testing"
	"time"
)

// The route defaults to gateway where the provider can reach Toolgate
// (offline, or an https PUBLIC_URL) and to direct elsewhere; MCP_ROUTE set
// wins either way, and the reason says which it was.
func TestLoad_RouteDefaults(t *testing.T) {
	online := func(m map[string]string) map[string]string {
		m["OPENAI_API_KEY"], m["SECRETS_KEY"] = "sk-test-0123456789", testSecretsKey
		return m
	}
	for _, tc := range []struct {
		name   string
		env    map[string]string
		want   string
		reason string // a part of the reason
	}{
		{"offline", map[string]string{}, RouteGateway, "offline"},
		{"offline with an http PUBLIC_URL", map[string]string{"PUBLIC_URL": "http://toolgate.lan:8080"}, RouteGateway, "offline"},
		{"online with an https PUBLIC_URL", online(map[string]string{"PUBLIC_URL": "https://toolgate.example.com"}), RouteGateway, "PUBLIC_URL is https"},
		{"online with an http PUBLIC_URL", online(map[string]string{"PUBLIC_URL": "http://toolgate.example.com"}), RouteDirect, "not https"},
		{"online with PUBLIC_URL unset", online(map[string]string{}), RouteDirect, "(http://127.0.0.1:8080) is not https"},
		{"MCP_ROUTE=direct offline", map[string]string{"MCP_ROUTE": "direct"}, RouteDirect, "MCP_ROUTE=direct is set"},
		{"MCP_ROUTE=direct with https", online(map[string]string{"MCP_ROUTE": "direct", "PUBLIC_URL": "https://toolgate.example.com"}), RouteDirect, "MCP_ROUTE=direct is set"},
		{"MCP_ROUTE=gateway online with http (tests against a local emulator)", online(map[string]string{"MCP_ROUTE": "Gateway", "PUBLIC_URL": "http://127.0.0.1:9000"}),
			RouteGateway, "only a provider that can reach http://127.0.0.1:9000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load(env(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			if c.Route.Mode != tc.want || !strings.Contains(c.Route.Reason, tc.reason) {
				t.Errorf("route %q (%s), want %q with a reason containing %q", c.Route.Mode, c.Route.Reason, tc.want, tc.reason)
			}
			if c.Route.Gateway() != (tc.want == RouteGateway) {
				t.Errorf("Gateway() = %v for %q", c.Route.Gateway(), c.Route.Mode)
			}
		})
	}
}

func TestLoad_RouteRefusesBadValues(t *testing.T) {
	for _, tc := range []struct {
		env       map[string]string
		key, says string
	}{
		{map[string]string{"MCP_ROUTE": "proxy"}, "MCP_ROUTE", `must be gateway (the provider calls MCP servers through Toolgate) or direct`},
		{map[string]string{"MCP_ROUTE": "gateway,direct"}, "MCP_ROUTE", `(got "gateway,direct")`},
		{map[string]string{"MCP_TOKEN_TTL": "59s"}, "MCP_TOKEN_TTL", "from 1m to 24h"},
		{map[string]string{"MCP_TOKEN_TTL": "25h"}, "MCP_TOKEN_TTL", "from 1m to 24h"},
		{map[string]string{"MCP_TOKEN_TTL": "15"}, "MCP_TOKEN_TTL", `(got "15")`},
	} {
		_, err := Load(env(tc.env))
		if err == nil || !strings.Contains(err.Error(), tc.key) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%v: got %v, want an error naming %s that says %q", tc.env, err, tc.key, tc.says)
		}
	}
	c, err := Load(env(map[string]string{"MCP_TOKEN_TTL": "2h"}))
	if err != nil || c.Route.TokenTTL != 2*time.Hour {
		t.Errorf("MCP_TOKEN_TTL=2h: %v, %v", c.Route.TokenTTL, err)
	}
}

// The start log names the route and why, in one attribute group.
func TestLogValue_Route(t *testing.T) {
	c, err := Load(env(map[string]string{}))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	slog.New(slog.NewTextHandler(&b, nil)).Info("config", "config", c)
	if !strings.Contains(b.String(), "config.mcp_route.mode=gateway") || !strings.Contains(b.String(), `config.mcp_route.reason="offline:`) {
		t.Errorf("logged config = %s", b.String())
	}
}
