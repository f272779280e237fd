package http_test

import (
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/auth"
)

type grantJSON struct {
	ID                string  `json:"id"`
	ConversationID    *string `json:"conversation_id"`
	ToolName          string  `json:"tool_name"`
	ApprovalRequestID string  `json:"approval_request_id"`
	ExpiresAt         *string `json:"expires_at"`
	State             string  `json:"state"`
}

type grantList struct {
	Grants []grantJSON `json:"grants"`
}

// Approving one of two cards of a tool "for this conversation" over the
// API settles both in one follow-up; the grant is listed per conversation
// and in all of mine, names itself on the next call, is revoked by its
// owner only (audited), and then the tool asks again. Nobody else sees it:
// 401 without credentials, 404 for another user.
func TestGrants_SettleListRevokeAndOwnership(t *testing.T) {
	e := newAPI(t)
	e.askFor("delete_forecast")
	ana, _ := e.newUser(auth.Member)
	ben, _ := e.newUser(auth.Member)
	s := ana.send("", `delete_forecast {"city": "Oslo"} and delete_forecast {"city": "Lisbon"}`).ok(t)
	conv, aps := s.conv(t), all[approval](t, s, "approval.required")
	if len(aps) != 2 {
		t.Fatalf("%d approval requests, want 2", len(aps))
	}
	before := e.up.count()
	d := ana.decide(conv, aps[0].ID, true, map[string]any{"scope": "conversation"}).ok(t)
	decisions := all[decisionEvent](t, d, "decision.recorded")
	if len(decisions) != 2 || decisions[1].ApprovalRequestID != aps[1].ID || decisions[1].State != "approved" ||
		!strings.Contains(deref2(decisions[1].Reason), "Covered by your grant for this conversation") {
		t.Errorf("decisions %+v; want both approved, the second covered by the grant", decisions)
	}
	if n := e.up.count() - before; n != 1 {
		t.Errorf("%d follow-ups, want 1", n)
	}
	if !one[completedEvent](t, d, "completed").Sent {
		t.Error("the follow-up was not sent")
	}

	var mine, here grantList
	ana.must(200, "GET", "/api/conversations/"+conv+"/grants", nil, &here)
	ana.must(200, "GET", "/api/grants", nil, &mine)
	if len(here.Grants) != 1 || len(mine.Grants) != 1 || here.Grants[0].ID != mine.Grants[0].ID {
		t.Fatalf("grants here %+v, mine %+v; want the one grant in both", here, mine)
	}
	g := here.Grants[0]
	if deref2(g.ConversationID) != conv || g.ToolName != "delete_forecast" || g.ApprovalRequestID != aps[0].ID ||
		g.ExpiresAt != nil || g.State != "active" || !strings.HasPrefix(g.ID, "grant_") {
		t.Errorf("grant %+v", g)
	}
	next := ana.send(conv, `delete_forecast {"city": "Berlin"}`).ok(t)
	if n := len(all[approval](t, next, "approval.required")); n != 0 {
		t.Fatal("with the grant the tool asked again")
	}
	for _, it := range next.items(t) {
		if it.Type == "mcp_call" && (it.AllowedBy == nil || it.AllowedBy.Kind != "conversation" || it.AllowedBy.GrantID != g.ID) {
			t.Errorf("call allowed_by %+v, want conversation with grant %s", it.AllowedBy, g.ID)
		}
	}

	// Without credentials: 401. Another user: 404, and nothing changes.
	for _, r := range []struct{ method, path string }{
		{"GET", "/api/conversations/" + conv + "/grants"}, {"GET", "/api/grants"}, {"DELETE", "/api/grants/" + g.ID},
	} {
		if res := e.anon().call(r.method, r.path, nil); res.status != 401 {
			t.Errorf("%s %s without credentials: %d, want 401", r.method, r.path, res.status)
		}
	}
	res := ben.call("GET", "/api/conversations/"+conv+"/grants", nil)
	notFound(t, "ben listing ana's conversation's grants", res.status, res.body, "conversation_not_found")
	res = ben.call("DELETE", "/api/grants/"+g.ID, nil)
	notFound(t, "ben revoking ana's grant", res.status, res.body, "grant_not_found")
	missing := ben.call("DELETE", "/api/grants/grant_000000000000000000000000", nil)
	if missing.status != 404 || strings.ReplaceAll(string(missing.body), "grant_000000000000000000000000", g.ID) != string(res.body) {
		t.Errorf("another user's grant answers %s, a missing one %s: an existence oracle", res.body, missing.body)
	}
	var bens grantList
	ben.must(200, "GET", "/api/grants?include=expired", nil, &bens)
	if len(bens.Grants) != 0 {
		t.Errorf("ben sees grants %+v", bens.Grants)
	}
	ana.must(200, "GET", "/api/grants", nil, &mine)
	if len(mine.Grants) != 1 || mine.Grants[0].State != "active" {
		t.Fatalf("ben's attempts changed ana's grant: %+v", mine)
	}
	if res := ana.call("GET", "/api/grants?include=all", nil); res.status != 400 || !strings.Contains(string(res.body), "invalid_include") {
		t.Errorf("include=all: %d %s, want 400 invalid_include", res.status, res.body)
	}

	ana.must(204, "DELETE", "/api/grants/"+g.ID, nil, nil)
	ana.must(204, "DELETE", "/api/grants/"+g.ID, nil, nil) // already revoked: nothing changes
	ana.must(200, "GET", "/api/grants", nil, &mine)
	if len(mine.Grants) != 0 {
		t.Errorf("live grants after revoking: %+v", mine.Grants)
	}
	ana.must(200, "GET", "/api/grants?include=expired", nil, &mine)
	if len(mine.Grants) != 1 || mine.Grants[0].State != "revoked" {
		t.Errorf("all grants after revoking: %+v; want it revoked", mine.Grants)
	}
	var audit struct {
		Entries []struct{ Action string } `json:"entries"`
	}
	ana.must(200, "GET", "/api/audit?action=grant.revoke", nil, &audit)
	if len(audit.Entries) != 1 {
		t.Errorf("%d grant.revoke audit entries, want 1", len(audit.Entries))
	}
	again := ana.send(conv, `delete_forecast {"city": "Berlin"}`).ok(t)
	if n := len(all[approval](t, again, "approval.required")); n != 1 {
		t.Errorf("after revoking, %d prompts, want 1", n)
	}
}

