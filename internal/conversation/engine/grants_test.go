package engine_test

import (
	"encoding/json"
	"testing"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/conversation"
)

// twoAsking sends a message that makes the model ask twice, in one
// response, to run delete_forecast, and returns both requests.
func (e *harness) twoAsking(conv string) (string, []conversation.Approval) {
	e.t.Helper()
	conv, rec := e.send(ana, conv, `delete_forecast {"city": "Berlin"} and delete_forecast {"city": "Paris"}`)
	var aps []conversation.Approval
	for _, ev := range rec.named(conversation.EventNameApproval) {
		aps = append(aps, ev.(conversation.Approval))
	}
	if len(aps) != 2 || aps[0].ResponseID != aps[1].ResponseID {
		e.t.Fatalf("the model asked %d times: %v", len(aps), rec.names())
	}
	return conv, aps
}

// answers are the mcp_approval_responses of one request the provider got.
func answers(t *testing.T, body []byte) map[string]approvalAnswer {
	t.Helper()
	var req struct {
		Input []approvalAnswer `json:"input"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	out := map[string]approvalAnswer{}
	for _, in := range req.Input {
		if in.Type == "mcp_approval_response" {
			out[in.ApprovalRequestID] = in
		}
	}
	return out
}

func (r *recorder) named(name string) []any {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []any
	for _, ev := range r.events {
		if ev.name == name {
			out = append(out, ev.data)
		}
	}
	return out
}

// Approving one of two pending requests of a tool "for this conversation"
// settles the other the same way, in one transaction: both are approved by
// ana, the other with a reason naming the grant, each announced, and
// exactly one follow-up carries both approvals. The grant is listed, lets
// the next call run without asking (allowed_by names it), and once revoked
// the tool asks again.
func TestGrant_ConversationGrantSettlesTheOtherPendingRequestOfItsTool(t *testing.T) {
	e := newEngine(t, engineOptions{})
	ctx := as(t.Context(), ana)
	conv, aps := e.twoAsking("")
	scope, approve := conversation.ScopeConversation, true
	n := e.up.count()
	turn, err := e.chat.StartDecisions(ctx, conv, []conversation.Decision{{ApprovalRequestID: aps[0].ID, Approve: &approve, Scope: &scope}})
	if err != nil {
		t.Fatal(err)
	}
	rec := e.run(ana, turn)
	if rec.last() != conversation.EventNameCompleted {
		t.Fatalf("decision turn: %v", rec.names())
	}
	if got := rec.count(conversation.EventNameDecision); got != 2 {
		t.Errorf("%d decision.recorded events, want 2", got)
	}
	for _, d := range rec.named(conversation.EventNameDecision) {
		if ev := d.(conversation.DecisionEvent); len(ev.PendingApprovalIDs) != 0 {
			t.Errorf("decision on %s says %v still pending", ev.ApprovalRequestID, ev.PendingApprovalIDs)
		}
	}
	bodies := e.up.sent()[n:]
	if len(bodies) != 1 {
		t.Fatalf("%d follow-ups, want exactly 1", len(bodies))
	}
	got := answers(t, bodies[0])
	for _, a := range aps {
		if ans, ok := got[a.ID]; !ok || ans.Approve == nil || !*ans.Approve {
			t.Errorf("the follow-up answers %s with %+v; want an approval", a.ID, ans)
		}
	}
	other := e.approval(conv, aps[1].ID)
	if other.State != conversation.Approved || deref(other.DecidedByID) != ana.ID ||
		deref(other.DecisionReason) != "Covered by your grant for this conversation: delete_forecast on demo runs without asking in it." {
		t.Errorf("the other request: %s by %v, reason %q; want approved by ana, covered by the grant",
			other.State, deref(other.DecidedByID), deref(other.DecisionReason))
	}
	if st := e.demo.State(); st.Calls["delete_forecast"] != 2 {
		t.Errorf("delete_forecast ran %d times, want 2", st.Calls["delete_forecast"])
	}
	var covered int
	if err := e.pool.QueryRow(t.Context(), `SELECT count(*) FROM audit_log WHERE action = 'approval.decide'
		AND after->>'covered_by' = $1 AND after->>'approval_request_id' = $2`, aps[0].ID, aps[1].ID).Scan(&covered); err != nil {
		t.Fatal(err)
	}
	if covered != 1 {
		t.Errorf("%d audit entries for the settled request, want 1 naming the covering one", covered)
	}

	grants, err := e.chat.Book().ConversationGrants(ctx, conv)
	if err != nil || len(grants) != 1 {
		t.Fatalf("ConversationGrants = %+v, %v; want one", grants, err)
	}
	g := grants[0]
	if deref(g.ConversationID) != conv || g.ToolName != "delete_forecast" || g.ApprovalRequestID != aps[0].ID ||
		g.ExpiresAt != nil || g.State != conversation.GrantActive {
		t.Errorf("grant %+v", g)
	}

	// The grant lets the next call run without asking, and says so.
	_, rec = e.send(ana, conv, `delete_forecast {"city": "Rome"}`)
	if rec.count(conversation.EventNameApproval) != 0 {
		t.Fatalf("with the grant the tool asked again: %v", rec.names())
	}
	call := lastCall(e.transcript(ana, conv).Items)
	if call == nil || call.AllowedBy == nil || call.AllowedBy.Kind != "conversation" || call.AllowedBy.GrantID != g.ID {
		t.Errorf("the call's allowed_by %+v; want kind conversation, grant %s", call.AllowedBy, g.ID)
	}

	// Someone else cannot see or revoke it.
	if err := e.chat.Book().RevokeGrant(as(t.Context(), ben), g.ID); apperr.KindOf(err) != apperr.NotFound {
		t.Errorf("ben revoking ana's grant: %v, want not found", err)
	}
	if _, err := e.chat.Book().ConversationGrants(as(t.Context(), ben), conv); apperr.KindOf(err) != apperr.NotFound {
		t.Errorf("ben listing ana's conversation's grants: %v, want not found", err)
	}
	if gs, err := e.chat.Book().ListGrants(as(t.Context(), ben), true); err != nil || len(gs) != 0 {
		t.Errorf("ben's grants %+v, %v; want none", gs, err)
	}

	if err := e.chat.Book().RevokeGrant(ctx, g.ID); err != nil {
		t.Fatal(err)
	}
	if gs, _ := e.chat.Book().ConversationGrants(ctx, conv); len(gs) != 0 {
		t.Errorf("after revoking, the conversation lists %+v", gs)
	}
	if gs, _ := e.chat.Book().ListGrants(ctx, true); len(gs) != 1 || gs[0].State != conversation.GrantRevoked || gs[0].RevokedAt == nil {
		t.Errorf("all of ana's grants after revoking: %+v; want it revoked", gs)
	}
	var revokes int
	if err := e.pool.QueryRow(t.Context(), `SELECT count(*) FROM audit_log WHERE action = 'grant.revoke'
		AND actor_id = $1 AND after->>'grant_id' = $2`, ana.ID, g.ID).Scan(&revokes); err != nil || revokes != 1 {
		t.Errorf("%d grant.revoke audit entries (%v), want 1", revokes, err)
	}
	if _, a := e.asking(ana, conv); a.ToolName != "delete_forecast" {
		t.Errorf("after revoking, asked for %s", a.ToolName)
	}
}

// "For 1 hour" covers the person's other conversations too, until it
// expires: then the tool asks again.
func TestGrant_TimedGrantCoversEveryConversationUntilItExpires(t *testing.T) {
	e := newEngine(t, engineOptions{})
	ctx := as(t.Context(), ana)
	conv, a := e.asking(ana, "")
	scope, approve := conversation.ScopeHour, true
	turn, err := e.chat.StartDecisions(ctx, conv, []conversation.Decision{{ApprovalRequestID: a.ID, Approve: &approve, Scope: &scope}})
	if err != nil {
		t.Fatal(err)
	}
	if rec := e.run(ana, turn); rec.last() != conversation.EventNameCompleted {
		t.Fatalf("decision turn: %v", rec.names())
	}
	gs, err := e.chat.Book().ListGrants(ctx, false)
	if err != nil || len(gs) != 1 || gs[0].ConversationID != nil || gs[0].ExpiresAt == nil ||
		gs[0].ExpiresAt.Sub(gs[0].CreatedAt) != conversation.GrantDuration {
		t.Fatalf("ana's grants %+v, %v; want one timed grant of an hour", gs, err)
	}
	// Another conversation: runs without asking, allowed by the grant.
	other, rec := e.send(ana, "", `delete_forecast {"city": "Rome"}`)
	if rec.count(conversation.EventNameApproval) != 0 {
		t.Fatalf("with the timed grant the tool asked in another conversation: %v", rec.names())
	}
	call := lastCall(e.transcript(ana, other).Items)
	if call == nil || call.AllowedBy == nil || call.AllowedBy.Kind != "grant" || call.AllowedBy.GrantID != gs[0].ID ||
		call.AllowedBy.ExpiresAt == nil {
		t.Errorf("the call's allowed_by %+v; want kind grant naming %s with its expiry", call.AllowedBy, gs[0].ID)
	}
	// Ben has no such grant.
	if _, a := e.asking(ben, ""); a.ID == "" {
		t.Error("ben was not asked")
	}
	// An hour on, the grant has expired: the tool asks again.
	e.exec(`UPDATE grants SET expires_at = now() - interval '1 second', created_at = now() - interval '1 hour'`)
	if _, a := e.asking(ana, other); a.ID == "" {
		t.Error("after the grant expired, ana was not asked")
	}
	if gs, _ := e.chat.Book().ListGrants(ctx, false); len(gs) != 0 {
		t.Errorf("live grants after expiry: %+v", gs)
	}
	if gs, _ := e.chat.Book().ListGrants(ctx, true); len(gs) != 1 || gs[0].State != conversation.GrantExpired {
		t.Errorf("all grants after expiry: %+v; want it expired", gs)
	}
}

// Deny always (remember) blocks the tool and settles the other pending
// request of it as denied; scope is validated with a clear error.
func TestGrant_DenyAlwaysSettlesTheOtherRequestAndScopeIsValidated(t *testing.T) {
	e := newEngine(t, engineOptions{})
	ctx := as(t.Context(), ana)
	conv, aps := e.twoAsking("")
	deny, approve := false, true
	for _, bad := range []conversation.Decision{
		{ApprovalRequestID: aps[0].ID, Approve: &approve, Scope: ptr("week")},
		{ApprovalRequestID: aps[0].ID, Approve: &deny, Scope: ptr(conversation.ScopeHour)},
		{ApprovalRequestID: aps[0].ID, Approve: &deny, Scope: ptr(conversation.ScopeConversation)},
	} {
		_, err := e.chat.StartDecisions(ctx, conv, []conversation.Decision{bad})
		if e, ok := apperr.As(err); !ok || e.Kind != apperr.Invalid || e.Fields["scope"] == "" {
			t.Errorf("scope %q approve %v: %v; want invalid with a scope field error", *bad.Scope, *bad.Approve, err)
		}
	}
	if a := e.approval(conv, aps[0].ID); a.State != conversation.Pending {
		t.Fatalf("a refused decision changed the request: %s", a.State)
	}
	n := e.up.count()
	turn, err := e.chat.StartDecisions(ctx, conv, []conversation.Decision{{ApprovalRequestID: aps[0].ID, Approve: &deny, Remember: true}})
	if err != nil {
		t.Fatal(err)
	}
	if rec := e.run(ana, turn); rec.last() != conversation.EventNameCompleted {
		t.Fatalf("decision turn: %v", rec.names())
	}
	other := e.approval(conv, aps[1].ID)
	if other.State != conversation.Denied || deref(other.DecisionReason) != "Covered by your decision to always block delete_forecast on demo." {
		t.Errorf("the other request %s, reason %q; want denied, covered by always block", other.State, deref(other.DecisionReason))
	}
	if bodies := e.up.sent()[n:]; len(bodies) != 1 || len(answers(t, bodies[0])) != 2 {
		t.Errorf("%d follow-ups; want one answering both", len(bodies))
	}
	if gs, _ := e.chat.Book().ListGrants(ctx, true); len(gs) != 0 {
		t.Errorf("deny always made grants %+v", gs)
	}
}

func lastCall(items []conversation.Item) *conversation.Item {
	for i := len(items) - 1; i >= 0; i-- {
		if items[i].Type == conversation.ItemCall {
			return &items[i]
		}
	}
	return nil
}

func ptr[T any](v T) *T { return &v }
