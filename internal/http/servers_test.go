package http_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestServers_CreateDiscoversDemoTools(t *testing.T) {
	e := newAPI(t)
	res := e.call("POST", "/api/mcp/servers", map[string]any{
		"label": "weather", "url": e.demoURL, "description": "Forecasts",
	})
	if res.status != 201 {
		t.Fatalf("create: %d %s", res.status, res.body)
	}
	if got := res.header.Get("Location"); got != "/api/mcp/servers/weather" {
		t.Errorf("Location = %q", got)
	}
	var s server
	_ = json.Unmarshal(res.body, &s)
	if s.ToolCount != 6 || s.ToolsRefreshError != nil || s.ToolsRefreshedAt == nil || !s.Enabled {
		t.Fatalf("created server = %+v, want 6 tools, refreshed, no error, enabled", s)
	}

	tools := e.tools("weather")
	names := make([]string, 0, len(tools))
	for n := range tools {
		names = append(names, n)
	}
	wantNames := []string{"delete_forecast", "get_forecast", "list_forecasts", "reset_forecasts", "send_alert", "set_forecast"}
	if diff := cmp.Diff(wantNames, sortStrings(names)); diff != "" {
		t.Errorf("tool names (-want +got):\n%s", diff)
	}
	hints := func(name string) [4]any {
		a := tools[name].Annotations
		return [4]any{a["readOnlyHint"], a["destructiveHint"], a["idempotentHint"], a["openWorldHint"]}
	}
	for name, want := range map[string][4]any{
		"get_forecast":    {true, false, true, false},
		"delete_forecast": {false, true, true, false},
		"send_alert":      {false, false, false, true},
	} {
		if diff := cmp.Diff(want, hints(name)); diff != "" {
			t.Errorf("%s annotations [readOnly destructive idempotent openWorld] (-want +got):\n%s", name, diff)
		}
	}
	del := tools["delete_forecast"]
	if !strings.HasPrefix(del.Digest, "sha256:") || len(del.Digest) != 71 || !del.Discovered {
		t.Errorf("delete_forecast digest %q discovered %v", del.Digest, del.Discovered)
	}
	if !strings.Contains(del.Description, "forecast") || !strings.Contains(string(del.InputSchema), `"city"`) {
		t.Errorf("delete_forecast description %q schema %s", del.Description, del.InputSchema)
	}
	if del.Policy != nil || del.EffectivePolicy != "always" || del.PolicySource != "global" {
		t.Errorf("fresh tool policy = %v/%s/%s, want null/always/global (ask_unless_read_only)", del.Policy, del.EffectivePolicy, del.PolicySource)
	}

	// Refreshing an unchanged server gives the same digests.
	var refreshed struct{ Tools []tool }
	e.must(200, "POST", "/api/mcp/servers/weather/refresh", nil, &refreshed)
	for _, rt := range refreshed.Tools {
		if rt.Digest != tools[rt.Name].Digest {
			t.Errorf("%s digest changed on refresh: %s -> %s", rt.Name, tools[rt.Name].Digest, rt.Digest)
		}
	}
}

func TestServers_UnreachableURLIsStoredAndReported(t *testing.T) {
	e := newAPI(t)
	var s server
	e.must(201, "POST", "/api/mcp/servers", map[string]any{"label": "gone", "url": "http://127.0.0.1:1/mcp"}, &s)
	if s.ToolsRefreshError == nil || !strings.Contains(*s.ToolsRefreshError, "http://127.0.0.1:1/mcp") {
		t.Fatalf("tools_refresh_error = %v, want a message naming the URL", s.ToolsRefreshError)
	}

	var list struct{ Servers []server }
	e.must(200, "GET", "/api/mcp/servers", nil, &list)
	if len(list.Servers) != 1 || list.Servers[0].Label != "gone" || list.Servers[0].ToolsRefreshError == nil {
		t.Fatalf("servers = %+v, want the unreachable server listed with its error", list.Servers)
	}

	var apiErr apiError
	e.must(502, "POST", "/api/mcp/servers/gone/refresh", nil, &apiErr)
	if apiErr.Error.Code != "discovery_failed" || !strings.Contains(apiErr.Error.Message, "could not list tools") {
		t.Errorf("refresh error = %+v", apiErr.Error)
	}

	// Pointing it at a working server clears the error and finds the tools.
	e.must(200, "PATCH", "/api/mcp/servers/gone", map[string]any{"url": e.demoURL}, &s)
	if s.ToolsRefreshError != nil || s.ToolCount != 6 {
		t.Errorf("after fixing the URL: error %v, %d tools", s.ToolsRefreshError, s.ToolCount)
	}
}

