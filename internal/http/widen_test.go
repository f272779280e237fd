package http_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/auth"
)

// serverDefault reads a server's default_policy ("" when it has none).
func (e *apiEnv) serverDefault(label string) string {
	e.t.Helper()
	var s server
	e.must(200, "GET", "/api/mcp/servers/"+label, nil, &s)
	if s.DefaultPolicy == nil {
		return ""
	}
	return *s.DefaultPolicy
}

// globalDefault reads the global default_policy.
func (e *apiEnv) globalDefault() string {
	e.t.Helper()
	var s struct {
		DefaultPolicy string `json:"default_policy"`
	}
	e.must(200, "GET", "/api/settings", nil, &s)
	return s.DefaultPolicy
}

// auditOf returns the entries with action, newest first.
func auditOf(es []auditEntry, action string) []auditEntry {
	var out []auditEntry
	for _, a := range es {
		if a.Action == action {
			out = append(out, a)
		}
	}
	return out
}

// An admin approves one card "for every tool of this server": in the same
// transaction the request is approved, demo's default policy becomes never
// (audited as server.update, as the settings page's change is), and the
// other pending request of the response that the new default covers
// (set_forecast) is approved with it, while send_alert, locked at Ask by
// its own workspace policy, still waits. From then on set_forecast runs
// without asking; send_alert still asks, and reset_forecasts, blocked by
// the workspace, stays blocked.
func TestWider_AdminApprovesEveryToolOfTheServer(t *testing.T) {
	e := newAPI(t)
	e.createDemo("demo")
	e.must(200, "PUT", policyPath("demo", "send_alert", "workspace"), map[string]any{"policy": "always", "locked": true}, nil)
	e.setPolicy("demo", "reset_forecasts", "blocked")

	s := e.send("", `delete_forecast {"city": "Oslo"} and set_forecast {"city": "Oslo", "summary": "Sun", "temperature_c": 20} and send_alert {"city": "Oslo", "message": "storm"}`).ok(t)
	conv, aps := s.conv(t), all[approval](t, s, "approval.required")
	if len(aps) != 3 {
		t.Fatalf("%d approval requests, want 3 (delete, set, send_alert)", len(aps))
	}
	byTool := map[string]approval{}
	for _, a := range aps {
		byTool[a.ToolName] = a
	}
	audits := len(e.audit())
	d := e.decide(conv, byTool["delete_forecast"].ID, true, map[string]any{"scope": "server"}).ok(t)
	got := map[string]decisionEvent{}
	for _, ev := range all[decisionEvent](t, d, "decision.recorded") {
		got[ev.ApprovalRequestID] = ev
	}
	first, covered := got[byTool["delete_forecast"].ID], got[byTool["set_forecast"].ID]
	if first.State != "approved" || first.PolicyChanged == nil || first.PolicyChanged.Policy != "never" {
		t.Errorf("the wider decision: %+v, want approved with policy_changed never", first)
	}
	if covered.State != "approved" || !strings.Contains(deref2(covered.Reason), "every tool of demo") {
		t.Errorf("set_forecast: %+v, want approved, covered by the wider decision", covered)
	}
	if _, ok := got[byTool["send_alert"].ID]; ok || len(got) != 2 {
		t.Errorf("decisions %+v: send_alert (locked at Ask) must stay pending", got)
	}
	if c := one[completedEvent](t, d, "completed"); c.Sent || len(c.PendingIDs) != 1 || c.PendingIDs[0] != byTool["send_alert"].ID {
		t.Errorf("completed %+v, want nothing sent and send_alert pending", c)
	}
	if p := e.serverDefault("demo"); p != "never" {
		t.Errorf("demo's default policy is %q, want never", p)
	}
	es := e.audit()
	if n := len(es) - audits; n != 3 {
		t.Errorf("%d new audit entries, want 3 (two decisions, one server.update)", n)
	}
	upd := auditOf(es, "server.update")
	if len(upd) != 1 || upd[0].ActorID != e.admin.ID || !strings.Contains(string(upd[0].After), `"default_policy":"never"`) ||
		!strings.Contains(string(upd[0].Before), `"default_policy":null`) {
		t.Errorf("server.update entries %+v, want one by the admin from null to never", upd)
	}
	var wide string
	for _, a := range auditOf(es, "approval.decide") {
		if strings.Contains(string(a.After), byTool["delete_forecast"].ID) {
			wide = string(a.After)
		}
	}
	if !strings.Contains(wide, `"scope":"server"`) || !strings.Contains(wide, `"default_changed":true`) {
		t.Errorf("the decision's audit entry %s, want scope server and default_changed", wide)
	}

	e.decide(conv, byTool["send_alert"].ID, true, nil).ok(t)
	next := e.send(conv, `set_forecast {"city": "Rome", "summary": "Rain", "temperature_c": 12}`).ok(t)
	if n := len(all[approval](t, next, "approval.required")); n != 0 {
		t.Errorf("set_forecast asked %d times after the server was approved", n)
	}
	locked := e.send(conv, `send_alert {"city": "Rome", "message": "rain"}`).ok(t)
	if a := all[approval](t, locked, "approval.required"); len(a) != 1 || deref(a[0].AskLock) != "tool" {
		t.Errorf("send_alert (locked at Ask): cards %+v, want one with ask_lock tool", a)
	}
	if tl := e.tools("demo"); tl["reset_forecasts"].EffectivePolicy != "blocked" || tl["list_forecasts"].EffectivePolicy != "never" {
		t.Errorf("reset_forecasts is %q, list_forecasts %q; want blocked (the workspace's block wins) and never",
			tl["reset_forecasts"].EffectivePolicy, tl["list_forecasts"].EffectivePolicy)
	}
}

