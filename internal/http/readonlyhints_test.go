package http_test

import (
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/auth"
)

// Read-only is a claim until a person accepts it. A newly registered
// server's hints are "claimed": its read-only tool asks (asks_because
// read_only_claimed, in the tool list and on the card) until an admin
// accepts them with PATCH {"read_only_hints": "trusted"} (admins only, a
// bad value is a 400 that changes nothing, audited); then it runs without
// asking. Pointing the server at another origin makes them a claim again.
func TestReadOnlyHints_ClaimedUntilAnAdminTrustsThem(t *testing.T) {
	e := newAPI(t)
	var srv struct {
		ReadOnlyHints string `json:"read_only_hints"`
	}
	e.must(201, "POST", "/api/mcp/servers", map[string]any{"label": "weather", "url": e.demoURL}, &srv)
	if srv.ReadOnlyHints != "claimed" {
		t.Errorf("a new server's read_only_hints is %q, want claimed", srv.ReadOnlyHints)
	}
	member, _ := e.newUser(auth.Member)
	for who, env := range map[string]*apiEnv{"the admin": e, "a member": member} {
		if tl := env.tools("weather")["get_forecast"]; tl.EffectivePolicy != "always" || tl.AsksBecause == nil ||
			tl.AsksBecause.Reason != "read_only_claimed" {
			t.Errorf("%s sees get_forecast %s asking because %+v; want always, read_only_claimed", who, tl.EffectivePolicy, tl.AsksBecause)
		}
	}
	s := member.send("", `get_forecast {"city": "Berlin"}`).ok(t)
	if aps := all[approval](t, s, "approval.required"); len(aps) != 1 || aps[0].AsksBecause.Reason != "read_only_claimed" {
		t.Fatalf("get_forecast on a server whose hints are claimed: cards %+v; want one asking because read_only_claimed", aps)
	}

	r := member.call("PATCH", "/api/mcp/servers/weather", map[string]any{"read_only_hints": "trusted"})
	wantCode(t, "a member trusting the hints", r, 403, "admin_only")
	r = e.call("PATCH", "/api/mcp/servers/weather", map[string]any{"read_only_hints": "yes"})
	wantCode(t, "a bad read_only_hints", r, 400, "invalid_read_only_hints")
	if !strings.Contains(string(r.body), "trusted") {
		t.Errorf("the 400 does not say what to send: %s", r.body)
	}
	e.must(200, "GET", "/api/mcp/servers/weather", nil, &srv)
	if srv.ReadOnlyHints != "claimed" {
		t.Fatalf("refused changes changed read_only_hints to %q", srv.ReadOnlyHints)
	}

	e.must(200, "PATCH", "/api/mcp/servers/weather", map[string]any{"read_only_hints": "trusted"}, &srv)
	if srv.ReadOnlyHints != "trusted" {
		t.Errorf("after trusting, read_only_hints is %q", srv.ReadOnlyHints)
	}
	audited := false
	for _, en := range e.audit() {
		if en.Action == "server.update" && strings.Contains(string(en.Before), `"read_only_hints":"claimed"`) &&
			strings.Contains(string(en.After), `"read_only_hints":"trusted"`) && en.ActorID == e.admin.ID {
			audited = true
		}
	}
	if !audited {
		t.Error("accepting the hints is not in the audit log (server.update, claimed → trusted, by the admin)")
	}
	if tl := member.tools("weather")["get_forecast"]; tl.EffectivePolicy != "never" || tl.AsksBecause != nil {
		t.Errorf("after trusting, get_forecast is %s (%+v), want never", tl.EffectivePolicy, tl.AsksBecause)
	}
	if tl := member.tools("weather")["delete_forecast"]; tl.EffectivePolicy != "always" || tl.AsksBecause.Reason != "not_read_only" {
		t.Errorf("after trusting, delete_forecast is %s (%+v), want always, not_read_only", tl.EffectivePolicy, tl.AsksBecause)
	}
	s = member.send("", `get_forecast {"city": "Berlin"}`).ok(t)
	if n := len(all[approval](t, s, "approval.required")); n != 0 {
		t.Errorf("get_forecast asked %d times after the hints were trusted", n)
	}

	// Another origin is another server: its hints are a claim again.
	e.must(200, "PATCH", "/api/mcp/servers/weather", map[string]any{"url": startDemo(t, "")}, &srv)
	if srv.ReadOnlyHints != "claimed" {
		t.Errorf("after moving to another origin, read_only_hints is %q, want claimed", srv.ReadOnlyHints)
	}
	if tl := member.tools("weather")["get_forecast"]; tl.EffectivePolicy != "always" {
		t.Errorf("after moving, get_forecast is %s, want always", tl.EffectivePolicy)
	}
}
