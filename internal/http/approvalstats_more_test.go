package http_test

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/auth"
)

// A tool a person approved every time, at least five times, is suggested
// for Auto while the workspace still asks for it; not after four, not
// once it runs without asking (or only asks because of "ask for
// everything"), not after a denial or a stopped batch.
func TestApprovalStats_SuggestsAutoForAToolApprovedEveryTime(t *testing.T) {
	e := newAPIWith(t, envOptions{leaseTTL: time.Hour})
	e.askFor("delete_forecast")
	var approved string // the last approved request
	approve := func() {
		t.Helper()
		_, conv, ap := e.askToDeleteOslo()
		e.decide(conv, ap.ID, true, nil).ok(t)
		approved = ap.ID
	}
	for range 4 {
		approve()
	}
	if d := e.stats(nil).of("delete_forecast"); d.Approved != 4 || d.SuggestAuto {
		t.Fatalf("after 4 approvals: approved %d, suggest_auto %v; want 4 and no suggestion", d.Approved, d.SuggestAuto)
	}
	approve()
	if d := e.stats(nil).of("delete_forecast"); d.Approved != 5 || !d.SuggestAuto || d.WorkspacePolicy != "always" {
		t.Fatalf("after 5 approvals: %+v; want the suggestion, the workspace policy always", d)
	}

	e.setPolicy("demo", "delete_forecast", "never")
	if d := e.stats(nil).of("delete_forecast"); d.SuggestAuto || d.WorkspacePolicy != "never" {
		t.Errorf("with the tool at never: suggest_auto %v, workspace_policy %s; want no suggestion, never", d.SuggestAuto, d.WorkspacePolicy)
	}
	e.must(200, "PUT", "/api/settings", map[string]any{"ask_everything": true}, nil)
	if d := e.stats(nil).of("delete_forecast"); d.SuggestAuto || d.WorkspacePolicy != "always" {
		t.Errorf("never under ask for everything: suggest_auto %v, workspace_policy %s; want no suggestion (it is Auto already)", d.SuggestAuto, d.WorkspacePolicy)
	}
	e.must(200, "PUT", "/api/settings", map[string]any{"ask_everything": false}, nil)
	e.setPolicy("demo", "delete_forecast", "always")
	if d := e.stats(nil).of("delete_forecast"); !d.SuggestAuto {
		t.Errorf("back at always: %+v; want the suggestion again", d)
	}

	// A stopped batch (a decision with "stop": true; its audit entry says
	// "stopped": true) takes the suggestion away.
	_, stopConv, stopped := e.askToDeleteOslo()
	if s := e.decide(stopConv, stopped.ID, false, map[string]any{"stop": true, "reason": "enough for today"}); s.status != 200 {
		t.Fatalf("stop: status %d, body %s", s.status, s.body)
	}
	d := e.stats(nil).of("delete_forecast")
	if d.Stopped != 1 || d.Denied != 0 || d.Asked != 6 || d.SuggestAuto {
		t.Errorf("after a stop: %+v; want stopped 1, denied 0, asked 6, no suggestion", d)
	}
	if len(d.TopDeciders) != 1 || d.TopDeciders[0].Count != 6 {
		t.Errorf("top deciders %+v; want the admin with 6 (5 approvals and the stop)", d.TopDeciders)
	}

	// An approved request whose follow-up ended without an outcome gets a
	// second entry (from state approved, by Toolgate): not a second request.
	before, _ := json.Marshal(map[string]any{"approval_request_id": approved, "state": "approved"})
	after, _ := json.Marshal(map[string]any{"approval_request_id": approved, "state": "outcome_unknown", "by": "turn_end"})
	if _, err := e.pool.Exec(context.Background(), `INSERT INTO audit_log (actor, action, server_label, tool_name, before, after)
		VALUES ('toolgate', 'approval.decide', 'demo', 'delete_forecast', $1, $2)`, before, after); err != nil {
		t.Fatal(err)
	}
	if d := e.stats(nil).of("delete_forecast"); d.Asked != 6 || d.Superseded != 0 {
		t.Errorf("after a request's second entry: asked %d, superseded %d; want 6 and 0 (one entry per request counts)", d.Asked, d.Superseded)
	}
}

// A denial takes the suggestion away.
func TestApprovalStats_ADenialMeansNoSuggestion(t *testing.T) {
	e := newAPIWith(t, envOptions{leaseTTL: time.Hour})
	e.askFor("delete_forecast")
	for i := range 6 {
		_, conv, ap := e.askToDeleteOslo()
		e.decide(conv, ap.ID, i != 3, nil).ok(t)
	}
	if d := e.stats(nil).of("delete_forecast"); d.Approved != 5 || d.Denied != 1 || d.SuggestAuto {
		t.Errorf("5 approvals and a denial: %+v; want no suggestion", d)
	}
}

// Only admins read the statistics: a member gets 403, nobody signed in 401.
func TestApprovalStats_AdminsOnly(t *testing.T) {
	e := newAPI(t)
	member, _ := e.newUser(auth.Member)
	for _, tc := range []struct {
		env  *apiEnv
		want int
		code string
	}{{member, 403, "admin_only"}, {e.anon(), 401, "unauthenticated"}} {
		res := tc.env.call("GET", "/api/approvals/stats", nil)
		var body apiError
		_ = json.Unmarshal(res.body, &body)
		if res.status != tc.want || body.Error.Code != tc.code {
			t.Errorf("status %d code %q; want %d %s", res.status, body.Error.Code, tc.want, tc.code)
		}
	}
	e.must(200, "GET", "/api/approvals/stats", nil, nil)
}

// A period that is not RFC 3339, reversed, empty or longer than 366 days
// is 400 invalid_period, naming the parameter and saying what to send.
func TestApprovalStats_BadPeriodIs400(t *testing.T) {
	e := newAPI(t)
	now := time.Now().UTC()
	ts := func(d time.Duration) string { return now.Add(d).Format(time.RFC3339) }
	for _, tc := range []struct {
		name, query, field, says string
	}{
		{"from not a time", "from=yesterday", "from", "RFC 3339"},
		{"to not a time", "to=2025-06-01", "to", "RFC 3339"},
		{"reversed", "from=" + ts(0) + "&to=" + ts(-time.Hour), "from", "before"},
		{"empty", "from=" + ts(0) + "&to=" + ts(0), "from", "before"},
		{"too long", "from=" + ts(-367*24*time.Hour) + "&to=" + ts(0), "from", "366 days"},
		{"too long before to", "to=" + ts(-time.Hour) + "&from=" + url.QueryEscape(now.Add(-400*24*time.Hour).Format(time.RFC3339Nano)), "from", "366 days"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := e.call("GET", "/api/approvals/stats?"+tc.query, nil)
			var body apiError
			_ = json.Unmarshal(res.body, &body)
			if res.status != 400 || body.Error.Code != "invalid_period" || body.Error.Fields[tc.field] == "" ||
				!strings.Contains(body.Error.Message, tc.says) {
				t.Errorf("status %d body %s; want 400 invalid_period on %s saying %q", res.status, res.body, tc.field, tc.says)
			}
		})
	}
	// 366 days exactly is allowed.
	e.must(200, "GET", "/api/approvals/stats?from="+ts(-366*24*time.Hour)+"&to="+ts(0), nil, nil)
}
