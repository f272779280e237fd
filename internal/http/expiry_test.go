package http_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

// decidedEntry is an approval.decide audit entry's after.
type decidedEntry struct {
	ApprovalRequestID string     `json:"approval_request_id"`
	ConversationID    string     `json:"conversation_id"`
	State             string     `json:"state"`
	Reason            *string    `json:"reason"`
	By                string     `json:"by"`
	ExpiresAt         *time.Time `json:"expires_at"`
}

// decisionsOf returns the approval.decide entries about approval request
// id, oldest first, with their actor.
func (e *apiEnv) decisionsOf(id string) (out []decidedEntry, actors []string) {
	e.t.Helper()
	entries := e.audit()
	slices.Reverse(entries)
	for _, a := range entries {
		var d decidedEntry
		if a.Action != "approval.decide" || json.Unmarshal(a.After, &d) != nil || d.ApprovalRequestID != id {
			continue
		}
		out, actors = append(out, d), append(actors, a.Actor)
	}
	return out, actors
}

// pastDeadline moves an approval request's requested_at back so that its
// expires_at (APPROVAL_TTL, 30m, after it) passed a second ago.
func (e *apiEnv) pastDeadline(id string) {
	e.t.Helper()
	if _, err := e.pool.Exec(context.Background(), `UPDATE approval_requests
		SET requested_at = clock_timestamp() - interval '30 minutes 1 second' WHERE id = $1`, id); err != nil {
		e.t.Fatal(err)
	}
}

// A request whose expires_at has passed cannot be approved, whether or not
// the expiry sweep has run (here it never does: the sweep runs every
// TURN_LEASE_TTL, an hour in this test): the decision route answers 409
// approval_expired, the request is expired then and there (state expired,
// an approval.decide audit entry by Toolgate), and the tool never runs,
// not even with the next message.
func TestExpiry_DecisionAfterExpiresAtIsRefusedWithoutASweep(t *testing.T) {
	e := newAPIWith(t, envOptions{leaseTTL: time.Hour})
	e.askFor("delete_forecast")
	_, conv, ap := e.askToDeleteOslo()
	e.pastDeadline(ap.ID)
	sent := e.up.count()

	for _, extra := range []map[string]any{{"scope": "hour"}, nil} {
		res := e.decide(conv, ap.ID, true, extra)
		var body struct {
			Error struct {
				Code    string `json:"code"`
				Message string `json:"message"`
				Details struct {
					Approval approval `json:"approval"`
				} `json:"details"`
			} `json:"error"`
		}
		if res.status != 409 || json.Unmarshal(res.body, &body) != nil {
			t.Fatalf("approving after expires_at: %d %s %v; want 409 approval_expired", res.status, res.body, res.names())
		}
		// The first try expires it (approval_expired); once expired, a
		// decision is approval_already_decided with the expired state.
		if c := body.Error.Code; c != "approval_expired" && c != "approval_already_decided" {
			t.Errorf("code %q; want approval_expired", c)
		}
		if body.Error.Details.Approval.State != "expired" || !strings.Contains(deref(body.Error.Details.Approval.Reason).(string), "expired") {
			t.Errorf("details.approval %+v; want it expired, with the reason", body.Error.Details.Approval)
		}
		if extra != nil && body.Error.Code != "approval_expired" {
			t.Errorf("the first decision after expires_at: %s; want approval_expired", body.Error.Code)
		}
	}
	if n := e.demoCalls()["delete_forecast"]; n != 0 {
		t.Fatalf("delete_forecast ran %d times after its approval request expired", n)
	}
	if e.up.count() != sent {
		t.Errorf("%d requests went upstream for a refused decision", e.up.count()-sent)
	}
	var grants struct{ Grants []json.RawMessage }
	e.must(200, "GET", "/api/grants?include=expired", nil, &grants)
	if len(grants.Grants) != 0 {
		t.Errorf("a refused decision left grants %s", grants.Grants)
	}
	tr := e.transcript(conv)
	if len(tr.Pending) != 0 || tr.Conversation.Pending != 0 {
		t.Errorf("still pending after the refused decision: %+v", tr.Pending)
	}
	decisions, actors := e.decisionsOf(ap.ID)
	if len(decisions) != 1 || decisions[0].State != "expired" || decisions[0].By != "expiry" || actors[0] != "toolgate" ||
		decisions[0].ExpiresAt == nil || decisions[0].Reason == nil {
		t.Errorf("approval.decide entries %+v by %v; want one: expired by expiry, actor toolgate, with expires_at and reason", decisions, actors)
	}

	// The next message tells the model it expired; the tool still never runs.
	e.send(conv, "hello again").ok(t)
	if n := e.demoCalls()["delete_forecast"]; n != 0 {
		t.Errorf("delete_forecast ran %d times after the next message", n)
	}
	if d, _ := e.decisionsOf(ap.ID); len(d) != 1 {
		t.Errorf("after the next message %d approval.decide entries; want the expiry's only", len(d))
	}
}

