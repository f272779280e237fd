package http_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/auth"
)

// A chat's request approved from the inbox is recorded as the chat records
// it and its follow-up runs in the background: the tool runs, the chat's
// open stream sees the decision and the answer, the answer is the request
// as decided, and it leaves the inbox. Catches: a decision recorded
// without the follow-up (the tool never runs), a follow-up tied to the
// HTTP request, an answer before the decision is stored.
func TestInboxDecide_ChatRequestRunsItsFollowUpInTheBackground(t *testing.T) {
	e := newAPI(t)
	e.askFor("delete_forecast")
	ana, _ := e.newUser(auth.Member)
	_, conv, ap := ana.askToDeleteOslo()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	<-e.listening
	res, evs := ana.follow(ctx, conv, -1)
	if res.StatusCode != 200 {
		t.Fatalf("follow: %d", res.StatusCode)
	}

	r, ae := ana.decideInbox(ap.ID, map[string]any{"approve": true, "reason": "fine"})
	var got waiting
	if r.status != 200 || json.Unmarshal(r.body, &got) != nil {
		t.Fatalf("decision: %d %s (%s)", r.status, r.body, ae.Error.Code)
	}
	if got.ID != ap.ID || got.State != "approved" || got.Source.Kind != "chat" || got.Source.ConversationID != conv || got.ExpiresAt != nil {
		t.Errorf("answer %+v, want the request approved, with its source", got)
	}
	seen := until(t, evs, "completed")
	names := make([]string, len(seen))
	for i, ev := range seen {
		names[i] = ev.Name
	}
	if !slices.Contains(names, "decision.recorded") || !slices.Contains(names, "item.done") {
		t.Errorf("the chat's stream saw %v, want the decision and the follow-up", names)
	}
	waitFor(t, "Oslo deleted", func() bool { _, ok := e.demo.State().Forecasts["Oslo"]; return !ok })
	if n := e.demo.State().Calls["delete_forecast"]; n != 1 {
		t.Errorf("delete_forecast ran %d times, want once", n)
	}
	if left := ana.inbox(); len(left) != 0 {
		t.Errorf("inbox after the decision %v, want empty", ids(left))
	}
	waitFor(t, "the follow-up stored", func() bool {
		tr := ana.transcript(conv)
		return len(tr.Pending) == 0 && !tr.Conversation.Streaming && lastItem(tr) == "message"
	})
	// Again: not pending, 409 with the request as it is; nothing more runs.
	r, ae = ana.decideInbox(ap.ID, map[string]any{"approve": false})
	if r.status != 409 || ae.Error.Code != "approval_already_decided" || !strings.Contains(string(r.body), `"state":"approved"`) {
		t.Errorf("second decision: %d %s, want 409 approval_already_decided with the approved request", r.status, r.body)
	}
	if n := e.demo.State().Calls["delete_forecast"]; n != 1 {
		t.Errorf("delete_forecast ran %d times after a repeat, want once", n)
	}
}

func lastItem(tr transcript) string {
	if len(tr.Items) == 0 {
		return ""
	}
	return tr.Items[len(tr.Items)-1].Type
}

// Another person's request, forged and unknown ids are 404 alike, and
// nothing changes. Catches: a lookup not scoped to the caller (an admin
// deciding a member's request), an existence oracle.
func TestInboxDecide_OthersAndUnknownIDsAreNotFound(t *testing.T) {
	e := newAPI(t)
	e.askFor("delete_forecast")
	ana, anaUser := e.newUser(auth.Member)
	ben, _ := e.newUser(auth.Member)
	_, _, ap := ana.askToDeleteOslo()
	agentReq := e.agentAsks(anaUser.ID, "conv_agent_ana_000000000002", "mcpr_agent_ana_2")
	for who, o := range map[string]*apiEnv{"member": ben, "admin": e} {
		for _, id := range []string{ap.ID, agentReq, "mcpr_nope", ap.ID + "x", "%27%20OR%201%3D1"} {
			r, ae := o.decideInbox(id, map[string]any{"approve": true})
			if r.status != 404 || ae.Error.Code != "approval_not_found" {
				t.Errorf("%s deciding %s: %d %s, want 404 approval_not_found", who, id, r.status, r.body)
			}
		}
	}
	if got := ids(ana.inbox()); !slices.Equal(got, []string{ap.ID, agentReq}) {
		t.Errorf("ana's inbox %v after others tried, want both still waiting", got)
	}
	if _, ok := e.demo.State().Forecasts["Oslo"]; !ok {
		t.Error("Oslo was deleted by another person's decision")
	}
}

