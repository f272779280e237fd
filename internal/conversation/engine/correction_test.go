package engine_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/conversation/engine"
)

// denyWith denies one request as ana with a correction (JSON text) and a reason.
func (e *harness) denyWith(conv, id, correction, reason string) (*engine.Turn, error) {
	deny := false
	d := conversation.Decision{ApprovalRequestID: id, Approve: &deny, Correction: json.RawMessage(correction)}
	if reason != "" {
		d.Reason = &reason
	}
	return e.chat.StartDecisions(as(e.t.Context(), ana), conv, []conversation.Decision{d})
}

// The person denies with other arguments, keeping the hidden token as it
// was: the model is told to use them and to keep its own token (never sent
// back as "[redacted]", never stored), asks again, and the new request says
// what changed and that it matches the correction.
func TestCorrection_ModelAsksAgainAndTheNewRequestShowsWhatChanged(t *testing.T) {
	e := newEngine(t, engineOptions{})
	conv, a := e.asking(ana, "")
	turn, err := e.denyWith(conv, a.ID, `{"city": "Lisbon", "api_token": "[redacted]"}`, "Berlin's forecast is still needed")
	if err != nil {
		t.Fatal(err)
	}
	rec := e.run(ana, turn)
	if rec.last() != conversation.EventNameCompleted {
		t.Fatalf("denial turn: %v", rec.names())
	}
	d, _ := rec.first(conversation.EventNameDecision).(conversation.DecisionEvent)
	if d.State != conversation.Denied || string(d.Correction) != `{"api_token":"[redacted]","city":"Lisbon"}` ||
		d.Reason == nil || *d.Reason != "Berlin's forecast is still needed" {
		t.Errorf("decision event: state %s, correction %s, reason %v", d.State, d.Correction, d.Reason)
	}

	sent := e.up.sent()
	wantReason := "Use these arguments instead: {\"city\":\"Lisbon\"}\n" +
		"Keep the values you sent for these arguments, which the user could not see: api_token\n" +
		"Berlin's forecast is still needed"
	if got := answerReason(t, sent[len(sent)-1], a.ID); got != wantReason {
		t.Errorf("reason sent upstream:\n%q\nwant\n%q", got, wantReason)
	}

	again, ok := rec.first(conversation.EventNameApproval).(conversation.Approval)
	if !ok {
		t.Fatalf("the model did not ask again: %v", rec.names())
	}
	if !slices.Equal(again.Redacted, []string{"api_token"}) {
		t.Errorf("new request redacted %v; want the token the model kept", again.Redacted)
	}
	want := &conversation.Corrects{ApprovalRequestID: a.ID, MatchesCorrection: true,
		Changes: []conversation.ArgChange{{Path: "city", Before: json.RawMessage(`"Berlin"`), After: json.RawMessage(`"Lisbon"`)}}}
	if diff := cmp.Diff(want, again.Corrects); diff != "" {
		t.Errorf("approval.required corrects (-want +got):\n%s", diff)
	}
	tr := e.transcript(ana, conv)
	if len(tr.Pending) != 1 || cmp.Diff(want, tr.Pending[0].Corrects) != "" {
		t.Errorf("pending approvals %+v; want the new request with corrects", tr.Pending)
	}
	if denied := e.approval(conv, a.ID); string(denied.Correction) != `{"api_token":"[redacted]","city":"Lisbon"}` {
		t.Errorf("the denied request's correction in the transcript: %s", denied.Correction)
	}
	var secrets int
	if err := e.pool.QueryRow(t.Context(), `SELECT count(*) FROM approval_requests
		WHERE arguments LIKE '%tok-secret-123%' OR correction::text LIKE '%tok-secret-123%' OR corrects::text LIKE '%tok-secret-123%'`).Scan(&secrets); err != nil {
		t.Fatal(err)
	}
	if secrets != 0 {
		t.Errorf("the token is stored in %d approval requests", secrets)
	}
}

// Approved, the request the model made after a correction runs with the
// corrected arguments.
func TestCorrection_ApprovedRetryRunsWithTheCorrectedArguments(t *testing.T) {
	e := newEngine(t, engineOptions{})
	conv, a := e.asking(ana, "")
	turn, err := e.denyWith(conv, a.ID, `{"city": "Lisbon"}`, "")
	if err != nil {
		t.Fatal(err)
	}
	rec := e.run(ana, turn)
	again, ok := rec.first(conversation.EventNameApproval).(conversation.Approval)
	if !ok {
		t.Fatalf("the model did not ask again: %v", rec.names())
	}
	want := &conversation.Corrects{ApprovalRequestID: a.ID, MatchesCorrection: true, Changes: []conversation.ArgChange{
		{Path: "api_token", Before: json.RawMessage(`"[redacted]"`)},
		{Path: "city", Before: json.RawMessage(`"Berlin"`), After: json.RawMessage(`"Lisbon"`)}}}
	if diff := cmp.Diff(want, again.Corrects); diff != "" {
		t.Errorf("corrects (-want +got):\n%s", diff)
	}
	turn, err = e.decide(ana, conv, again.ID, true)
	if err != nil {
		t.Fatal(err)
	}
	if rec := e.run(ana, turn); rec.last() != conversation.EventNameCompleted {
		t.Fatalf("approval turn: %v", rec.names())
	}
	call := find(e.transcript(ana, conv).Items, conversation.ItemCall)
	if call == nil || call.Output == nil || !strings.Contains(*call.Output, "Deleted the forecast for Lisbon") {
		t.Fatalf("the call: %+v; want Lisbon's forecast deleted", call)
	}
}

