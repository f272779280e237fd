package http_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/url"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/internal/auth"
)

// toolStats mirrors one tool of GET /api/approvals/stats.
type toolStats struct {
	ServerLabel string   `json:"server_label"`
	ToolName    string   `json:"tool_name"`
	RanUnasked  int      `json:"ran_unasked"`
	Asked       int      `json:"asked"`
	Approved    int      `json:"approved"`
	Denied      int      `json:"denied"`
	Stopped     int      `json:"stopped"`
	Expired     int      `json:"expired"`
	Superseded  int      `json:"superseded"`
	Median      *float64 `json:"median_seconds_to_decision"`
	TopDeciders []struct {
		UserID string `json:"user_id"`
		Email  string `json:"email"`
		Count  int    `json:"count"`
	} `json:"top_deciders"`
	WorkspacePolicy string `json:"workspace_policy"`
	SuggestAuto     bool   `json:"suggest_auto"`
}

type approvalStats struct {
	From           time.Time   `json:"from"`
	To             time.Time   `json:"to"`
	SuggestAutoMin int         `json:"suggest_auto_min"`
	Tools          []toolStats `json:"tools"`
}

// stats reads GET /api/approvals/stats with query q.
func (e *apiEnv) stats(q url.Values) approvalStats {
	e.t.Helper()
	var out approvalStats
	e.must(200, "GET", "/api/approvals/stats?"+q.Encode(), nil, &out)
	return out
}

// of returns the row of demo's tool, or a zero row.
func (s approvalStats) of(tool string) toolStats {
	for _, t := range s.Tools {
		if t.ServerLabel == "demo" && t.ToolName == tool {
			return t
		}
	}
	return toolStats{}
}

// requestedAgo moves approval request id's requested_at back by d, so the
// decision that follows took about d.
func (e *apiEnv) requestedAgo(id string, d time.Duration) {
	e.t.Helper()
	if _, err := e.pool.Exec(context.Background(), `UPDATE approval_requests SET requested_at = clock_timestamp() - $2::interval WHERE id = $1`,
		id, d.String()); err != nil {
		e.t.Fatal(err)
	}
}

// counts is a tool's numbers as counted here from the audit log's entries.
type counts struct{ RanUnasked, Asked, Approved, Denied, Stopped, Expired, Superseded int }

// countLog counts the audit log's entries in [from, to) the way the
// statistics are documented (docs/openapi.yaml), independently of the SQL:
// the entries come from GET /api/audit/export.
func (e *apiEnv) countLog(from, to time.Time) map[string]counts {
	e.t.Helper()
	out := map[string]counts{}
	for _, en := range e.exportAt() {
		if en.At.Before(from) || !en.At.Before(to) || en.ServerLabel == nil || en.ToolName == nil {
			continue
		}
		var after struct {
			AllowedBy *struct{ Kind string } `json:"allowed_by"`
			Outcome   string                 `json:"outcome"`
			State     string                 `json:"state"`
			By        string                 `json:"by"`
			Stopped   bool                   `json:"stopped"`
		}
		var before struct{ State string }
		_ = json.Unmarshal(en.After, &after)
		_ = json.Unmarshal(en.Before, &before)
		k := *en.ServerLabel + "/" + *en.ToolName
		c := out[k]
		switch {
		case en.Action == "tool.call":
			if (after.AllowedBy == nil || after.AllowedBy.Kind != "approval") && after.Outcome != "refused" && after.Outcome != "not_run" {
				c.RanUnasked++
			}
		case en.Action != "approval.decide" || before.State != "pending":
		case after.Stopped:
			c.Asked++
			c.Stopped++
		case after.By == "rule" || after.By == "hook" || after.By == "policy":
		default:
			c.Asked++
			switch after.State {
			case "approved":
				c.Approved++
			case "denied":
				c.Denied++
			case "expired":
				c.Expired++
			default:
				c.Superseded++
			}
		}
		out[k] = c
	}
	return out
}

type timedEntry struct {
	auditEntry
	At time.Time `json:"at"`
}

// exportAt reads every audit entry, with its time, from the export.
func (e *apiEnv) exportAt() []timedEntry {
	e.t.Helper()
	res := e.must(200, "GET", "/api/audit/export", nil, nil)
	var out []timedEntry
	for line := range bytes.SplitSeq(bytes.TrimSpace(res.body), []byte("\n")) {
		var en timedEntry
		if err := json.Unmarshal(line, &en); err != nil {
			e.t.Fatalf("export line %q: %v", line, err)
		}
		out = append(out, en)
	}
	return out
}

func countsOf(t toolStats) counts {
	return counts{t.RanUnasked, t.Asked, t.Approved, t.Denied, t.Stopped, t.Expired, t.Superseded}
}

