package http_test

import (
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/testdb"
)

// between records the statements the pool sends while fn runs that start
// before the upstream request fn causes (the tap's next request) arrives.
func between(t testing.TB, st *testdb.Statements, up *upstreamTap, fn func()) []testdb.Statement {
	t.Helper()
	before := up.count()
	st.Start()
	start := time.Now()
	fn()
	all := st.Stop()
	arrived := up.arrivedAt(t, before)
	var out []testdb.Statement
	t.Logf("upstream request %.2f ms after the POST; the statements before it:", float64(arrived.Sub(start).Microseconds())/1000)
	for _, s := range all {
		if s.At.Before(start) || !s.At.Before(arrived) {
			continue
		}
		note := ""
		if strings.HasPrefix(s.SQL, streamRead) {
			note = "(the stream's read, not counted)"
		} else {
			out = append(out, s)
		}
		t.Logf("  %2d +%6.2f ms %5.2f ms conn %d %s %.120s", len(out), float64(s.At.Sub(start).Microseconds())/1000,
			float64(s.Took.Microseconds())/1000, s.Conn, note, s.SQL)
	}
	return out
}

// streamRead starts the statement with which the request's stream reads
// the conversation's events: it runs beside the turn, on another
// connection, and is not on the way to the upstream request.
const streamRead = "SELECT id, coalesce(turn_id, ''), event, data FROM conversation_events"

// commits counts the COMMITs among sts: a statement of its own, or the last
// of a batch.
func commits(sts []testdb.Statement) int {
	n := 0
	for _, s := range sts {
		parts := strings.Split(s.SQL, " ;; ")
		if last := strings.TrimPrefix(parts[len(parts)-1], "batch: "); strings.EqualFold(last, "commit") {
			n++
		}
	}
	return n
}

// TestTurnPath_StatementsBeforeUpstream counts the round trips to Postgres
// from the HTTP request to the request upstream, for a message turn and for
// a decision whose follow-up goes upstream (the two paths issue 15 times):
// authentication, the turn's transaction, the policy read, whatever else.
func TestTurnPath_StatementsBeforeUpstream(t *testing.T) {
	tr := &testdb.Statements{}
	e, conv := newTracedApprovalEnv(t, tr)

	var s stream
	msg := between(t, tr, e.up, func() { s = e.send(conv, `get_forecast {"city": "Oslo"}`).ok(t) })
	ap := one[approval](t, s, "approval.required")
	dec := between(t, tr, e.up, func() { e.decide(conv, ap.ID, true, nil).ok(t) })

	for _, c := range []struct {
		name             string
		sts              []testdb.Statement
		most, mostCommit int
	}{
		{"message", msg, messagePathStatements, 1},
		{"decision", dec, decisionPathStatements, 1},
	} {
		if len(c.sts) > c.most {
			t.Errorf("%s: %d statements before the upstream request, want at most %d", c.name, len(c.sts), c.most)
		}
		if n := commits(c.sts); n > c.mostCommit {
			t.Errorf("%s: %d commits before the upstream request, want at most %d", c.name, n, c.mostCommit)
		}
	}
}

// The round trips before the upstream request, counted by
// TestTurnPath_StatementsBeforeUpstream (a batch counts once). Before issue
// 15's turn-path work: 9 for the message (authentication; the transaction:
// begin, the conversation locked, the limits' lock and count, the previous
// response's approvals, the message, OpenTurn, commit; then the policy
// read) and 17 for the decision (authentication; begin, the conversation,
// the approvals, four reads of the tool's effective policy, the decision,
// its audit entry, the response's approvals twice, the limits' lock and
// count, OpenTurn, commit; the policy read). After it 4 (authentication;
// StartMessage's batch after BEGIN with the limits' advisory lock and
// count; OpenTurn with the policy read; commit) and 6 (authentication;
// LockDecisions' batch after BEGIN, with the limits' lock and count; the
// tool's approval card read on its own (issue 24); the decision and its
// audit entry sent with the response's approvals; OpenTurn; commit).
// Issue 26: the limits are checked by OpenTurn against the user's counters
// (00044: no advisory lock, no count over the window), and OpenTurn goes in
// one batch with the COMMIT (the counters' row is locked only while
// Postgres runs that batch); the decision's card is read in LockDecisions'
// batch. Now 3 (authentication; StartMessage's batch; OpenTurn + COMMIT)
// and 4 (authentication; LockDecisions' batch with the cards; the decision
// with the response's approvals; OpenTurn + COMMIT). This test's message
// goes to an existing conversation; a new conversation's first message
// starts in one round trip (TestTurnStart_StatementCount). The binary
// authenticates from memory (auth.SessionCache: one round trip less for
// both; this API's test environment reads every session). The next
// message's remaining two could be one (the conversation's checks and the
// previous response's approvals judged in SQL), not done yet.
const (
	messagePathStatements  = 3
	decisionPathStatements = 4
)

// newTracedApprovalEnv is an API whose pool tr records, with the per-user
// limits on (as the bench and the defaults have them), get_forecast asking
// for approval, and a conversation whose turns have warmed the policy copy.
func newTracedApprovalEnv(t *testing.T, tr *testdb.Statements) (*apiEnv, string) {
	t.Helper()
	e := newAPIWith(t, envOptions{statements: tr, limits: conversation.Limits{MaxConcurrentTurns: 1000, MessagesPerMinute: 10000}})
	e.askFor("get_forecast")
	conv := e.send("", "hello").ok(t).conv(t)
	e.send(conv, "warm the policy copy").ok(t)
	return e, conv
}

// TestTurnPath_StatementsToEnd counts the round trips of the transaction
// that ends a message's turn (the answer's message, the turn's end, its
// terminal event), in direct and gateway mode: the check that the turn
// still runs goes with the first write, and a turn that sent no answers
// reads no approvals to settle. Before issue 26's last step: 3 (direct:
// the conversation locked and read; the message; the end with the COMMIT)
// and 4 (gateway: and the turn's sent approvals read).
func TestTurnPath_StatementsToEnd(t *testing.T) {
	for _, gw := range []bool{false, true} {
		tr := &testdb.Statements{}
		e := newAPIWith(t, envOptions{statements: tr, gateway: gw})
		conv := e.send("", "hello").ok(t).conv(t)
		tr.Start()
		e.send(conv, "hello again").ok(t)
		time.Sleep(100 * time.Millisecond)
		sts := tr.Stop()
		end := -1
		for i, s := range sts {
			sql := strings.ToLower(s.SQL)
			if strings.HasSuffix(sql, " ;; commit") && strings.Contains(sql, "update conversations set active_turn = case when active_turn") {
				end = i
			}
		}
		if end < 0 {
			t.Fatalf("gateway %v: no transaction ended the turn among %d statements", gw, len(sts))
		}
		n := 0
		for i := end; i >= 0; i-- {
			if sts[i].Conn != sts[end].Conn {
				continue
			}
			n++
			t.Logf("gateway %v: %.200s", gw, sts[i].SQL)
			if strings.HasPrefix(strings.ToLower(strings.TrimPrefix(sts[i].SQL, "batch: ")), "begin") {
				break
			}
		}
		if n > endPathStatements {
			t.Errorf("gateway %v: the turn's end took %d round trips, want at most %d", gw, n, endPathStatements)
		}
	}
}

// endPathStatements: the BEGIN with the check that the turn still runs and
// the answer's message (its stored row is read back for its event); then
// the end, the events and the COMMIT.
const endPathStatements = 2
