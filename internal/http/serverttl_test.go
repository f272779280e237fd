package http_test

import (
	"encoding/json"
	"testing"

	"github.com/toolgate/toolgate/internal/auth"
)

// A server's approval_ttl_seconds is set by admins on create and PATCH
// (null: APPROVAL_TTL, 0: never, 60..604800), shown with the server, and a
// value out of range is refused with invalid_approval_ttl, changing nothing.
func TestServers_ApprovalTTLOverride(t *testing.T) {
	e := newAPI(t)
	type ttlServer struct {
		ApprovalTTLSeconds *int `json:"approval_ttl_seconds"`
	}
	var s ttlServer
	e.must(201, "POST", "/api/mcp/servers", map[string]any{"label": "quick", "url": e.demoURL, "approval_ttl_seconds": 300}, &s)
	if s.ApprovalTTLSeconds == nil || *s.ApprovalTTLSeconds != 300 {
		t.Fatalf("created with approval_ttl_seconds %v; want 300", s.ApprovalTTLSeconds)
	}
	e.createDemo("plain")
	e.must(200, "GET", "/api/mcp/servers/plain", nil, &s)
	if s.ApprovalTTLSeconds != nil {
		t.Errorf("a server created without one has approval_ttl_seconds %v; want null", *s.ApprovalTTLSeconds)
	}

	for _, bad := range []any{30, 59, 604801, -1, "5m"} {
		for _, req := range []struct{ method, path string }{{"PATCH", "/api/mcp/servers/quick"}, {"POST", "/api/mcp/servers"}} {
			body := map[string]any{"approval_ttl_seconds": bad}
			if req.method == "POST" {
				body["label"], body["url"] = "other", e.demoURL
			}
			res := e.call(req.method, req.path, body)
			var ae apiError
			_ = json.Unmarshal(res.body, &ae)
			want := "invalid_approval_ttl"
			if _, isString := bad.(string); isString {
				want = "" // a wrong JSON type is refused by the decoder with its own code
			}
			if res.status != 400 || (want != "" && ae.Error.Code != want) {
				t.Errorf("%s approval_ttl_seconds %v: %d %s; want 400 %s", req.method, bad, res.status, res.body, want)
			}
		}
	}
	e.must(200, "GET", "/api/mcp/servers/quick", nil, &s)
	if s.ApprovalTTLSeconds == nil || *s.ApprovalTTLSeconds != 300 {
		t.Errorf("after refused changes approval_ttl_seconds %v; want 300 still", s.ApprovalTTLSeconds)
	}

	e.must(200, "PATCH", "/api/mcp/servers/quick", map[string]any{"approval_ttl_seconds": 0}, &s)
	if s.ApprovalTTLSeconds == nil || *s.ApprovalTTLSeconds != 0 {
		t.Errorf("patched to 0: %v", s.ApprovalTTLSeconds)
	}
	e.must(200, "PATCH", "/api/mcp/servers/quick", map[string]any{"description": "x"}, &s)
	if s.ApprovalTTLSeconds == nil || *s.ApprovalTTLSeconds != 0 {
		t.Errorf("a PATCH without the field changed it to %v; want 0 kept", s.ApprovalTTLSeconds)
	}
	e.must(200, "PATCH", "/api/mcp/servers/quick", map[string]any{"approval_ttl_seconds": nil}, &s)
	if s.ApprovalTTLSeconds != nil {
		t.Errorf("patched to null: %v; want null", *s.ApprovalTTLSeconds)
	}

	member, _ := e.newUser(auth.Member)
	if res := member.call("PATCH", "/api/mcp/servers/quick", map[string]any{"approval_ttl_seconds": 60}); res.status != 403 {
		t.Errorf("a member's PATCH: %d; want 403", res.status)
	}
	if res := e.anon().call("PATCH", "/api/mcp/servers/quick", map[string]any{"approval_ttl_seconds": 60}); res.status != 401 {
		t.Errorf("an anonymous PATCH: %d; want 401", res.status)
	}
}
