package http_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/auth"
)

const cardPath = "/api/mcp/servers/demo/tools/delete_forecast/approval-card"

// An admin gives delete_forecast words and limits its card to "approve
// once" and "deny". The card carries the words filled from the arguments
// with a secret left "[redacted]", a nested placeholder filled, an unknown
// one left as written, and only the two choices. A decision with another
// choice (a grant, remember, a correction) is refused with 403
// choice_not_allowed and records nothing; approve once goes through. The
// change is audited.
func TestApprovalCard_WordsAndChoices(t *testing.T) {
	e := newAPI(t)
	e.askFor("delete_forecast")
	text := "Delete the forecast for {city} (key {api_token}, {where.region}, {nope})"
	e.must(200, "PUT", cardPath, map[string]any{"approval_text": text, "choices": []string{"approve_once", "deny"}}, nil)

	s := e.send("", `delete_forecast {"city": "Oslo", "api_token": "s3cret-value", "where": {"region": "north"}}`).ok(t)
	conv, a := s.conv(t), one[approval](t, s, "approval.required")
	want := "Delete the forecast for Oslo (key [redacted], north, {nope})"
	if a.ApprovalText == nil || *a.ApprovalText != want {
		t.Errorf("approval_text %v, want %q", deref(a.ApprovalText), want)
	}
	if !slices.Equal(a.Choices, []string{"approve_once", "deny"}) {
		t.Errorf("choices %v, want [approve_once deny]", a.Choices)
	}
	for _, ev := range s.events {
		if ev.Name == "approval.required" && strings.Contains(string(ev.Data), "s3cret") {
			t.Errorf("event %s shows the secret: %s", ev.Name, ev.Data)
		}
	}

	audits := len(e.audit())
	for _, extra := range []map[string]any{{"scope": "conversation"}, {"scope": "hour"}, {"remember": true}} {
		r := e.decide(conv, a.ID, true, extra)
		wantCode(t, "approving with "+strings.Join(keys(extra), ","), response{status: r.status, body: r.body}, 403, "choice_not_allowed")
	}
	r := e.decide(conv, a.ID, false, map[string]any{"correction": map[string]any{"city": "Bergen"}})
	wantCode(t, "denying with a correction", response{status: r.status, body: r.body}, 403, "choice_not_allowed")
	if n := len(e.audit()); n != audits {
		t.Errorf("the refused decisions left %d audit entries", n-audits)
	}
	if gs := e.must(200, "GET", "/api/grants", nil, nil); strings.Contains(string(gs.body), a.ID) {
		t.Errorf("a refused decision left a grant: %s", gs.body)
	}
	d := e.decide(conv, a.ID, true, map[string]any{"scope": "once"}).ok(t)
	if ev := one[decisionEvent](t, d, "decision.recorded"); ev.State != "approved" {
		t.Errorf("approve once: %+v, want approved", ev)
	}

	entries := e.audit()
	found := false
	for _, en := range entries {
		if en.Action == "approval_card.set" {
			found = true
		}
	}
	if !found {
		t.Error("no approval_card.set audit entry")
	}

	// Without the card: no words, every choice.
	e.must(204, "DELETE", cardPath, nil, nil)
	s = e.send(conv, `delete_forecast {"city": "Rome"}`).ok(t)
	b := one[approval](t, s, "approval.required")
	if b.ApprovalText != nil || len(b.Choices) != 6 {
		t.Errorf("after DELETE: approval_text %v, choices %v; want null and all six", deref(b.ApprovalText), b.Choices)
	}
}

// A plain deny stays allowed when the choices offer it, and a tool limited
// to deny_with_correction refuses a plain deny.
func TestApprovalCard_DenyOnlyWithCorrection(t *testing.T) {
	e := newAPI(t)
	e.askFor("delete_forecast")
	e.must(200, "PUT", cardPath, map[string]any{"choices": []string{"approve_hour", "deny_with_correction"}}, nil)
	s := e.send("", `delete_forecast {"city": "Oslo"}`).ok(t)
	conv, a := s.conv(t), one[approval](t, s, "approval.required")
	if a.ApprovalText != nil {
		t.Errorf("approval_text %q without words", *a.ApprovalText)
	}
	r := e.decide(conv, a.ID, false, nil)
	wantCode(t, "a plain deny", response{status: r.status, body: r.body}, 403, "choice_not_allowed")
	r = e.decide(conv, a.ID, true, nil)
	wantCode(t, "approve once", response{status: r.status, body: r.body}, 403, "choice_not_allowed")
	e.decide(conv, a.ID, false, map[string]any{"correction": map[string]any{"city": "Bergen"}}).ok(t)
}