// Bad bodies are 400 with a code and change nothing. Catches: a missing
// approve taken as a denial, a body naming another request decided, an
// engine refusal (bad scope) leaking as 5xx or recording anything.
func TestInboxDecide_BadBodiesAre400AndChangeNothing(t *testing.T) {
	e := newAPI(t)
	e.askFor("delete_forecast")
	_, _, ap := e.askToDeleteOslo()
	for _, c := range []struct {
		name string
		body any
		code string
	}{
		{"no approve", map[string]any{"reason": "x"}, "invalid_decision"},
		{"approve a string", `{"approve": "yes"}`, "invalid_type"},
		{"unknown field", map[string]any{"approve": true, "conversation_id": "conv_x"}, "unknown_field"},
		{"another request's id", map[string]any{"approve": true, "approval_request_id": "mcpr_other"}, "invalid_decision"},
		{"bad scope", map[string]any{"approve": true, "scope": "forever"}, "invalid_decision"},
		{"grant with a denial", map[string]any{"approve": false, "scope": "hour"}, "invalid_decision"},
		{"not json", `approve`, "malformed_json"},
		{"empty", ``, "empty_body"},
	} {
		r, ae := e.decideInbox(ap.ID, c.body)
		if r.status != 400 || ae.Error.Code != c.code || ae.Error.Message == "" {
			t.Errorf("%s: %d %s, want 400 %s", c.name, r.status, r.body, c.code)
		}
	}
	if got := ids(e.inbox()); !slices.Equal(got, []string{ap.ID}) {
		t.Errorf("inbox %v after bad bodies, want the request still waiting", got)
	}
}

// An agent's held call is decided through the HeldDecider, as the caller,
// with the path's id; without one the inbox says it cannot (503), and a
// request no longer pending is 409 either way. Catches: an agent's request
// sent to the chat engine, the decider called for a request not pending,
// the caller or id not passed on.
func TestInboxDecide_AgentRequestGoesToTheHeldDecider(t *testing.T) {
	off := newAPI(t)
	off.createDemo("demo")
	req := off.agentAsks(off.admin.ID, "conv_agent_admin_00000000001", "mcpr_agent_admin_1")
	r, ae := off.decideInbox(req, map[string]any{"approve": true})
	if r.status != 503 || ae.Error.Code != "held_calls_unavailable" {
		t.Errorf("without a held decider: %d %s, want 503 held_calls_unavailable", r.status, r.body)
	}

	held := &heldDecider{}
	e := newAPIWith(t, envOptions{held: held})
	held.e = e
	e.createDemo("demo")
	ana, anaUser := e.newUser(auth.Member)
	req = e.agentAsks(anaUser.ID, "conv_agent_ana_000000000003", "mcpr_agent_ana_3")
	r, ae = ana.decideInbox(req, map[string]any{"approve": false, "reason": "not Rome"})
	var got waiting
	if r.status != 200 || json.Unmarshal(r.body, &got) != nil || got.State != "denied" || got.Source.Kind != "agent" {
		t.Fatalf("agent decision: %d %s (%s)", r.status, r.body, ae.Error.Code)
	}
	if len(held.got) != 1 || held.got[0].ApprovalRequestID != req || *held.got[0].Approve || held.who[0] != anaUser.ID {
		t.Errorf("the decider got %+v from %v, want %s denied by ana", held.got, held.who, req)
	}
	r, ae = ana.decideInbox(req, map[string]any{"approve": true})
	if r.status != 409 || ae.Error.Code != "approval_already_decided" || len(held.got) != 1 {
		t.Errorf("decided again: %d %s, decider called %d times; want 409 and once", r.status, r.body, len(held.got))
	}
	// The decider's own refusal (a withdrawn call, say) is passed on.
	req2 := e.agentAsks(anaUser.ID, "conv_agent_ana_000000000003", "mcpr_agent_ana_4")
	held.fail = apperr.New(apperr.Conflict, "approval_withdrawn", "approval request %q was withdrawn", req2)
	r, ae = ana.decideInbox(req2, map[string]any{"approve": true})
	if r.status != 409 || ae.Error.Code != "approval_withdrawn" {
		t.Errorf("decider refusal: %d %s, want 409 approval_withdrawn", r.status, r.body)
	}
	if _, err := e.pool.Exec(context.Background(), `UPDATE approval_requests SET state = 'withdrawn', decided_at = now() WHERE id = $1`, req2); err != nil {
		t.Fatal(err)
	}
	held.fail = errors.New("must not be called")
	r, ae = ana.decideInbox(req2, map[string]any{"approve": true})
	if r.status != 409 || ae.Error.Code != "approval_withdrawn" || !strings.Contains(string(r.body), `"state":"withdrawn"`) {
		t.Errorf("withdrawn: %d %s, want 409 approval_withdrawn with its state", r.status, r.body)
	}
}

