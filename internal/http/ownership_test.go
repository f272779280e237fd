package http_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/conversation"
)

// notFound fails the test unless res is a 404 with code.
func notFound(t *testing.T, what string, status int, body []byte, code string) string {
	t.Helper()
	var e apiError
	_ = json.Unmarshal(body, &e)
	if status != 404 || e.Error.Code != code {
		t.Errorf("%s: %d %s, want 404 %s", what, status, body, code)
	}
	return e.Error.Message
}

// A conversation belongs to its creator: another member and an admin get
// 404 for it, its approvals and its streams on every route, exactly as for
// a conversation that does not exist, and nothing changes.
func TestOwnership_OthersGet404OnEveryConversationRoute(t *testing.T) {
	e := newAPI(t)
	e.askFor("delete_forecast")
	ana, anaUser := e.newUser(auth.Member)
	ben, _ := e.newUser(auth.Member)
	benConv := ben.send("", "hello").ok(t).conv(t)
	_, conv, ap := ana.askToDeleteOslo()

	for who, o := range map[string]*apiEnv{"member": ben, "admin": e} {
		const code = "conversation_not_found"
		for _, r := range []struct{ method, path string }{
			{"GET", "/api/conversations/" + conv},
			{"PATCH", "/api/conversations/" + conv},
			{"DELETE", "/api/conversations/" + conv},
			{"POST", "/api/conversations/" + conv + "/cancel"},
		} {
			var body any
			if r.method == "PATCH" {
				body = map[string]any{"title": "mine now"}
			}
			res := o.call(r.method, r.path, body)
			msg := notFound(t, who+" "+r.method+" "+r.path, res.status, res.body, code)
			missing := o.call(r.method, strings.Replace(r.path, conv, "conv_000000000000000000000000", 1), body)
			if want := strings.Replace(string(missing.body), "conv_000000000000000000000000", conv, 1); missing.status != res.status || want != string(res.body) {
				t.Errorf("%s %s %s answers %s, a missing conversation %s: an existence oracle", who, r.method, r.path, res.body, missing.body)
			}
			_ = msg
		}
		for _, s := range []stream{
			o.stream("/api/conversations/"+conv+"/retry", map[string]any{}),
			o.send(conv, "show me"),
			o.decide(conv, ap.ID, true, map[string]any{"remember": true}),
		} {
			notFound(t, who+" stream route", s.status, s.body, code)
		}
		var list struct{ Conversations []struct{ ID string } }
		o.must(200, "GET", "/api/conversations", nil, &list)
		for _, c := range list.Conversations {
			if c.ID == conv {
				t.Errorf("%s's list shows ana's conversation", who)
			}
		}
	}
	// Ben's own conversation id with ana's approval request: not his either.
	s := ben.decide(benConv, ap.ID, true, nil)
	notFound(t, "ben deciding ana's approval in his conversation", s.status, s.body, "approval_not_found")

	// Ana's conversation is as it was: her card still pending, no policy written.
	tr := ana.transcript(conv)
	if len(tr.Pending) != 1 || tr.Pending[0].State != "pending" || tr.Conversation.Title == "mine now" {
		t.Errorf("ana's conversation changed: %+v", tr)
	}
	if tl := ana.tools("demo")["delete_forecast"]; deref(tl.UserPolicy) != nil || deref(tl.Policy) != "always" {
		t.Errorf("delete_forecast policy %v, ana's %v; want always and none", deref(tl.Policy), deref(tl.UserPolicy))
	}
	var list struct{ Conversations []struct{ ID string } }
	ana.must(200, "GET", "/api/conversations", nil, &list)
	if len(list.Conversations) != 1 || list.Conversations[0].ID != conv {
		t.Errorf("ana's list = %+v; want only her conversation", list.Conversations)
	}

	// Only the owner decides; the decision names her.
	ana.decide(conv, ap.ID, false, nil).ok(t)
	res := ana.must(200, "GET", "/api/conversations/"+conv, nil, nil)
	var raw struct {
		Items []struct {
			Approval *struct {
				State       string  `json:"state"`
				DecidedBy   *string `json:"decided_by"`
				DecidedByID *string `json:"decided_by_id"`
			} `json:"approval"`
		} `json:"items"`
	}
	if err := json.Unmarshal(res.body, &raw); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, it := range raw.Items {
		if a := it.Approval; a != nil {
			found = true
			if a.State != "denied" || deref(a.DecidedBy) != anaUser.Email || deref(a.DecidedByID) != anaUser.ID {
				t.Errorf("decided approval: %s by %v (%v), want denied by %s (%s)", a.State, deref(a.DecidedBy), deref(a.DecidedByID), anaUser.Email, anaUser.ID)
			}
		}
	}
	if !found {
		t.Errorf("no approval in ana's transcript: %s", res.body)
	}
}

