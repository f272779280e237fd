package http_test

import (
	"strings"
	"testing"
)

// serverHealth mirrors a server's health in the API's server JSON.
type serverHealth struct {
	Label  string `json:"label"`
	Health struct {
		Status    string  `json:"status"`
		Since     *string `json:"since"`
		LastError *string `json:"last_error"`
		CheckedAt *string `json:"checked_at"`
		OKAt      *string `json:"ok_at"`
	} `json:"health"`
}

// TestServers_HealthSaysWhetherTheServerAnswers: the server routes show a
// server's health truthfully, never ok while it cannot be reached, and a
// change that reaches it makes it ok again.
func TestServers_HealthSaysWhetherTheServerAnswers(t *testing.T) {
	e := newAPI(t)
	var gone, weather serverHealth
	e.must(201, "POST", "/api/mcp/servers", map[string]any{"label": "gone", "url": "http://127.0.0.1:1/mcp"}, &gone)
	e.must(201, "POST", "/api/mcp/servers", map[string]any{"label": "weather", "url": e.demoURL}, &weather)
	if h := gone.Health; h.Status != "unreachable" || h.Since == nil || h.CheckedAt == nil || h.OKAt != nil ||
		h.LastError == nil || !strings.Contains(*h.LastError, "connection refused") {
		t.Errorf("unreachable server's health = %+v", h)
	}
	if h := weather.Health; h.Status != "ok" || h.Since != nil || h.LastError != nil || h.CheckedAt == nil || h.OKAt == nil {
		t.Errorf("reachable server's health = %+v", h)
	}

	var list struct{ Servers []serverHealth }
	e.must(200, "GET", "/api/mcp/servers", nil, &list)
	got := map[string]string{}
	for _, s := range list.Servers {
		got[s.Label] = s.Health.Status
	}
	if got["gone"] != "unreachable" || got["weather"] != "ok" {
		t.Errorf("list shows health %v", got)
	}

	var one serverHealth
	e.must(200, "PATCH", "/api/mcp/servers/gone", map[string]any{"url": e.demoURL}, &one)
	if h := one.Health; h.Status != "ok" || h.Since != nil || h.LastError != nil {
		t.Errorf("health after pointing it at a server that answers = %+v", h)
	}
	e.must(200, "GET", "/api/mcp/servers/gone", nil, &one)
	if one.Health.Status != "ok" {
		t.Errorf("GET shows %+v", one.Health)
	}
}
