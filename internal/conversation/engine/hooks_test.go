package engine_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/conversation/engine"
	"github.com/toolgate/toolgate/internal/hooks"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/rules"
)

// hookRecv is a local decision hook: it verifies each request's signature
// with the secret Toolgate generated (401 when it does not verify), keeps
// what it received and answers with reply.
type hookRecv struct {
	url    string
	mu     sync.Mutex
	secret string
	got    []hooks.Request
	reply  func(w http.ResponseWriter, req hooks.Request)
}

func newHookRecv(t *testing.T, reply func(w http.ResponseWriter, req hooks.Request)) *hookRecv {
	t.Helper()
	h := &hookRecv{reply: reply}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		secret := h.secret
		h.mu.Unlock()
		if err := hooks.Verify(secret, r.Header.Get(hooks.SignatureHeader), body, time.Now(), time.Minute); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		var req hooks.Request
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		h.mu.Lock()
		h.got = append(h.got, req)
		h.mu.Unlock()
		h.reply(w, req)
	}))
	t.Cleanup(srv.Close)
	h.url = srv.URL
	return h
}

func hookAnswer(body string) func(http.ResponseWriter, hooks.Request) {
	return func(w http.ResponseWriter, _ hooks.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, body)
	}
}

func (h *hookRecv) requests() []hooks.Request {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]hooks.Request(nil), h.got...)
}

// setHook makes h the decision hook of label ("": the workspace's).
func (e *harness) setHook(label string, h *hookRecv, timeoutMS int) {
	e.t.Helper()
	_, secret, err := e.policies.Hooks.SetDecisionHook(as(e.t.Context(), admin), label, policy.DecisionHookInput{URL: h.url + "/decide", TimeoutMS: &timeoutMS})
	if err != nil {
		e.t.Fatal(err)
	}
	h.mu.Lock()
	h.secret = secret
	h.mu.Unlock()
}

// A hook that approves answers for the person: no card, the call runs in
// the same turn, one follow-up; the decision, the transcript and the call
// say "approved by hook (server demo)". The hook saw the signed request
// with the arguments redacted as on the card, and the rules were not asked.
func TestHooks_ApprovingHookRunsTheCallWithoutACard(t *testing.T) {
	e := newEngine(t, engineOptions{})
	// A rule that would deny: the hook is asked first and decides.
	e.setRules(deleteForecast, rules.Rule{When: `true`, Decision: rules.Deny})
	h := newHookRecv(t, hookAnswer(`{"decision":"approve","reason":"sandbox"}`))
	e.setHook("demo", h, 2000)
	n := e.up.count()
	conv, rec := e.send(ana, "", `delete_forecast {"city": "Oslo", "api_token": "s3cr3t"}`)
	if c := rec.count(conversation.EventNameApproval); c != 0 {
		t.Fatalf("%d cards; the hook approved, so want none: %v", c, rec.names())
	}
	d, ok := rec.first(conversation.EventNameDecision).(conversation.DecisionEvent)
	if !ok || d.State != conversation.Approved || d.DecidedBy != nil || d.Rules == nil || d.Rules.By != engine.ByHook ||
		d.Rules.Hook == nil || d.Rules.Hook.Scope != "server" || d.Rules.Hook.ServerLabel != "demo" {
		t.Fatalf("decision.recorded %+v; want approved by the server's hook", d)
	}
	if deref(d.Reason) != "Approved by hook (server demo): sandbox" {
		t.Errorf("reason %q", deref(d.Reason))
	}
	bodies := e.up.sent()[n:]
	if len(bodies) != 2 {
		t.Fatalf("%d requests upstream, want 2 (the message, then one follow-up)", len(bodies))
	}
	if as := answersIn(t, bodies[1]); len(as) != 1 || as[0].Approve == nil || !*as[0].Approve {
		t.Errorf("the follow-up answered %+v; want one approval", as)
	}
	if st := e.demo.State(); st.Calls["delete_forecast"] != 1 {
		t.Errorf("delete_forecast ran %d times, want once", st.Calls["delete_forecast"])
	}
	got := h.requests()
	if len(got) != 1 {
		t.Fatalf("the hook was asked %d times, want once", len(got))
	}
	r := got[0]
	if r.Hook != "server" || r.Server != "demo" || r.Tool != "delete_forecast" || r.User.Email != ana.Email || r.User.ID != ana.ID ||
		r.ConversationID != conv || !strings.HasPrefix(r.ApprovalRequestID, "mcpr_") || r.Test {
		t.Errorf("the hook received %+v", r)
	}
	if strings.Contains(string(r.Arguments), "s3cr3t") || !strings.Contains(string(r.Arguments), `"Oslo"`) || len(r.Redacted) != 1 {
		t.Errorf("the hook received arguments %s (redacted %v); want them as on the card", r.Arguments, r.Redacted)
	}
	tr := e.transcript(ana, conv)
	call := find(tr.Items, conversation.ItemCall)
	if call == nil || call.AllowedBy == nil || call.AllowedBy.Kind != "hook" || call.AllowedBy.Hook == nil || call.AllowedBy.Hook.Scope != "server" {
		t.Fatalf("the call allowed_by %+v; want the hook", call.AllowedBy)
	}
	if tr.Conversation.Streaming || len(tr.Pending) != 0 {
		t.Errorf("streaming %v with %d pending", tr.Conversation.Streaming, len(tr.Pending))
	}
	var audit string
	if err := e.pool.QueryRow(t.Context(), `SELECT after::text FROM audit_log WHERE action = $1 AND actor = 'toolgate'`,
		policy.ActionDecision).Scan(&audit); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(audit, `"by": "hook"`) || !strings.Contains(audit, "Approved by hook (server demo)") {
		t.Errorf("audit entry %s; want the hook's decision", audit)
	}
}

