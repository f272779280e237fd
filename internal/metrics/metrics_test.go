package metrics

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	return rec.Body.String()
}

func TestDecisionLatency_OnlyForDecisionsOfKnownRequests(t *testing.T) {
	m := New(Build{Version: "v", Commit: "c"})
	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	m.ApprovalRequested("mcpr_a", at)
	m.ApprovalRequested("mcpr_b", at)
	m.DecisionRecorded("mcpr_a", "approved", at.Add(90*time.Second))
	m.DecisionRecorded("mcpr_a", "approved", at.Add(time.Hour)) // again: forgotten, not timed twice
	m.DecisionRecorded("mcpr_b", "superseded", at.Add(time.Second))
	m.DecisionRecorded("mcpr_unknown", "denied", at.Add(time.Second))
	text := scrape(t, m)
	for _, want := range []string{
		"toolgate_approvals_requested_total 2\n",
		"toolgate_approval_decision_seconds_count 1\n",
		"toolgate_approval_decision_seconds_sum 90\n",
		`toolgate_approval_decisions_total{state="approved"} 2` + "\n",
		`toolgate_approval_decisions_total{state="superseded"} 1` + "\n",
		`toolgate_approval_decisions_total{state="denied"} 1` + "\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("scrape lacks %q", want)
		}
	}
}

func TestApprovalsRemembered_AreBounded(t *testing.T) {
	m := New(Build{})
	at := time.Now()
	for i := range maxPendingApprovals + 10 {
		m.ApprovalRequested("mcpr_"+string(rune('a'+i%26))+time.Duration(i).String(), at.Add(time.Duration(i)*time.Second))
	}
	if n := len(m.asked); n != maxPendingApprovals {
		t.Fatalf("%d approvals remembered, want at most %d", n, maxPendingApprovals)
	}
	if _, ok := m.asked["mcpr_a0s"]; ok {
		t.Error("the oldest request was kept when the table was full")
	}
}

func TestLabels_FromEventsStayPlain(t *testing.T) {
	m := New(Build{})
	m.TurnEnded("message", "failed", "weird code\n{with}\"quotes\"")
	m.TurnEnded("message", "error", "upstream_"+strings.Repeat("x", 80))
	m.Event("text.delta")
	m.Request("BREW", "", 418, time.Millisecond)
	text := scrape(t, m)
	for _, want := range []string{
		`toolgate_chat_turns_total{code="other",kind="message",outcome="failed"} 1`,
		`toolgate_chat_turns_total{code="other",kind="message",outcome="error"} 1`,
		`toolgate_sse_events_total{event="text.delta"} 1`,
		`toolgate_http_requests_total{method="OTHER",route="none",status_class="4xx"} 1`,
	} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("scrape lacks %q", want)
		}
	}
	if !strings.Contains(text, `toolgate_upstream_errors_total{code="other"} 1`+"\n") {
		t.Error("an over-long upstream_ code is not counted as an upstream error")
	}
}

func TestNil_RecordsNothing(t *testing.T) {
	var m *Metrics
	m.Request("GET", "/", 200, 0)
	m.StreamOpened()()
	m.Event("completed")
	m.TurnEnded("message", "completed", "")
	m.ApprovalRequested("mcpr_a", time.Now())
	m.DecisionRecorded("mcpr_a", "approved", time.Now())
	m.WatchPool(func() PoolStats { return PoolStats{} })
}