type approvalsChanged struct {
	Pending int      `json:"pending"`
	IDs     []string `json:"approval_request_ids"`
}

// nextInbox waits for the inbox stream's next approvals.changed.
func nextInbox(t *testing.T, evs <-chan sseEvent, what string) approvalsChanged {
	t.Helper()
	select {
	case ev, ok := <-evs:
		var got approvalsChanged
		if !ok || ev.Name != "approvals.changed" || json.Unmarshal(ev.Data, &got) != nil {
			t.Fatalf("%s: got %v %s %s, want approvals.changed", what, ok, ev.Name, ev.Data)
		}
		return got
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no approvals.changed within 10 s", what)
	}
	panic("unreachable")
}

// The inbox stream tells its person, from another replica too, when a
// request of theirs appears and when it is decided, and tells nobody
// else. Catches: a stream that never wakes (no notification wiring), one
// woken for another person's requests, one that sends the first state
// late.
func TestInboxEvents_TellTheOwnerWhenRequestsAppearAndAreDecided(t *testing.T) {
	e := newAPI(t)
	e.askFor("delete_forecast")
	ana, _ := e.newUser(auth.Member)
	ben, _ := e.newUser(auth.Member)
	other := ana.replica() // ana's stream is on another replica than her chat
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	<-e.listening
	<-other.listening
	res, evs := other.events(ctx, "/api/approvals/events", nil)
	if res.StatusCode != 200 || res.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("GET /api/approvals/events: %d %v", res.StatusCode, res.Header)
	}
	_, benEvs := ben.events(ctx, "/api/approvals/events", nil)
	if first := nextInbox(t, evs, "first"); first.Pending != 0 || len(first.IDs) != 0 {
		t.Errorf("first event %+v, want nothing pending", first)
	}
	nextInbox(t, benEvs, "ben's first")

	_, _, ap := ana.askToDeleteOslo()
	if got := nextInbox(t, evs, "asked"); got.Pending != 1 || !slices.Equal(got.IDs, []string{ap.ID}) {
		t.Errorf("after the request %+v, want it", got)
	}
	if r, _ := ana.decideInbox(ap.ID, map[string]any{"approve": false}); r.status != 200 {
		t.Fatalf("decide: %d %s", r.status, r.body)
	}
	if got := nextInbox(t, evs, "decided"); got.Pending != 0 {
		t.Errorf("after the decision %+v, want nothing pending", got)
	}
	select {
	case ev := <-benEvs:
		t.Errorf("ben's stream heard of ana's requests: %s %s", ev.Name, ev.Data)
	case <-time.After(300 * time.Millisecond):
	}
}