// A denial by the workspace's hook (the server has none) reaches the
// model with the hook's reason; the tool never runs.
func TestHooks_DenyingHookDeniesWithItsReason(t *testing.T) {
	e := newEngine(t, engineOptions{})
	h := newHookRecv(t, hookAnswer(`{"decision":"deny","reason":"Oslo is production"}`))
	e.setHook("", h, 2000)
	n := e.up.count()
	_, rec := e.send(ana, "", `delete_forecast {"city": "Oslo"}`)
	if c := rec.count(conversation.EventNameApproval); c != 0 {
		t.Fatalf("a card was shown: %v", rec.names())
	}
	bodies := e.up.sent()[n:]
	if len(bodies) != 2 {
		t.Fatalf("%d requests upstream, want 2", len(bodies))
	}
	as := answersIn(t, bodies[1])
	if len(as) != 1 || as[0].Approve == nil || *as[0].Approve || deref(as[0].Reason) != "Denied by hook (workspace): Oslo is production" {
		t.Fatalf("the follow-up answered %+v; want the workspace hook's denial", as)
	}
	if st := e.demo.State(); st.Calls["delete_forecast"] != 0 {
		t.Errorf("delete_forecast ran %d times, want never", st.Calls["delete_forecast"])
	}
}

// A hook that fails — too slow, 500, not JSON — counts as ask: the card
// shows (after the timeout), a notice says what went wrong, and the
// server's hook asking hands over to the workspace's.
func TestHooks_FailingHookAsks(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply func(http.ResponseWriter, hooks.Request)
		want  string
	}{
		{"slow", func(w http.ResponseWriter, r hooks.Request) {
			time.Sleep(1500 * time.Millisecond)
			hookAnswer(`{"decision":"approve"}`)(w, r)
		}, "did not answer within 300ms"},
		{"500", func(w http.ResponseWriter, _ hooks.Request) { http.Error(w, `{"decision":"approve"}`, 500) }, "answered 500"},
		{"bad JSON", hookAnswer(`approve`), "not JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t, engineOptions{})
			h := newHookRecv(t, tc.reply)
			e.setHook("demo", h, 300)
			ws := newHookRecv(t, hookAnswer(`{"decision":"ask"}`))
			e.setHook("", ws, 2000)
			start := time.Now()
			_, rec := e.send(ana, "", `delete_forecast {"city": "Oslo"}`)
			a, ok := rec.first(conversation.EventNameApproval).(conversation.Approval)
			if !ok || a.State != conversation.Pending {
				t.Fatalf("no card after the hook failed: %v", rec.names())
			}
			if d := time.Since(start); tc.name == "slow" && d > 5*time.Second {
				t.Errorf("the card took %s with a 300ms hook", d)
			}
			ns := rec.notices()
			if len(ns) != 1 || ns[0].Code != engine.NoticeDecisionHookFailed || !strings.Contains(ns[0].Message, tc.want) {
				t.Errorf("notices %+v; want one decision_hook_failed saying %q", ns, tc.want)
			}
			if len(ws.requests()) != 1 || ws.requests()[0].Hook != "workspace" {
				t.Errorf("the workspace hook was asked %d times; want once, after the server's failed", len(ws.requests()))
			}
			if st := e.demo.State(); st.Calls["delete_forecast"] != 0 {
				t.Errorf("delete_forecast ran")
			}
		})
	}
}