// The statistics of real approvals (approved, denied, expired, superseded,
// still pending) and of calls that ran unasked are the audit log's counts,
// with the median time to a person's decision and who decided most; the
// period bounds them.
func TestApprovalStats_CountsMatchTheAuditLog(t *testing.T) {
	e := newAPIWith(t, envOptions{leaseTTL: time.Hour})
	e.askFor("delete_forecast")
	ana, anaUser := e.newUser(auth.Member)

	// ana approves two (10 s and 30 s after the request), the admin denies one (20 s).
	for _, d := range []time.Duration{10 * time.Second, 30 * time.Second} {
		_, conv, ap := ana.askToDeleteOslo()
		e.requestedAgo(ap.ID, d)
		ana.decide(conv, ap.ID, true, nil).ok(t)
	}
	_, conv, denied := e.askToDeleteOslo()
	e.requestedAgo(denied.ID, 20*time.Second)
	e.decide(conv, denied.ID, false, map[string]any{"reason": "not today"}).ok(t)
	// One expires; one is superseded by a new message, whose own request stays pending.
	_, _, late := ana.askToDeleteOslo()
	e.pastDeadline(late.ID)
	if n := e.chat.ExpireApprovals(context.Background()); n != 1 {
		t.Fatalf("the sweep expired %d; want 1", n)
	}
	_, conv, _ = e.askToDeleteOslo()
	e.send(conv, `delete_forecast {"city": "Rome"}`).ok(t)
	// get_forecast (read-only) runs without asking, twice.
	s := ana.send("", `get_forecast {"city": "Berlin"}`).ok(t)
	ana.send(s.conv(t), `get_forecast {"city": "Oslo"}`).ok(t)

	got := e.stats(nil)
	if got.To.Sub(got.From) != 30*24*time.Hour || time.Since(got.To) > time.Minute || got.SuggestAutoMin != 5 {
		t.Errorf("period %s to %s, suggest_auto_min %d; want the last 30 days and 5", got.From, got.To, got.SuggestAutoMin)
	}
	del, get := got.of("delete_forecast"), got.of("get_forecast")
	want := counts{Asked: 5, Approved: 2, Denied: 1, Expired: 1, Superseded: 1}
	if diff := cmp.Diff(want, countsOf(del)); diff != "" {
		t.Errorf("delete_forecast (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(counts{RanUnasked: 2}, countsOf(get)); diff != "" {
		t.Errorf("get_forecast (-want +got):\n%s", diff)
	}
	if len(got.Tools) != 2 {
		t.Errorf("tools %+v; want delete_forecast and get_forecast only", got.Tools)
	}
	// The median of 10 s, 20 s and 30 s (plus the moments the decisions took).
	if del.Median == nil || *del.Median < 20 || *del.Median >= 25 {
		t.Errorf("median %v; want about 20 seconds", deref(del.Median))
	}
	if get.Median != nil {
		t.Errorf("get_forecast median %v; nobody decided on it", *get.Median)
	}
	type decider struct {
		UserID, Email string
		Count         int
	}
	var deciders []decider
	for _, d := range del.TopDeciders {
		deciders = append(deciders, decider{d.UserID, d.Email, d.Count})
	}
	if diff := cmp.Diff([]decider{{anaUser.ID, anaUser.Email, 2}, {e.admin.ID, e.admin.Email, 1}}, deciders); diff != "" {
		t.Errorf("top deciders (-want +got):\n%s", diff)
	}
	if del.WorkspacePolicy != "always" || del.SuggestAuto || get.SuggestAuto {
		t.Errorf("delete_forecast policy %s suggest %v, get_forecast suggest %v; want always and no suggestions",
			del.WorkspacePolicy, del.SuggestAuto, get.SuggestAuto)
	}

	// The same numbers, counted here from the log itself.
	fromLog := e.countLog(got.From, got.To)
	for _, tl := range got.Tools {
		if diff := cmp.Diff(fromLog[tl.ServerLabel+"/"+tl.ToolName], countsOf(tl)); diff != "" {
			t.Errorf("%s: statistics differ from the audit log (-log +stats):\n%s", tl.ToolName, diff)
		}
	}

	// The period bounds what is counted: the denial, moved 40 days back,
	// leaves the last 30 days and shows in a period that holds it.
	if _, err := e.pool.Exec(context.Background(), `UPDATE audit_log SET at = at - interval '40 days'
		WHERE action = 'approval.decide' AND after->>'approval_request_id' = $1`, denied.ID); err != nil {
		t.Fatal(err)
	}
	if d := e.stats(nil).of("delete_forecast"); d.Asked != 4 || d.Denied != 0 {
		t.Errorf("last 30 days after moving the denial back: asked %d denied %d; want 4 and 0", d.Asked, d.Denied)
	}
	now := time.Now().UTC()
	old := e.stats(url.Values{"from": {now.Add(-60 * 24 * time.Hour).Format(time.RFC3339)}, "to": {now.Add(-35 * 24 * time.Hour).Format(time.RFC3339)}})
	if diff := cmp.Diff(counts{Asked: 1, Denied: 1}, countsOf(old.of("delete_forecast"))); diff != "" || len(old.Tools) != 1 {
		t.Errorf("60 to 35 days ago: %+v; want the denial only (-want +got):\n%s", old.Tools, diff)
	}
	fromLog = e.countLog(old.From, old.To)
	if diff := cmp.Diff(fromLog["demo/delete_forecast"], countsOf(old.of("delete_forecast"))); diff != "" {
		t.Errorf("60 to 35 days ago differs from the audit log (-log +stats):\n%s", diff)
	}
}