// answerReason is the reason of the mcp_approval_response for id in a
// request body sent upstream.
func answerReason(t *testing.T, body []byte, id string) string {
	t.Helper()
	var req struct {
		Input []struct {
			Type              string `json:"type"`
			ApprovalRequestID string `json:"approval_request_id"`
			Approve           bool   `json:"approve"`
			Reason            string `json:"reason"`
		} `json:"input"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatalf("request body: %v", err)
	}
	for _, in := range req.Input {
		if in.Type == "mcp_approval_response" && in.ApprovalRequestID == id {
			if in.Approve {
				t.Errorf("%s was approved upstream", id)
			}
			return in.Reason
		}
	}
	t.Fatalf("no mcp_approval_response for %s in %s", id, body)
	return ""
}

// A correction that cannot be used is refused whole, naming the field:
// nothing is recorded and the request still waits.
func TestCorrection_RefusedWithTheFieldAndNothingRecorded(t *testing.T) {
	e := newEngine(t, engineOptions{})
	conv, a := e.asking(ana, "")
	tests := []struct {
		name, correction  string
		approve, remember bool
		field, says       string
	}{
		{"with an approval", `{"city":"Oslo"}`, true, false, "correction", "approve: false"},
		{"with remember", `{"city":"Oslo"}`, false, true, "correction", "remember"},
		{"not an object", `["Oslo"]`, false, false, "correction", "JSON object"},
		{"a string", `"Oslo"`, false, false, "correction", "JSON object"},
		{"duplicate keys", `{"city":"Oslo","city":"Berlin"}`, false, false, "correction", "more than once"},
		{"wrong type", `{"city":5,"api_token":"[redacted]"}`, false, false, "correction.city", "want string"},
		{"missing required", `{"api_token":"[redacted]"}`, false, false, "correction.city", "required"},
		{"unknown argument", `{"city":"Oslo","town":"x"}`, false, false, "correction.town", "not an argument"},
		{"placeholder where nothing was hidden", `{"city":"[redacted]"}`, false, false, "correction.city", "no hidden value"},
		{"unchanged", `{"city":"Berlin","api_token":"[redacted]"}`, false, false, "correction", "same as the request"},
		{"NUL", `{"city":"Os\u0000lo"}`, false, false, "correction.city", "NUL"},
		{"too long", `{"city":"` + strings.Repeat("x", engine.MaxCorrectionLen) + `"}`, false, false, "correction", "at most"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			approve := tt.approve
			d := conversation.Decision{ApprovalRequestID: a.ID, Approve: &approve, Remember: tt.remember,
				Correction: json.RawMessage(tt.correction)}
			_, err := e.chat.StartDecisions(as(t.Context(), ana), conv, []conversation.Decision{d})
			ae, ok := apperr.As(err)
			if !ok || ae.Kind != apperr.Invalid || ae.Code != "invalid_correction" {
				t.Fatalf("err = %v; want invalid_correction", err)
			}
			if !strings.Contains(ae.Fields[tt.field], tt.says) {
				t.Errorf("fields %v; want %s saying %q", ae.Fields, tt.field, tt.says)
			}
			if got := e.approval(conv, a.ID); got.State != conversation.Pending || got.Correction != nil {
				t.Errorf("approval %s with correction %s; want still pending, none", got.State, got.Correction)
			}
		})
	}
	if d, _ := e.audits(); d != 0 {
		t.Errorf("%d decisions audited, want none", d)
	}
}

// A denial without a correction, and a later request of another tool, carry
// no corrects: only a correction links the next request of its tool.
func TestCorrection_PlainDenialLinksNothing(t *testing.T) {
	e := newEngine(t, engineOptions{})
	conv, a := e.asking(ana, "")
	turn, err := e.denyWith(conv, a.ID, "", "no")
	if err != nil {
		t.Fatal(err)
	}
	e.run(ana, turn)
	_, b := e.asking(ana, conv)
	if b.Corrects != nil || b.Correction != nil {
		t.Errorf("new request corrects %+v, correction %s; want none", b.Corrects, b.Correction)
	}
}