// A hook never loosens an admin's decision: it cannot approve a tool an
// admin locked to always (the card shows), nor one blocked since it asked
// (denied).
func TestHooks_HookCannotApproveLockedOrBlocked(t *testing.T) {
	t.Run("locked always", func(t *testing.T) {
		e := newEngine(t, engineOptions{})
		always, locked := policy.Always, true
		if _, err := e.policies.Policies.SetPolicy(as(t.Context(), admin), "demo", "delete_forecast",
			policy.PolicyChange{Layer: policy.LayerWorkspace, Policy: &always, Locked: &locked}); err != nil {
			t.Fatal(err)
		}
		h := newHookRecv(t, hookAnswer(`{"decision":"approve"}`))
		e.setHook("demo", h, 2000)
		_, rec := e.send(ana, "", `delete_forecast {"city": "Oslo"}`)
		if _, ok := rec.first(conversation.EventNameApproval).(conversation.Approval); !ok || rec.count(conversation.EventNameDecision) != 0 {
			t.Fatalf("want a card, the hook's approval clamped: %v", rec.names())
		}
		if len(h.requests()) != 1 {
			t.Errorf("the hook was asked %d times", len(h.requests()))
		}
		if st := e.demo.State(); st.Calls["delete_forecast"] != 0 {
			t.Errorf("delete_forecast ran")
		}
	})
	t.Run("blocked since it asked", func(t *testing.T) {
		e := newEngine(t, engineOptions{})
		// The admin blocks the tool while the hook thinks it over.
		h := newHookRecv(t, func(w http.ResponseWriter, r hooks.Request) {
			blocked := policy.Blocked
			if _, err := e.policies.Policies.SetPolicy(as(t.Context(), admin), "demo", "delete_forecast",
				policy.PolicyChange{Layer: policy.LayerWorkspace, Policy: &blocked}); err != nil {
				t.Error(err)
			}
			hookAnswer(`{"decision":"approve"}`)(w, r)
		})
		e.setHook("demo", h, 5000)
		n := e.up.count()
		_, rec := e.send(ana, "", `delete_forecast {"city": "Oslo"}`)
		d, ok := rec.first(conversation.EventNameDecision).(conversation.DecisionEvent)
		if !ok || d.State != conversation.Denied || d.Rules == nil || !d.Rules.Clamped || d.Rules.By != engine.ByHook {
			t.Fatalf("decision %+v; want denied, the hook's approval clamped: %v", d, rec.names())
		}
		if !strings.Contains(deref(d.Reason), "the tool is blocked") {
			t.Errorf("reason %q", deref(d.Reason))
		}
		if as := answersIn(t, e.up.sent()[n:][1]); len(as) != 1 || *as[0].Approve {
			t.Errorf("the follow-up answered %+v; want a denial", as)
		}
		if st := e.demo.State(); st.Calls["delete_forecast"] != 0 {
			t.Errorf("delete_forecast ran")
		}
	})
}