// A timed grant ("for 1 hour") is listed with its expiry and no
// conversation; the scope is validated with a clear 400 that records
// nothing.
func TestGrants_HourScopeAndItsValidation(t *testing.T) {
	e := newAPI(t)
	e.askFor("delete_forecast")
	_, conv, ap := e.askToDeleteOslo()
	for _, bad := range []map[string]any{
		{"scope": "week"},
		{"scope": "hour", "approve": false},
	} {
		approve := true
		if v, ok := bad["approve"]; ok {
			approve = v.(bool)
			delete(bad, "approve")
		}
		s := e.decide(conv, ap.ID, approve, bad)
		if s.status != 400 || !strings.Contains(string(s.body), "invalid_decision") || !strings.Contains(string(s.body), `"scope"`) {
			t.Errorf("%v: %d %s, want 400 invalid_decision naming scope", bad, s.status, s.body)
		}
	}
	e.decide(conv, ap.ID, true, map[string]any{"scope": "hour"}).ok(t)
	var mine grantList
	e.must(200, "GET", "/api/grants", nil, &mine)
	if len(mine.Grants) != 1 || mine.Grants[0].ConversationID != nil || mine.Grants[0].ExpiresAt == nil {
		t.Fatalf("grants %+v; want one timed grant", mine.Grants)
	}
	other := e.send("", `delete_forecast {"city": "Lisbon"}`).ok(t)
	for _, it := range other.items(t) {
		if it.Type == "mcp_call" && (it.AllowedBy == nil || it.AllowedBy.Kind != "grant" || it.AllowedBy.ExpiresAt == nil) {
			t.Errorf("call allowed_by %+v, want a timed grant with its expiry", it.AllowedBy)
		}
	}
	var here grantList
	e.must(200, "GET", "/api/conversations/"+other.conv(t)+"/grants", nil, &here)
	if len(here.Grants) != 1 || here.Grants[0].ID != mine.Grants[0].ID {
		t.Errorf("another conversation lists %+v; want the timed grant", here.Grants)
	}
}
