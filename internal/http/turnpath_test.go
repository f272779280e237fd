package http_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/internal/conversation"
)

// statementTrace records every statement the pool sends (BEGIN and COMMIT
// included), with when it started and on which connection: each is one
// round trip to Postgres.
type statementTrace struct {
	mu   sync.Mutex
	on   bool
	stmt []tracedStatement
}

type tracedStatement struct {
	at   time.Time
	pid  uint32
	sql  string
	took time.Duration
}

type traceKey struct{}

func (l *statementTrace) TraceQueryStart(ctx context.Context, c *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.on {
		return ctx
	}
	l.stmt = append(l.stmt, tracedStatement{at: time.Now(), pid: c.PgConn().PID(), sql: strings.Join(strings.Fields(d.SQL), " ")})
	return context.WithValue(ctx, traceKey{}, len(l.stmt)-1)
}

// TraceBatchStart records a batch as one entry (one round trip): its
// statements joined by " ;; ".
func (l *statementTrace) TraceBatchStart(ctx context.Context, c *pgx.Conn, d pgx.TraceBatchStartData) context.Context {
	sqls := make([]string, len(d.Batch.QueuedQueries))
	for i, q := range d.Batch.QueuedQueries {
		sqls[i] = strings.Join(strings.Fields(q.SQL), " ")
	}
	return l.TraceQueryStart(ctx, c, pgx.TraceQueryStartData{SQL: "batch: " + strings.Join(sqls, " ;; ")})
}

func (l *statementTrace) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (l *statementTrace) TraceBatchEnd(ctx context.Context, c *pgx.Conn, _ pgx.TraceBatchEndData) {
	l.TraceQueryEnd(ctx, c, pgx.TraceQueryEndData{})
}

func (l *statementTrace) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryEndData) {
	i, ok := ctx.Value(traceKey{}).(int)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if i < len(l.stmt) {
		l.stmt[i].took = time.Since(l.stmt[i].at)
	}
}

// between records the statements fn sends that start before the upstream
// request fn causes (the tap's next request) arrives.
func (l *statementTrace) between(t testing.TB, up *upstreamTap, fn func()) []tracedStatement {
	t.Helper()
	before := up.count()
	l.mu.Lock()
	l.on, l.stmt = true, nil
	l.mu.Unlock()
	start := time.Now()
	fn()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.on = false
	up.mu.Lock()
	defer up.mu.Unlock()
	if len(up.arrived) <= before {
		t.Fatal("no upstream request")
	}
	arrived := up.arrived[before]
	var out []tracedStatement
	t.Logf("upstream request %.2f ms after the POST; the statements before it:", float64(arrived.Sub(start).Microseconds())/1000)
	for _, s := range l.stmt {
		if s.at.Before(start) || !s.at.Before(arrived) {
			continue
		}
		note := ""
		if strings.HasPrefix(s.sql, streamRead) {
			note = "(the stream's read, not counted)"
		} else {
			out = append(out, s)
		}
		t.Logf("  %2d +%6.2f ms %5.2f ms conn %d %s %.120s", len(out), float64(s.at.Sub(start).Microseconds())/1000,
			float64(s.took.Microseconds())/1000, s.pid, note, s.sql)
	}
	return out
}

// streamRead starts the statement with which the request's stream reads
// the conversation's events: it runs beside the turn, on another
// connection, and is not on the way to the upstream request.
const streamRead = "SELECT id, coalesce(turn_id, ''), event, data FROM conversation_events"

func commits(sts []tracedStatement) int {
	n := 0
	for _, s := range sts {
		if strings.EqualFold(s.sql, "commit") {
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
	tr := &statementTrace{}
	// With the per-user limits on, as the bench and the defaults have them.
	e := newAPIWith(t, envOptions{tracer: tr, limits: conversation.Limits{MaxConcurrentTurns: 1000, MessagesPerMinute: 10000}})
	e.askFor("get_forecast")
	conv := e.send("", "hello").ok(t).conv(t)
	e.send(conv, "warm the policy copy").ok(t)

	var s stream
	msg := tr.between(t, e.up, func() { s = e.send(conv, `get_forecast {"city": "Oslo"}`).ok(t) })
	ap := one[approval](t, s, "approval.required")
	dec := tr.between(t, e.up, func() { e.decide(conv, ap.ID, true, nil).ok(t) })

	for _, c := range []struct {
		name             string
		sts              []tracedStatement
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
// count, OpenTurn, commit; the policy read). Now 4 (authentication;
// StartMessage's batch after BEGIN, OpenTurn with the policy read, commit)
// and 5 (authentication; LockDecisions' batch after BEGIN, with the limits'
// lock and count; the decision and its audit entry sent with the
// response's approvals; OpenTurn; commit).
const (
	messagePathStatements  = 4
	decisionPathStatements = 5
)