// A card limited to grants alone, with the tool locked at Ask (which
// forbids grants), would leave no way to approve: the card offers Approve
// once in their place, and the decision API takes it, while the grant
// stays refused.
func TestApprovalCard_GrantsOnlyUnderLockOffersApproveOnce(t *testing.T) {
	e := newAPI(t)
	e.createDemo("demo")
	e.must(200, "PUT", cardPath, map[string]any{"choices": []string{"approve_conversation", "deny"}}, nil)
	e.must(200, "PUT", policyPath("demo", "delete_forecast", "workspace"), map[string]any{"policy": "always", "locked": true}, nil)
	s := e.send("", `delete_forecast {"city": "Oslo"}`).ok(t)
	conv, a := s.conv(t), one[approval](t, s, "approval.required")
	if !slices.Equal(a.Choices, []string{"approve_once", "deny"}) {
		t.Errorf("choices %v under the lock, want [approve_once deny]", a.Choices)
	}
	r := e.decide(conv, a.ID, true, map[string]any{"scope": "conversation"})
	if r.status != 403 {
		t.Errorf("a grant under the lock: %d %s, want 403", r.status, r.body)
	}
	d := e.decide(conv, a.ID, true, map[string]any{"scope": "once"}).ok(t)
	if ev := one[decisionEvent](t, d, "decision.recorded"); ev.State != "approved" {
		t.Errorf("approve once under the lock: %+v, want approved", ev)
	}
}

// Only admins set words and choices; bad input is a 400 that says what to
// fix; every signed-in user reads them.
func TestApprovalCard_AdminOnlyAndValidated(t *testing.T) {
	e := newAPI(t)
	e.askFor("delete_forecast")
	member, _ := e.newUser(auth.Member)
	res := member.call("PUT", cardPath, map[string]any{"approval_text": "x"})
	wantCode(t, "a member sets words", res, 403, "admin_only")
	res = member.call("DELETE", cardPath, nil)
	if res.status != 403 {
		t.Errorf("a member deletes a card: %d %s", res.status, res.body)
	}

	for _, c := range []struct {
		what string
		body map[string]any
		code string
	}{
		{"text too long", map[string]any{"approval_text": strings.Repeat("x", 501)}, "invalid_approval_text"},
		{"empty choices", map[string]any{"choices": []string{}}, "invalid_choices"},
		{"unknown choice", map[string]any{"choices": []string{"approve_once", "deny", "maybe"}}, "invalid_choices"},
		{"no deny", map[string]any{"choices": []string{"approve_once", "remember"}}, "invalid_choices"},
		{"no approve", map[string]any{"choices": []string{"deny", "remember"}}, "invalid_choices"},
		{"repeated", map[string]any{"choices": []string{"deny", "approve_once", "deny"}}, "invalid_choices"},
	} {
		wantCode(t, c.what, e.call("PUT", cardPath, c.body), 400, c.code)
	}
	wantCode(t, "unknown server", e.call("PUT", "/api/mcp/servers/nope/tools/x/approval-card", map[string]any{"approval_text": "x"}),
		404, "server_not_found")

	e.must(200, "PUT", cardPath, map[string]any{"approval_text": strings.Repeat("é", 500), "choices": []string{"approve_once", "deny"}}, nil)
	var got struct {
		Cards []struct {
			ToolName string   `json:"tool_name"`
			Choices  []string `json:"choices"`
		} `json:"cards"`
	}
	member.must(200, "GET", "/api/mcp/servers/demo/approval-cards", nil, &got)
	if len(got.Cards) != 1 || got.Cards[0].ToolName != "delete_forecast" || len(got.Cards[0].Choices) != 2 {
		t.Errorf("cards as a member reads them: %+v", got)
	}
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
