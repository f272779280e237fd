package http_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestBadInput_ClearErrorAndNoChange sends every kind of bad request and
// checks the status, the machine code, the field named, and that the state
// the API shows is exactly as before.
func TestBadInput_ClearErrorAndNoChange(t *testing.T) {
	e := newAPI(t)
	e.createDemo("weather")
	e.must(200, "PUT", "/api/mcp/servers/weather/tools/get_forecast/approval-policy", map[string]string{"policy": "always"}, nil)
	huge := `{"label": "big", "url": "http://x.example/mcp", "description": "` + strings.Repeat("a", 70<<10) + `"}`

	cases := []struct {
		name, method, path string
		body               any
		status             int
		code, field        string
	}{
		{"label with a space", "POST", "/api/mcp/servers", map[string]any{"label": "my server", "url": "http://x.example/mcp"}, 400, "invalid_label", "label"},
		{"label too long", "POST", "/api/mcp/servers", map[string]any{"label": strings.Repeat("a", 65), "url": "http://x.example/mcp"}, 400, "invalid_label", "label"},
		{"empty label", "POST", "/api/mcp/servers", map[string]any{"label": "", "url": "http://x.example/mcp"}, 400, "invalid_label", "label"},
		{"relative URL", "POST", "/api/mcp/servers", map[string]any{"label": "x", "url": "/mcp"}, 400, "invalid_url", "url"},
		{"ftp URL", "POST", "/api/mcp/servers", map[string]any{"label": "x", "url": "ftp://x.example/mcp"}, 400, "invalid_url", "url"},
		{"missing URL", "POST", "/api/mcp/servers", map[string]any{"label": "x"}, 400, "invalid_url", "url"},
		{"URL with credentials", "POST", "/api/mcp/servers", map[string]any{"label": "x", "url": "https://u:p@x.example/mcp"}, 400, "invalid_url", "url"},
		{"bad server default policy", "POST", "/api/mcp/servers", map[string]any{"label": "x", "url": "http://x.example/mcp", "default_policy": "sometimes"}, 400, "invalid_policy", "default_policy"},
		{"bad header name", "POST", "/api/mcp/servers", map[string]any{"label": "x", "url": "http://x.example/mcp", "headers": map[string]string{"Bad Name": "v"}}, 400, "invalid_headers", "headers.Bad Name"},
		{"masked header value", "POST", "/api/mcp/servers", map[string]any{"label": "x", "url": "http://x.example/mcp", "headers": map[string]string{"X-Key": "********1234"}}, 400, "invalid_headers", "headers.X-Key"},
		{"PATCH one header twice", "PATCH", "/api/mcp/servers/weather", map[string]any{"headers": map[string]string{"X-Key": "a", "x-key": "b"}}, 400, "invalid_headers", "headers.x-key"},
		{"header value with newline", "POST", "/api/mcp/servers", map[string]any{"label": "x", "url": "http://x.example/mcp", "headers": map[string]string{"X-Key": "a\r\nHost: evil"}}, 400, "invalid_headers", "headers.X-Key"},
		{"duplicate label", "POST", "/api/mcp/servers", map[string]any{"label": "weather", "url": "http://x.example/mcp"}, 409, "duplicate_label", ""},
		{"duplicate label in other case", "POST", "/api/mcp/servers", map[string]any{"label": "Weather", "url": "http://x.example/mcp"}, 409, "duplicate_label", ""},
		{"malformed JSON", "POST", "/api/mcp/servers", `{"label": "x",`, 400, "malformed_json", ""},
		{"not an object", "POST", "/api/mcp/servers", `["x"]`, 400, "malformed_json", ""},
		{"two objects", "POST", "/api/mcp/servers", `{"label":"x","url":"http://x.example/mcp"} {}`, 400, "malformed_json", ""},
		{"empty body", "POST", "/api/mcp/servers", ``, 400, "empty_body", ""},
		{"unknown field", "POST", "/api/mcp/servers", map[string]any{"label": "x", "url": "http://x.example/mcp", "urll": "y"}, 400, "unknown_field", "urll"},
		{"wrong type", "POST", "/api/mcp/servers", map[string]any{"label": 7, "url": "http://x.example/mcp"}, 400, "invalid_type", "label"},
		{"body too large", "POST", "/api/mcp/servers", huge, 413, "body_too_large", ""},
		{"PATCH changes label", "PATCH", "/api/mcp/servers/weather", map[string]any{"label": "other"}, 400, "label_immutable", "label"},
		{"PATCH bad URL", "PATCH", "/api/mcp/servers/weather", map[string]any{"url": "nope", "description": "changed"}, 400, "invalid_url", "url"},
		{"PATCH unknown server", "PATCH", "/api/mcp/servers/nope", map[string]any{"description": "x"}, 404, "server_not_found", ""},
		{"GET unknown server", "GET", "/api/mcp/servers/nope", nil, 404, "server_not_found", ""},
		{"DELETE unknown server", "DELETE", "/api/mcp/servers/nope", nil, 404, "server_not_found", ""},
		{"refresh unknown server", "POST", "/api/mcp/servers/nope/refresh", nil, 404, "server_not_found", ""},
		{"tools of unknown server", "GET", "/api/mcp/servers/nope/tools", nil, 404, "server_not_found", ""},
		{"policies of unknown server", "GET", "/api/mcp/servers/nope/tools/approval-policies", nil, 404, "server_not_found", ""},
		{"policy on unknown server", "PUT", "/api/mcp/servers/nope/tools/x/approval-policy", map[string]string{"policy": "always"}, 404, "server_not_found", ""},
		{"policy delete on unknown server", "DELETE", "/api/mcp/servers/nope/tools/x/approval-policy", nil, 404, "server_not_found", ""},
		{"bulk on unknown server", "PUT", "/api/mcp/servers/nope/tools/approval-policies", map[string]any{"policies": map[string]string{"x": "never"}}, 404, "server_not_found", ""},
		{"invalid policy", "PUT", "/api/mcp/servers/weather/tools/get_forecast/approval-policy", map[string]string{"policy": "sometimes"}, 400, "invalid_policy", "policy"},
		{"policy in wrong case", "PUT", "/api/mcp/servers/weather/tools/get_forecast/approval-policy", map[string]string{"policy": "Never"}, 400, "invalid_policy", "policy"},
		{"missing policy", "PUT", "/api/mcp/servers/weather/tools/get_forecast/approval-policy", map[string]string{}, 400, "invalid_policy", "policy"},
		{"null policy", "PUT", "/api/mcp/servers/weather/tools/get_forecast/approval-policy", `{"policy": null}`, 400, "invalid_policy", "policy"},
		{"invalid tool name", "PUT", "/api/mcp/servers/weather/tools/bad%0Aname/approval-policy", map[string]string{"policy": "never"}, 400, "invalid_tool_name", "tool_name"},
		{"bulk with bad tool name", "PUT", "/api/mcp/servers/weather/tools/approval-policies", map[string]any{"policies": map[string]string{"get_forecast": "never", "bad\tname": "never"}}, 400, "invalid_tool_name", "policies.bad\tname"},
		{"bulk without policies", "PUT", "/api/mcp/servers/weather/tools/approval-policies", map[string]any{}, 400, "invalid_policy", "policies"},
		{"bulk policies not an object", "PUT", "/api/mcp/servers/weather/tools/approval-policies", map[string]any{"policies": []string{"a"}}, 400, "invalid_type", "policies"},
		{"settings bad policy", "PUT", "/api/settings", map[string]any{"default_policy": "maybe", "default_policy_locked": true}, 400, "invalid_policy", "default_policy"},
		{"settings local_user is gone", "PUT", "/api/settings", map[string]any{"local_user": "ann"}, 400, "unknown_field", "local_user"},
		{"audit bad limit", "GET", "/api/audit?limit=0", nil, 400, "invalid_limit", "limit"},
		{"audit limit too big", "GET", "/api/audit?limit=501", nil, 400, "invalid_limit", "limit"},
		{"audit bad cursor", "GET", "/api/audit?cursor=xyz", nil, 400, "invalid_cursor", "cursor"},
		{"unknown path", "GET", "/api/nothing", nil, 404, "route_not_found", ""},
		{"wrong method", "POST", "/api/settings", map[string]any{}, 405, "method_not_allowed", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := e.snapshot()
			var got apiError
			e.must(tc.status, tc.method, tc.path, tc.body, &got)
			if got.Error.Code != tc.code {
				t.Errorf("code = %q, want %q (message %q)", got.Error.Code, tc.code, got.Error.Message)
			}
			if len(got.Error.Message) < 15 {
				t.Errorf("message %q does not say what to fix", got.Error.Message)
			}
			if tc.field != "" && got.Error.Fields[tc.field] == "" {
				t.Errorf("fields = %v, want an entry for %q", got.Error.Fields, tc.field)
			}
			if diff := cmp.Diff(before, e.snapshot()); diff != "" {
				t.Errorf("a rejected request changed state (-before +after):\n%s", diff)
			}
		})
	}
}

func TestBadInput_ReportsEveryFieldAtOnce(t *testing.T) {
	e := newAPI(t)
	var got apiError
	e.must(400, "POST", "/api/mcp/servers", map[string]any{"label": "a b", "url": "nope", "default_policy": "x"}, &got)
	for _, f := range []string{"label", "url", "default_policy"} {
		if got.Error.Fields[f] == "" {
			t.Errorf("fields = %v, missing %q", got.Error.Fields, f)
		}
	}
}
