package http_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/internal/auth"
)

const clearPath = "/api/mcp/servers/demo/tools/approval-policies"

type clearAnswer struct {
	Removed int      `json:"removed"`
	Tools   []string `json:"tools"`
}

// clearEntries are the audit log's policy.clear entries, newest first.
func (e *apiEnv) clearEntries() []auditEntry {
	e.t.Helper()
	var out []auditEntry
	for _, a := range e.audit() {
		if a.Action == "policy.clear" {
			out = append(out, a)
		}
	}
	return out
}

// policyRows counts the database's policies of server demo: the
// workspace's, and the personal ones of userID.
func (e *apiEnv) policyRows(userID string) (workspace, personal int) {
	e.t.Helper()
	if err := e.pool.QueryRow(e.t.Context(), `SELECT
		(SELECT count(*) FROM tool_policies WHERE server_label = 'demo'),
		(SELECT count(*) FROM user_tool_policies WHERE server_label = 'demo' AND user_id = $1)`, userID).Scan(&workspace, &personal); err != nil {
		e.t.Fatal(err)
	}
	return workspace, personal
}

func TestClearPolicies_MineLeavesWorkspaceAndOthers(t *testing.T) {
	e := newAPI(t)
	e.createDemo("demo")
	e.must(200, "PUT", clearPath+"?layer=workspace", map[string]any{"policies": map[string]string{"get_forecast": "always"}}, nil)
	ann, annU := e.newUser(auth.Member)
	bob, bobU := e.newUser(auth.Member)
	ann.must(200, "PUT", clearPath+"?layer=user", map[string]any{"policies": map[string]string{"delete_forecast": "blocked", "get_forecast": "always"}}, nil)
	bob.must(200, "PUT", clearPath+"?layer=user", map[string]any{"policies": map[string]string{"delete_forecast": "blocked"}}, nil)
	before := len(e.audit())

	var got clearAnswer
	ann.must(200, "DELETE", clearPath, nil, &got)
	if diff := cmp.Diff(clearAnswer{2, []string{"delete_forecast", "get_forecast"}}, got); diff != "" {
		t.Errorf("answer (-want +got):\n%s", diff)
	}
	if w, p := e.policyRows(annU.ID); w != 1 || p != 0 {
		t.Errorf("after ann's clear: workspace %d, ann's %d; want 1, 0", w, p)
	}
	if _, p := e.policyRows(bobU.ID); p != 1 {
		t.Errorf("bob's policies = %d, want 1 (another user's are not touched)", p)
	}
	if n := len(e.audit()); n != before+1 {
		t.Errorf("audit entries %d -> %d, want exactly one more", before, n)
	}
	entries := e.clearEntries()
	if len(entries) != 1 {
		t.Fatalf("policy.clear entries = %d, want 1", len(entries))
	}
	a := entries[0]
	if a.ActorID != annU.ID || deref(a.ServerLabel) != "demo" || a.ToolName != nil {
		t.Errorf("entry = %+v, want ann's, for demo, no tool", a)
	}
	var b, af map[string]any
	_ = json.Unmarshal(a.Before, &b)
	_ = json.Unmarshal(a.After, &af)
	wantB := map[string]any{"layer": "user", "policies": map[string]any{"delete_forecast": "blocked", "get_forecast": "always"}}
	if diff := cmp.Diff(wantB, b); diff != "" {
		t.Errorf("before (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"layer": "user", "policies": map[string]any{}}, af); diff != "" {
		t.Errorf("after (-want +got):\n%s", diff)
	}
	// Ann's tools are back to what applies without her policies.
	if tl := ann.tools("demo"); tl["delete_forecast"].UserPolicy != nil || tl["get_forecast"].PolicySource != "tool" {
		t.Errorf("ann's tools after clear: %+v / %+v", tl["delete_forecast"], tl["get_forecast"])
	}

	// Nothing left: 200, removed 0, no audit entry.
	ann.must(200, "DELETE", clearPath+"?layer=mine", nil, &got)
	if got.Removed != 0 || got.Tools == nil || len(got.Tools) != 0 {
		t.Errorf("second clear = %+v, want removed 0, tools []", got)
	}
	if n := len(e.clearEntries()); n != 1 {
		t.Errorf("policy.clear entries after a clear of nothing = %d, want 1", n)
	}
}

func TestClearPolicies_WorkspaceByAdminIncludesLocked(t *testing.T) {
	e := newAPI(t)
	e.createDemo("demo")
	e.must(200, "PUT", policyPath("demo", "delete_forecast", "workspace"), map[string]any{"policy": "blocked", "locked": true}, nil)
	e.must(200, "PUT", policyPath("demo", "get_forecast", "workspace"), map[string]any{"policy": "always"}, nil)
	m, mu := e.newUser(auth.Member)
	m.must(200, "PUT", policyPath("demo", "get_forecast", "user"), map[string]any{"policy": "blocked"}, nil)
	// The admin's own (empty) layer is the default: nothing of the workspace goes.
	var got clearAnswer
	e.must(200, "DELETE", clearPath, nil, &got)
	if got.Removed != 0 {
		t.Fatalf("admin's default clear removed %d, want 0 (their own layer)", got.Removed)
	}
	e.must(200, "DELETE", clearPath+"?layer=workspace", nil, &got)
	if diff := cmp.Diff(clearAnswer{2, []string{"delete_forecast", "get_forecast"}}, got); diff != "" {
		t.Errorf("answer (-want +got):\n%s", diff)
	}
	if w, p := e.policyRows(mu.ID); w != 0 || p != 1 {
		t.Errorf("after the workspace clear: workspace %d, member's %d; want 0, 1", w, p)
	}
	entries := e.clearEntries()
	if len(entries) != 1 {
		t.Fatalf("policy.clear entries = %d, want 1", len(entries))
	}
	var b map[string]any
	_ = json.Unmarshal(entries[0].Before, &b)
	want := map[string]any{"layer": "workspace", "policies": map[string]any{"delete_forecast": "blocked", "get_forecast": "always"},
		"locked": []any{"delete_forecast"}}
	if diff := cmp.Diff(want, b); diff != "" {
		t.Errorf("before (-want +got):\n%s", diff)
	}
	if tl := e.tools("demo"); tl["delete_forecast"].Policy != nil || tl["delete_forecast"].PolicySource != "global" {
		t.Errorf("delete_forecast after clear = %+v, want the global default", tl["delete_forecast"])
	}
}

func TestClearPolicies_Refusals(t *testing.T) {
	e := newAPI(t)
	e.createDemo("demo")
	e.must(200, "PUT", policyPath("demo", "get_forecast", "workspace"), map[string]any{"policy": "always"}, nil)
	m, _ := e.newUser(auth.Member)

	res := m.call("DELETE", clearPath+"?layer=workspace", nil)
	wantCode(t, "member, layer=workspace", res, 403, "admin_only")
	wantCode(t, "anonymous", e.anon().call("DELETE", clearPath, nil), 401, "")
	r, _ := e.raw("DELETE", clearPath+"?layer=workspace", "", map[string]string{"Origin": "http://evil.example"})
	wantCode(t, "another origin", r, 403, "cross_origin")
	wantCode(t, "unknown server", e.call("DELETE", "/api/mcp/servers/nope/tools/approval-policies", nil), 404, "server_not_found")
	wantCode(t, "bad layer", e.call("DELETE", clearPath+"?layer=everyone", nil), 400, "invalid_layer")
	if w, _ := e.policyRows(""); w != 1 {
		t.Errorf("workspace policies after refusals = %d, want 1", w)
	}
	if n := len(e.clearEntries()); n != 0 {
		t.Errorf("policy.clear entries after refusals = %d, want 0", n)
	}
}

func TestSettings_ResetToInstallDefaults(t *testing.T) {
	e := newAPI(t)
	var fresh, got map[string]any
	e.must(200, "GET", "/api/settings", nil, &fresh)
	e.must(200, "PUT", "/api/settings", map[string]any{"default_policy": "blocked", "default_policy_locked": true, "ask_everything": true}, nil)
	before := len(e.audit())
	e.must(200, "PUT", "/api/settings", map[string]any{"reset": true}, &got)
	delete(fresh, "updated_at")
	delete(got, "updated_at")
	if diff := cmp.Diff(fresh, got); diff != "" {
		t.Errorf("reset settings vs a fresh install's (-want +got):\n%s", diff)
	}
	all := e.audit()
	if len(all) != before+1 || all[0].Action != "settings.update" {
		t.Fatalf("audit after reset: %d -> %d entries, newest %+v; want one settings.update", before, len(all), all[0])
	}
	var b map[string]any
	_ = json.Unmarshal(all[0].Before, &b)
	if b["default_policy"] != "blocked" || b["ask_everything"] != true {
		t.Errorf("reset entry before = %v", b)
	}
	// Reset again: already the defaults, no entry.
	e.must(200, "PUT", "/api/settings", map[string]any{"reset": true}, nil)
	if n := len(e.audit()); n != before+1 {
		t.Errorf("a reset of defaults wrote an entry (%d entries, want %d)", n, before+1)
	}
}

func TestSettings_ResetRefusals(t *testing.T) {
	e := newAPI(t)
	e.must(200, "PUT", "/api/settings", map[string]any{"ask_everything": true}, nil)
	res := e.call("PUT", "/api/settings", map[string]any{"reset": true, "ask_everything": false})
	wantCode(t, "reset with a field", res, 400, "invalid_reset")
	wantCode(t, "reset false", e.call("PUT", "/api/settings", map[string]any{"reset": false}), 400, "invalid_reset")
	m, _ := e.newUser(auth.Member)
	wantCode(t, "member reset", m.call("PUT", "/api/settings", map[string]any{"reset": true}), 403, "")
	var set map[string]any
	e.must(200, "GET", "/api/settings", nil, &set)
	if set["ask_everything"] != true {
		t.Errorf("settings after refused resets = %v, want ask_everything still on", set)
	}
}

// A clear whose audit entry cannot be written removes nothing: the removals
// and the entry are one transaction. The database itself refuses the entry
// (a trigger), as a full disk or a lost connection would.
func TestClearPolicies_AllOrNothing(t *testing.T) {
	e := newAPI(t)
	e.createDemo("demo")
	e.must(200, "PUT", clearPath+"?layer=workspace", map[string]any{"policies": map[string]string{"get_forecast": "always", "send_alert": "never"}}, nil)
	if _, err := e.pool.Exec(t.Context(), `
		CREATE FUNCTION refuse_clear() RETURNS trigger LANGUAGE plpgsql AS
			$$ BEGIN RAISE EXCEPTION 'audit refused'; END $$;
		CREATE TRIGGER refuse_clear BEFORE INSERT ON audit_log
			FOR EACH ROW WHEN (NEW.action = 'policy.clear') EXECUTE FUNCTION refuse_clear();`); err != nil {
		t.Fatal(err)
	}
	res := e.call("DELETE", clearPath+"?layer=workspace", nil)
	if res.status != 500 {
		t.Fatalf("clear with the audit refused: status %d, body %s; want 500", res.status, res.body)
	}
	if w, _ := e.policyRows(""); w != 2 {
		t.Errorf("workspace policies after a failed clear = %d, want 2 (nothing removed)", w)
	}
}