func TestServers_HeadersAreSentButNeverShown(t *testing.T) {
	e := newAPI(t)
	demo := startDemo(t, demoToken)
	secret := "Bearer " + demoToken

	var s server
	e.must(201, "POST", "/api/mcp/servers", map[string]any{
		"label": "private", "url": demo, "headers": map[string]string{"Authorization": secret},
	}, &s)
	if s.ToolCount != 6 || s.ToolsRefreshError != nil {
		t.Fatalf("discovery with the token header: %d tools, error %v", s.ToolCount, s.ToolsRefreshError)
	}
	masked := s.Headers["Authorization"]
	if masked == "" || strings.Contains(masked, demoToken) {
		t.Fatalf("headers = %v, want Authorization masked", s.Headers)
	}

	// Sending back what was shown keeps the secret: discovery still works.
	e.must(200, "PATCH", "/api/mcp/servers/private", map[string]any{
		"headers": map[string]string{"Authorization": masked}, "description": "kept",
	}, &s)
	e.must(200, "POST", "/api/mcp/servers/private/refresh", nil, nil)

	for _, path := range []string{"/api/mcp/servers", "/api/mcp/servers/private", "/api/audit"} {
		if res := e.call("GET", path, nil); strings.Contains(string(res.body), demoToken) {
			t.Errorf("GET %s shows the secret: %s", path, res.body)
		}
	}

	// Removing the header makes the server refuse discovery.
	var after server
	e.must(200, "PATCH", "/api/mcp/servers/private", map[string]any{"headers": map[string]any{"authorization": nil}}, &after)
	if len(after.Headers) != 0 || after.ToolsRefreshError == nil || !strings.Contains(*after.ToolsRefreshError, "401") {
		t.Errorf("after removing the header: headers %v, error %v (want a 401 error)", after.Headers, deref(after.ToolsRefreshError))
	}
}

func TestServers_DeleteRemovesToolsAndPolicies(t *testing.T) {
	e := newAPI(t)
	e.createDemo("weather")
	e.must(200, "PUT", "/api/mcp/servers/weather/tools/delete_forecast/approval-policy", map[string]string{"policy": "always"}, nil)
	e.must(204, "DELETE", "/api/mcp/servers/weather", nil, nil)
	e.must(404, "GET", "/api/mcp/servers/weather", nil, nil)
	e.must(404, "DELETE", "/api/mcp/servers/weather", nil, nil)

	var n int
	if err := e.pool.QueryRow(t.Context(), `SELECT (SELECT count(*) FROM mcp_tools) + (SELECT count(*) FROM tool_policies)`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d tool or policy rows left after delete", n)
	}
	// The label is free again, and the new server starts with no policies.
	e.must(201, "POST", "/api/mcp/servers", map[string]any{"label": "weather", "url": "http://127.0.0.1:1/mcp"}, nil)
	var pols struct{ Policies []any }
	e.must(200, "GET", "/api/mcp/servers/weather/tools/approval-policies", nil, &pols)
	if len(pols.Policies) != 0 {
		t.Errorf("policies of the recreated server = %v", pols.Policies)
	}
}

func TestServers_PatchChangesFields(t *testing.T) {
	e := newAPI(t)
	e.createDemo("weather")
	var s server
	e.must(200, "PATCH", "/api/mcp/servers/weather", map[string]any{
		"description": "Forecast desk", "enabled": false, "default_policy": "always", "label": "weather",
	}, &s)
	if s.Description != "Forecast desk" || s.Enabled || s.DefaultPolicy == nil || *s.DefaultPolicy != "always" {
		t.Fatalf("patched = %+v", s)
	}
	e.must(200, "PATCH", "/api/mcp/servers/weather", map[string]any{"default_policy": nil}, &s)
	if s.DefaultPolicy != nil || s.Description != "Forecast desk" {
		t.Errorf("after clearing default_policy: %+v", s)
	}
}

func sortStrings(s []string) []string {
	return slices.Sorted(slices.Values(s))
}