// A request still inside its time limit is decided as before, and the
// expiry sweep that runs later leaves it alone: one outcome per request.
func TestExpiry_DecisionBeforeTheDeadlineWins(t *testing.T) {
	e := newAPIWith(t, envOptions{leaseTTL: time.Hour})
	e.askFor("delete_forecast")
	_, conv, ap := e.askToDeleteOslo()
	if _, err := e.pool.Exec(context.Background(), `UPDATE approval_requests
		SET requested_at = clock_timestamp() - interval '29 minutes 55 seconds' WHERE id = $1`, ap.ID); err != nil {
		t.Fatal(err)
	}
	e.decide(conv, ap.ID, true, nil).ok(t)
	if n := e.demoCalls()["delete_forecast"]; n != 1 {
		t.Fatalf("delete_forecast ran %d times; want 1", n)
	}
	time.Sleep(6 * time.Second) // past the deadline now
	if n := e.chat.ExpireApprovals(context.Background()); n != 0 {
		t.Errorf("the sweep expired %d requests after the decision", n)
	}
	decisions, _ := e.decisionsOf(ap.ID)
	if len(decisions) != 1 || decisions[0].State != "approved" || decisions[0].By != "person" {
		t.Errorf("approval.decide entries %+v; want the approval only", decisions)
	}
}

// Superseded and expired requests get their approval.decide entry: the
// state, the reason, and who or what closed them (the person whose new
// message superseded it; Toolgate for the expiry sweep).
func TestAudit_SupersededAndExpiredRequestsAreAudited(t *testing.T) {
	e := newAPIWith(t, envOptions{leaseTTL: time.Hour})
	e.askFor("delete_forecast")
	_, conv, first := e.askToDeleteOslo()
	s := e.send(conv, `delete_forecast {"city": "Rome"}`).ok(t)
	second := one[approval](t, s, "approval.required")

	decisions, actors := e.decisionsOf(first.ID)
	if len(decisions) != 1 || decisions[0].State != "superseded" || decisions[0].By != "message" ||
		actors[0] != "admin@toolgate.test" || decisions[0].Reason == nil || decisions[0].ConversationID != conv {
		t.Errorf("superseded: entries %+v by %v; want one, superseded by the admin's message, with the reason", decisions, actors)
	}

	e.pastDeadline(second.ID)
	if n := e.chat.ExpireApprovals(context.Background()); n != 1 {
		t.Fatalf("the sweep expired %d; want 1", n)
	}
	decisions, actors = e.decisionsOf(second.ID)
	if len(decisions) != 1 || decisions[0].State != "expired" || decisions[0].By != "expiry" || actors[0] != "toolgate" ||
		decisions[0].Reason == nil || !strings.Contains(*decisions[0].Reason, "APPROVAL_TTL") {
		t.Errorf("expired: entries %+v by %v; want one, expired by Toolgate's sweep, with the reason", decisions, actors)
	}
}