// A member's remember writes that member's personal policy: the admin's
// effective policy, and the workspace's, stay as they were.
func TestOwnership_MemberRememberWritesOnlyTheirPersonalPolicy(t *testing.T) {
	e := newAPI(t)
	e.askFor("get_forecast")
	ana, _ := e.newUser(auth.Member)
	s := ana.send("", `get_forecast {"city": "Oslo"}`).ok(t)
	ap := one[approval](t, s, "approval.required")
	f := ana.decide(s.conv(t), ap.ID, true, map[string]any{"remember": true}).ok(t)
	var d struct {
		PolicyChanged *struct {
			Policy string `json:"policy"`
			Layer  string `json:"layer"`
		} `json:"policy_changed"`
	}
	for _, ev := range f.events {
		if ev.Name == "decision.recorded" {
			_ = json.Unmarshal([]byte(ev.Data), &d)
		}
	}
	if d.PolicyChanged == nil || d.PolicyChanged.Policy != "never" || d.PolicyChanged.Layer != "user" {
		t.Errorf("decision.recorded policy_changed = %+v; want never in layer user", d.PolicyChanged)
	}
	if tl := ana.tools("demo")["get_forecast"]; deref(tl.UserPolicy) != "never" || tl.EffectivePolicy != "never" {
		t.Errorf("ana's get_forecast: personal %v, effective %s; want never, never", deref(tl.UserPolicy), tl.EffectivePolicy)
	}
	if tl := e.tools("demo")["get_forecast"]; deref(tl.Policy) != "always" || deref(tl.UserPolicy) != nil || tl.EffectivePolicy != "always" {
		t.Errorf("admin's get_forecast: workspace %v, personal %v, effective %s; want always, none, always",
			deref(tl.Policy), deref(tl.UserPolicy), tl.EffectivePolicy)
	}
	// And the admin is still asked.
	if n := len(all[approval](t, e.send("", `get_forecast {"city": "Rome"}`).ok(t), "approval.required")); n != 1 {
		t.Errorf("the admin's turn asked %d times, want 1", n)
	}
}

// Beyond USER_MESSAGES_PER_MINUTE and USER_MAX_CONCURRENT_TURNS a turn is
// refused with 429 and Retry-After before anything starts.
func TestLimits_RefusedWith429AndRetryAfter(t *testing.T) {
	e := newAPIWith(t, envOptions{limits: conversation.Limits{MessagesPerMinute: 1, MaxConcurrentTurns: 1}})
	e.createDemo("demo")
	ana, _ := e.newUser(auth.Member)
	conv := ana.send("", "hello").ok(t).conv(t)
	before := len(ana.transcript(conv).Items)

	s := ana.send(conv, "again")
	var body apiError
	_ = json.Unmarshal(s.body, &body)
	if s.status != 429 || body.Error.Code != "too_many_messages" || s.header.Get("Retry-After") == "" ||
		!strings.Contains(body.Error.Message, "USER_MESSAGES_PER_MINUTE") {
		t.Errorf("second message: %d %s (Retry-After %q); want 429 too_many_messages", s.status, s.body, s.header.Get("Retry-After"))
	}
	if n := len(ana.transcript(conv).Items); n != before {
		t.Errorf("%d items after the refusal, want %d (nothing stored)", n, before)
	}

	// A turn of cara's left running (prepared, never run) fills her one slot.
	cara, caraUser := e.newUser(auth.Member)
	if _, err := e.chat.StartMessage(auth.WithUser(context.Background(), caraUser), "", "busy"); err != nil {
		t.Fatal(err)
	}
	s = cara.send("", "another")
	body = apiError{}
	_ = json.Unmarshal(s.body, &body)
	if s.status != 429 || body.Error.Code != "too_many_turns" || s.header.Get("Retry-After") == "" ||
		!strings.Contains(body.Error.Message, "USER_MAX_CONCURRENT_TURNS") {
		t.Errorf("a second turn: %d %s (Retry-After %q); want 429 too_many_turns", s.status, s.body, s.header.Get("Retry-After"))
	}
	var list struct{ Conversations []struct{ ID string } }
	cara.must(200, "GET", "/api/conversations", nil, &list)
	if len(list.Conversations) != 1 {
		t.Errorf("cara has %d conversations, want 1 (the refusal created none)", len(list.Conversations))
	}
	// Other users have their own limits.
	ben, _ := e.newUser(auth.Member)
	ben.send("", "hello").ok(t)
}