// "Approve everything" makes the global default never (settings.update);
// a locked global default or a blocked server default is kept: refused
// (403 policy_locked, 409 default_blocked), nothing recorded.
func TestWider_EverythingAndKeptDefaults(t *testing.T) {
	e := newAPI(t)
	e.askFor("delete_forecast")
	_, conv, a := e.askToDeleteOslo()

	e.must(200, "PUT", "/api/settings", map[string]any{"default_policy_locked": true}, nil)
	audits := len(e.audit())
	wantCode(t, "everything under a locked global default", e.decideRaw(conv, a.ID, map[string]any{"scope": "everything"}), 403, "policy_locked")
	e.must(200, "PUT", "/api/settings", map[string]any{"default_policy_locked": false}, nil)
	e.must(200, "PATCH", "/api/mcp/servers/demo", map[string]any{"default_policy": "blocked"}, nil)
	e.setPolicy("demo", "delete_forecast", "always") // still asks, with its own policy
	wantCode(t, "server under a blocked server default", e.decideRaw(conv, a.ID, map[string]any{"scope": "server"}), 409, "default_blocked")
	if n := len(e.audit()) - audits; n != 2 {
		t.Errorf("%d audit entries, want only the two settings changes (the refused decisions record nothing)", n)
	}
	e.must(200, "PATCH", "/api/mcp/servers/demo", map[string]any{"default_policy": nil}, nil)

	d := e.decide(conv, a.ID, true, map[string]any{"scope": "everything"}).ok(t)
	if ev := one[decisionEvent](t, d, "decision.recorded"); ev.State != "approved" || ev.PolicyChanged == nil || ev.PolicyChanged.Policy != "never" {
		t.Errorf("approve everything: %+v", ev)
	}
	if p := e.globalDefault(); p != "never" {
		t.Errorf("the global default is %q, want never", p)
	}
	set := auditOf(e.audit(), "settings.update")
	if len(set) == 0 || set[0].ActorID != e.admin.ID || !strings.Contains(string(set[0].After), `"default_policy":"never"`) {
		t.Errorf("settings.update %+v, want the admin's change to never", set)
	}
	// delete_forecast keeps its own policy (always): it still asks.
	if n := len(all[approval](t, e.send(conv, `delete_forecast {"city": "Rome"}`).ok(t), "approval.required")); n != 1 {
		t.Errorf("delete_forecast with its own policy asked %d times, want 1", n)
	}
}

// A member sees the wider choices only as links: the API refuses them with
// 403 admin_only and changes nothing (no default, no decision, no audit);
// the request still waits and can be approved once.
func TestWider_MemberRefused(t *testing.T) {
	e := newAPI(t)
	e.askFor("delete_forecast")
	member, _ := e.newUser(auth.Member)
	s := member.send("", `delete_forecast {"city": "Oslo"}`).ok(t)
	conv, a := s.conv(t), one[approval](t, s, "approval.required")
	audits := len(e.audit())
	for _, scope := range []string{"server", "everything"} {
		wantCode(t, "a member's scope "+scope, member.decideRaw(conv, a.ID, map[string]any{"scope": scope}), 403, "admin_only")
	}
	if n := len(e.audit()) - audits; n != 0 {
		t.Errorf("the refused decisions left %d audit entries", n)
	}
	if p, g := e.serverDefault("demo"), e.globalDefault(); p != "" || g != "ask_unless_read_only" {
		t.Errorf("after a member's refused wider decisions: server default %q, global %q; want unchanged", p, g)
	}
	if ev := one[decisionEvent](t, member.decide(conv, a.ID, true, nil).ok(t), "decision.recorded"); ev.State != "approved" {
		t.Errorf("approve once after the refusals: %+v", ev)
	}
}

// A tool whose card an admin limited to "approve once" and "deny" offers
// no wider choice: 403 choice_not_allowed, nothing changes. Bad input (a
// wider denial, or with remember) is 400 with the field named.
func TestWider_RefusedByChoicesAndBadInput(t *testing.T) {
	e := newAPI(t)
	e.askFor("delete_forecast")
	e.must(200, "PUT", cardPath, map[string]any{"choices": []string{"approve_once", "deny"}}, nil)
	_, conv, a := e.askToDeleteOslo()
	audits := len(e.audit())
	for _, scope := range []string{"server", "everything"} {
		wantCode(t, "scope "+scope+" on a limited card", e.decideRaw(conv, a.ID, map[string]any{"scope": scope}), 403, "choice_not_allowed")
	}
	for _, body := range []map[string]any{{"scope": "server", "approve": false}, {"scope": "everything", "remember": true}} {
		wantCode(t, "bad wider decision", e.decideRaw(conv, a.ID, body), 400, "invalid_decision")
	}
	if n := len(e.audit()) - audits; n != 0 {
		t.Errorf("the refused decisions left %d audit entries", n)
	}
	if p, g := e.serverDefault("demo"), e.globalDefault(); p != "" || g != "ask_unless_read_only" {
		t.Errorf("server default %q, global %q; want unchanged", p, g)
	}
}

// decideRaw posts one approving decision with extra and returns the
// answer as a response (for refusals).
func (e *apiEnv) decideRaw(conv, id string, extra map[string]any) response {
	e.t.Helper()
	s := e.decide(conv, id, true, extra)
	body := s.body
	if len(body) == 0 {
		body, _ = json.Marshal(s.names())
	}
	return response{status: s.status, body: body}
}