// A call of a tool with argument rules that runs because of a grant (no
// rule held, and the grant makes its policy never) says which grant:
// allowed_by {kind: grant, grant_id}, on the call and in its receipt.
func TestGrant_CallOfARuledToolNamesTheGrant(t *testing.T) {
	e := newAPIWith(t, envOptions{leaseTTL: time.Hour})
	e.askFor("delete_forecast")
	e.must(200, "PUT", "/api/mcp/servers/demo/tools/delete_forecast/rules",
		rulesJSON{Rules: []ruleJSON{{When: `args.city == "Paris"`, Decision: "deny"}}}, nil)
	_, conv, ap := e.askToDeleteOslo()
	e.decide(conv, ap.ID, true, map[string]any{"scope": "hour"}).ok(t)
	var grants struct {
		Grants []struct {
			ID string `json:"id"`
		} `json:"grants"`
	}
	e.must(200, "GET", "/api/grants", nil, &grants)
	if len(grants.Grants) != 1 {
		t.Fatalf("grants %+v; want the hour's", grants.Grants)
	}
	id := grants.Grants[0].ID

	s := e.send(conv, `delete_forecast {"city": "Rome"}`).ok(t)
	if slices.Contains(s.names(), "approval.required") {
		t.Fatalf("with the grant the call asked: %v", s.names())
	}
	var call *item
	for _, it := range s.items(t) {
		if it.Type == "mcp_call" {
			call = &it
		}
	}
	if call == nil || call.AllowedBy == nil || call.AllowedBy.Kind != "grant" || call.AllowedBy.GrantID != id || call.AllowedBy.ExpiresAt == nil {
		t.Fatalf("the call %+v; want allowed_by kind grant naming %s", call, id)
	}
	for _, a := range e.audit() {
		var rc struct {
			CallID    string `json:"call_id"`
			AllowedBy struct {
				Kind    string `json:"kind"`
				GrantID string `json:"grant_id"`
			} `json:"allowed_by"`
		}
		if a.Action == "tool.call" && json.Unmarshal(a.After, &rc) == nil && rc.CallID == call.ID {
			if rc.AllowedBy.Kind != "grant" || rc.AllowedBy.GrantID != id {
				t.Errorf("the receipt's allowed_by %+v; want kind grant, grant_id %s", rc.AllowedBy, id)
			}
			return
		}
	}
	t.Errorf("no receipt for call %s", call.ID)
}

// A new message after a request's expires_at, before any sweep ran, closes
// it as expired (what it is), not as superseded by the message: its state,
// its decision.recorded in the message's stream and its audit entry say so.
func TestExpiry_MessageAfterExpiresAtExpiresTheRequest(t *testing.T) {
	e := newAPIWith(t, envOptions{leaseTTL: time.Hour})
	e.askFor("delete_forecast")
	_, conv, ap := e.askToDeleteOslo()
	e.pastDeadline(ap.ID)
	s := e.send(conv, "never mind").ok(t)
	ev := one[decisionEvent](t, s, "decision.recorded")
	if ev.ApprovalRequestID != ap.ID || ev.State != "expired" || ev.Reason == nil || !strings.Contains(*ev.Reason, "APPROVAL_TTL") {
		t.Errorf("decision.recorded %+v; want it expired with the time limit's reason", ev)
	}
	decisions, actors := e.decisionsOf(ap.ID)
	if len(decisions) != 1 || decisions[0].State != "expired" || decisions[0].By != "expiry" || actors[0] != "toolgate" {
		t.Errorf("approval.decide entries %+v by %v; want one: expired by expiry, actor toolgate", decisions, actors)
	}
	if n := e.demoCalls()["delete_forecast"]; n != 0 {
		t.Errorf("delete_forecast ran %d times", n)
	}
}
