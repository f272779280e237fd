package http_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/auth"
)

// correctedEvents are the parts of the events a denial with a correction
// adds, as a client reads them.
type (
	correctionDecision struct {
		State      string          `json:"state"`
		Correction json.RawMessage `json:"correction"`
	}
	correctedApproval struct {
		ID       string `json:"approval_request_id"`
		Corrects *struct {
			ApprovalRequestID string `json:"approval_request_id"`
			Changes           []struct {
				Path   string          `json:"path"`
				Before json.RawMessage `json:"before"`
				After  json.RawMessage `json:"after"`
			} `json:"changes"`
			MatchesCorrection bool `json:"matches_correction"`
		} `json:"corrects"`
	}
)

// Through the API: a denial with a correction streams its decision with the
// correction, the model asks again and the new request says what changed;
// approving it runs the tool with the corrected argument.
func TestChat_DenyWithCorrectionAndTheModelAsksAgain(t *testing.T) {
	e := newAPI(t)
	e.askFor("delete_forecast")
	_, conv, ap := e.askToDeleteOslo()

	f := e.decide(conv, ap.ID, false, map[string]any{"correction": map[string]any{"city": "Lisbon"}, "reason": "keep Oslo"}).ok(t)
	if d := one[correctionDecision](t, f, "decision.recorded"); d.State != "denied" || string(d.Correction) != `{"city":"Lisbon"}` {
		t.Errorf("decision %+v (correction %s)", d, d.Correction)
	}
	reqs := e.up.sent()
	in, _ := json.Marshal(reqs[len(reqs)-1]["input"])
	if !strings.Contains(string(in), `Use these arguments instead: {\"city\":\"Lisbon\"}\nkeep Oslo`) {
		t.Errorf("follow-up input %s lacks the composed reason", in)
	}
	again := one[correctedApproval](t, f, "approval.required")
	c := again.Corrects
	if c == nil || c.ApprovalRequestID != ap.ID || !c.MatchesCorrection || len(c.Changes) != 1 ||
		c.Changes[0].Path != "city" || string(c.Changes[0].Before) != `"Oslo"` || string(c.Changes[0].After) != `"Lisbon"` {
		t.Fatalf("new request corrects %+v", c)
	}

	e.decide(conv, again.ID, true, nil).ok(t)
	st := e.demo.State()
	if _, ok := st.Forecasts["Oslo"]; !ok {
		t.Error("Oslo's forecast was deleted although the request for it was denied")
	}
	if _, ok := st.Forecasts["Lisbon"]; ok || st.Calls["delete_forecast"] != 1 {
		t.Errorf("state %+v; want Lisbon's forecast deleted by one call", st)
	}
}

// A correction that cannot be used is a 400 naming the argument, and
// changes nothing; only the conversation's owner can send one at all.
func TestChat_BadCorrectionIsRefusedByField(t *testing.T) {
	e := newAPI(t)
	e.askFor("delete_forecast")
	_, conv, ap := e.askToDeleteOslo()
	for _, tc := range []struct {
		body        map[string]any
		code, field string
	}{
		{map[string]any{"correction": map[string]any{"city": 5}}, "invalid_correction", "correction.city"},
		{map[string]any{"correction": map[string]any{"town": "Lisbon", "city": "Lisbon"}}, "invalid_correction", "correction.town"},
		{map[string]any{"correction": []string{"Lisbon"}}, "invalid_correction", "correction"},
		{map[string]any{"correction": map[string]any{"city": "[redacted]"}}, "invalid_correction", "correction.city"},
		{map[string]any{"correction": map[string]any{"city": "Lisbon"}, "remember": true}, "invalid_correction", "correction"},
	} {
		r := e.decide(conv, ap.ID, false, tc.body)
		var body apiError
		if r.status != 400 || json.Unmarshal(r.body, &body) != nil || body.Error.Code != tc.code || body.Error.Fields[tc.field] == "" {
			t.Errorf("%v: %d %s; want 400 %s naming %s", tc.body, r.status, r.body, tc.code, tc.field)
		}
	}
	r := e.decide(conv, ap.ID, true, map[string]any{"correction": map[string]any{"city": "Lisbon"}})
	if r.status != 400 || !strings.Contains(string(r.body), "approve: false") {
		t.Errorf("correction with an approval: %d %s", r.status, r.body)
	}

	// null is no correction: with the decisions form it is not a second decision.
	r = e.stream("/api/responses/approval-response", map[string]any{"conversation_id": conv, "correction": nil,
		"decisions": []map[string]any{{"approval_request_id": ap.ID, "approve": false, "correction": map[string]any{"city": true}}}})
	var nullBody apiError
	if r.status != 400 || json.Unmarshal(r.body, &nullBody) != nil || nullBody.Error.Code != "invalid_correction" {
		t.Errorf("decisions form with correction null beside it: %d %s, want 400 invalid_correction", r.status, r.body)
	}

	other, _ := e.newUser(auth.Member)
	if r := other.decide(conv, ap.ID, false, map[string]any{"correction": map[string]any{"city": "Lisbon"}}); r.status != 404 {
		t.Errorf("another user's correction: %d %s, want 404", r.status, r.body)
	}
	if r := e.anon().decide(conv, ap.ID, false, map[string]any{"correction": map[string]any{"city": "Lisbon"}}); r.status != 401 {
		t.Errorf("a correction without credentials: %d %s, want 401", r.status, r.body)
	}
	if tr := e.transcript(conv); len(tr.Pending) != 1 || tr.Pending[0].State != "pending" {
		t.Errorf("refused corrections changed the approval: %+v", tr.Pending)
	}
	if st := e.demo.State(); st.Calls["delete_forecast"] != 0 {
		t.Errorf("delete_forecast ran: %+v", st)
	}
}
