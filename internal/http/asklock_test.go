package http_test

import (
	"testing"

	"github.com/toolgate/toolgate/internal/auth"
)

// A lock at Ask holds against everything that would loosen it. A member
// holds a grant for this conversation and one for an hour from before an
// admin locked delete_forecast at Ask: neither applies any more, the call
// asks with the lock on the card (ask_lock), and the decision API refuses
// every loosening approval (conversation, hour, remember) with 403
// policy_locked, recording nothing, while "approve once" goes through.
// The same holds for a locked server default that resolves to always for
// the tool, where an approving argument rule leaves the card in place.
func TestLockAtAsk_HoldsAgainstGrantsRememberAndRules(t *testing.T) {
	e := newAPI(t)
	e.askFor("delete_forecast")
	member, _ := e.newUser(auth.Member)

	// Before the lock: a grant for the conversation and one for an hour.
	s := member.send("", `delete_forecast {"city": "Oslo"}`).ok(t)
	conv, a := s.conv(t), one[approval](t, s, "approval.required")
	if a.AskLock != nil {
		t.Errorf("an unlocked tool's card says ask_lock %q", *a.AskLock)
	}
	member.decide(conv, a.ID, true, map[string]any{"scope": "conversation"}).ok(t)
	s = member.send("", `delete_forecast {"city": "Lisbon"}`).ok(t)
	member.decide(s.conv(t), one[approval](t, s, "approval.required").ID, true, map[string]any{"scope": "hour"}).ok(t)
	if n := len(all[approval](t, member.send(conv, `delete_forecast {"city": "Rome"}`).ok(t), "approval.required")); n != 0 {
		t.Fatalf("before the lock the grant did not apply: %d cards", n)
	}

	e.must(200, "PUT", policyPath("demo", "delete_forecast", "workspace"), map[string]any{"policy": "always", "locked": true}, nil)

	next := member.send(conv, `delete_forecast {"city": "Berlin"}`).ok(t)
	aps := all[approval](t, next, "approval.required")
	if len(aps) != 1 {
		t.Fatalf("with the tool locked at Ask and a grant, %d cards; want 1 (the grant must not apply)", len(aps))
	}
	b := aps[0]
	if b.AskLock == nil || *b.AskLock != "tool" {
		t.Errorf("the card's ask_lock is %v, want \"tool\"", deref(b.AskLock))
	}
	for _, it := range next.items(t) {
		if it.Type == "mcp_call" {
			t.Errorf("a call ran before anyone decided: allowed_by %+v", it.AllowedBy)
		}
	}
	audits := len(e.audit())
	for _, extra := range []map[string]any{{"scope": "conversation"}, {"scope": "hour"}, {"remember": true}} {
		r := member.decide(conv, b.ID, true, extra)
		if r.status != 403 || !jsonHasCode(r.body, "policy_locked") {
			t.Errorf("approving %v under a lock at Ask: %d %s, want 403 policy_locked", extra, r.status, r.body)
		}
	}
	if n := len(e.audit()); n != audits {
		t.Errorf("the refused decisions left %d audit entries", n-audits)
	}
	d := member.decide(conv, b.ID, true, map[string]any{"scope": "once"}).ok(t)
	if ev := one[decisionEvent](t, d, "decision.recorded"); ev.State != "approved" {
		t.Errorf("approve once under the lock: %+v, want approved", ev)
	}

	// A locked server default that resolves to always for the tool (not
	// read-only) is a lock at Ask too; an approving rule leaves the card.
	e.must(200, "DELETE", policyPath("demo", "delete_forecast", "workspace"), nil, nil)
	e.must(200, "PATCH", "/api/mcp/servers/demo", map[string]any{"default_policy": "ask_unless_read_only", "default_policy_locked": true}, nil)
	e.must(200, "PUT", "/api/mcp/servers/demo/tools/delete_forecast/rules",
		rulesJSON{Rules: []ruleJSON{{When: `args.city == "Paris"`, Decision: "approve"}}}, nil)
	s = member.send(conv, `delete_forecast {"city": "Paris"}`).ok(t)
	c := one[approval](t, s, "approval.required")
	if c.AskLock == nil || *c.AskLock != "server" {
		t.Errorf("under a locked server default the card's ask_lock is %v, want \"server\"", deref(c.AskLock))
	}
	r := member.decide(conv, c.ID, true, map[string]any{"scope": "conversation"})
	wantCode(t, "a grant under a locked server default", response{status: r.status, body: r.body}, 403, "policy_locked")
}
