package http_test

import (
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/testdb"
)

// flowCommits is what one flow committed, as countCommits counts it.
type flowCommits struct {
	commits    []testdb.Statement // COMMITs and writes outside a transaction
	deltas     []testdb.Statement // the text deltas' group writes (the event stream's)
	afterFinal []testdb.Statement // commits after the stream's terminal event
}

func (f flowCommits) total() int { return len(f.commits) }

// countCommits counts the commits among sts, the statements the pool sent
// while a flow ran (POST to the stream's terminal event; end: when the
// stream's terminal event arrived). How it counts:
//
//   - an explicit transaction (BEGIN, or a batch opening with BEGIN, on a
//     connection) commits once, at its COMMIT (a batch ending in COMMIT
//     is one transaction and one commit); one rolled back commits nothing;
//   - a statement outside an explicit transaction commits on its own: it
//     counts when it writes (INSERT, UPDATE, DELETE, a row lock, a
//     notification); a plain read (authentication's look-up, a stream's
//     read of the event log) writes nothing and waits for no flush;
//   - the text deltas' group writes (AppendMany, the event stream's
//     business) are counted apart, not in the total.
func countCommits(sts []testdb.Statement, end time.Time) flowCommits {
	var f flowCommits
	inTx := map[uint32]bool{}
	for _, s := range sts {
		sql := strings.ToLower(s.SQL)
		parts := strings.Split(strings.TrimPrefix(sql, "batch: "), " ;; ")
		first, last := strings.TrimSpace(parts[0]), strings.TrimSpace(parts[len(parts)-1])
		opens := strings.HasPrefix(first, "begin")
		committed := last == "commit"
		switch {
		case opens || inTx[s.Conn]:
			inTx[s.Conn] = !committed && last != "rollback"
			if !committed {
				continue
			}
		case strings.HasPrefix(sql, "with locked as"):
			f.deltas = append(f.deltas, s)
			continue
		case !writes(sql):
			continue
		}
		if s.At.After(end) {
			f.afterFinal = append(f.afterFinal, s)
		} else {
			f.commits = append(f.commits, s)
		}
	}
	return f
}

// writes reports whether a statement (lower case) outside a transaction
// writes, and so commits something.
func writes(sql string) bool {
	for _, w := range []string{"insert ", "update ", "delete ", "pg_notify", "for update", "for no key update", "nextval"} {
		if strings.Contains(sql, w) {
			return true
		}
	}
	return false
}

// flow records the statements the pool sends from fn's start until fn
// returned (a whole stream, to its terminal event) and a while after, and
// counts its commits.
func flow(t *testing.T, st *testdb.Statements, name string, fn func()) flowCommits {
	t.Helper()
	st.Start()
	fn()
	end := time.Now()
	time.Sleep(300 * time.Millisecond) // what the turn writes after its terminal event, if anything
	all := st.Stop()
	f := countCommits(all, end)
	if testing.Verbose() {
		for _, s := range all {
			t.Logf("    all: conn %d %.200s", s.Conn, s.SQL)
		}
	}
	t.Logf("%s: %d commits (%d text-delta writes apart, %d after the terminal event):", name, f.total(), len(f.deltas), len(f.afterFinal))
	for i, s := range f.commits {
		t.Logf("  %2d conn %d %.160s", i+1, s.Conn, s.SQL)
	}
	for _, s := range f.afterFinal {
		t.Logf("  after: conn %d %.160s", s.Conn, s.SQL)
	}
	return f
}

// TestApprovalFlow_Commits counts the commits of the two flows of an
// approval (issue 26, item 3): the message whose turn asks for approval
// (POST to its terminal event, approval.required among its events), and
// the decision (POST /api/responses/approval-response to the follow-up
// turn's terminal event). See countCommits for what counts.
func TestApprovalFlow_Commits(t *testing.T) {
	tr := &testdb.Statements{}
	e, conv := newTracedApprovalEnv(t, tr)

	var s stream
	msg := flow(t, tr, "message that asks", func() { s = e.send(conv, `get_forecast {"city": "Oslo"}`).ok(t) })
	ap := one[approval](t, s, "approval.required")
	var d stream
	dec := flow(t, tr, "decision", func() { d = e.decide(conv, ap.ID, true, nil).ok(t) })
	if names := d.names(); !strings.Contains(strings.Join(names, " "), "item") {
		t.Fatalf("the follow-up streamed %v, want its call and message", names)
	}
	for _, c := range []struct {
		name string
		f    flowCommits
		most int
	}{
		{"message that asks", msg, messageFlowCommits},
		{"decision", dec, decisionFlowCommits},
	} {
		if n := c.f.total() + len(c.f.afterFinal); n > c.most {
			t.Errorf("%s: %d commits, want at most %d", c.name, n, c.most)
		}
	}
}

// The commits of each flow, counted by TestApprovalFlow_Commits (the text
// deltas' group writes apart). Before issue 26: 4 for the message that asks
// (its turn's opening; the approval request stored with its item; its
// approval.required event; the turn's end with its terminal event) and 9 for
// the decision: the decision's transaction (decision, audit entry, the
// follow-up's claim and opening events); answered_in recorded when the
// follow-up's response.created arrives (a takeover reads the response back
// from it, so it commits at once); tool.started; the MCP server's health
// reset (a no-op UPDATE when it had no failures); the call's item with its
// receipt; its item event; the answer's message item; its item event; the
// turn's end. Now an item and its event, and an approval request with its
// approval.required, commit together (relay.withEvents), and the answer's
// message and its item event are stored in the end's transaction
// (holdMessage): 3 for the message that asks, 6 for a decision whose
// approved call runs. Those 6 are the decision, answered_in, tool.started,
// the health reset (which writes nothing: no WAL flush), the call's record
// with its event, and the end: each says what ran, or is about to, before
// anyone sees it, so a crash at any point leaves a true record. A follow-up
// that answers with text alone (the bench's approval flow) commits 3: the
// decision, answered_in and the end. Then a request a person is asked was
// held like a message (holdApproval) and stored with the turn's end: 2 for
// the message that asks (its opening; its end with the request and its
// approval.required), so the whole flow, ask to answer, commits 5 that
// wait for the disk where it committed 6 (8 with a tool that runs).
const (
	messageFlowCommits  = 2
	decisionFlowCommits = 6
)
