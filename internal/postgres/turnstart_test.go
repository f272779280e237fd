package postgres_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/conversation/engine"
	"github.com/toolgate/toolgate/internal/mcpclient"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/policy/policysvc"
	"github.com/toolgate/toolgate/internal/postgres"
	"github.com/toolgate/toolgate/internal/testdb"
)

// statementLog records every statement the pool's connections send (BEGIN
// and COMMIT included): each is one round trip to Postgres.
type statementLog struct {
	mu   sync.Mutex
	on   bool
	sqls []string
}

func (l *statementLog) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.on {
		l.sqls = append(l.sqls, strings.Join(strings.Fields(d.SQL), " "))
	}
	return ctx
}

func (l *statementLog) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TraceBatchStart records a batch as one entry (one round trip): its
// statements joined by " ;; ".
func (l *statementLog) TraceBatchStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchStartData) context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.on {
		sqls := make([]string, len(d.Batch.QueuedQueries))
		for i, q := range d.Batch.QueuedQueries {
			sqls[i] = strings.Join(strings.Fields(q.SQL), " ")
		}
		l.sqls = append(l.sqls, "batch: "+strings.Join(sqls, " ;; "))
	}
	return ctx
}

func (l *statementLog) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (l *statementLog) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

// record returns the statements fn sends.
func (l *statementLog) record(fn func()) []string {
	l.mu.Lock()
	l.on, l.sqls = true, nil
	l.mu.Unlock()
	fn()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.on = false
	return l.sqls
}

// TestTurnStart_StatementCount counts the round trips a message turn
// takes before its request leaves (the turn record: lock, limits, the
// person's message, the claim, the opening events and the policy read of
// the request, all in one transaction), for a first message and for a
// message after a response. A batch counts once (one round trip).
// internal/http's TestTurnPath_StatementsBeforeUpstream counts the whole
// path from the HTTP request.
func TestTurnStart_StatementCount(t *testing.T) {
	cfg, err := pgxpool.ParseConfig(testdb.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	stmts := &statementLog{}
	cfg.ConnConfig.Tracer = stmts
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	ctx := auth.WithUser(t.Context(), auth.User{ID: owner, Email: "owner@example.com", Role: auth.Member})
	if _, err := pool.Exec(ctx, `INSERT INTO users (id, email, role) VALUES ($1, 'owner@example.com', 'member')`, owner); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	policies := policysvc.New(postgres.NewStore(pool), &mcpclient.Discoverer{}, log, policy.Options{})
	chat := engine.New(postgres.NewConversationStore(pool), postgres.NewConversationPolicies(policies), nil, log,
		engine.Options{Info: conversation.Info{Offline: true, Model: "m"}, Limits: conversation.Limits{MaxConcurrentTurns: 4, MessagesPerMinute: 30},
			Replica: "rep_a"})

	var turn *engine.Turn
	first := stmts.record(func() { turn, err = chat.StartMessage(ctx, "", "hello") })
	if err != nil {
		t.Fatal(err)
	}
	conv := turn.ConversationID()
	// The turn ended with a response: the next message starts from it.
	if _, err := pool.Exec(ctx, `UPDATE conversations SET active_turn = NULL, lease_owner = NULL, lease_expires_at = NULL,
		last_response_id = 'resp_1' WHERE id = $1`, conv); err != nil {
		t.Fatal(err)
	}
	next := stmts.record(func() { _, err = chat.StartMessage(ctx, conv, "and then?") })
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		sqls  []string
		limit int
	}{{"first message", first, firstMessageStatements}, {"next message", next, nextMessageStatements}} {
		t.Logf("%s: %d statements", c.name, len(c.sqls))
		for i, s := range c.sqls {
			t.Logf("  %2d %.110s", i+1, s)
		}
		if len(c.sqls) > c.limit {
			t.Errorf("%s: %d statements before the upstream call, want at most %d", c.name, len(c.sqls), c.limit)
		}
		if n := countPrefix(c.sqls, "begin") + countPrefix(c.sqls, "batch: begin"); n != 1 {
			t.Errorf("%s: %d transactions, want 1 (the claim and its opening events commit together)", c.name, n)
		}
	}
}

func countPrefix(sqls []string, prefix string) int {
	n := 0
	for _, s := range sqls {
		if strings.HasPrefix(strings.ToLower(s), prefix) {
			n++
		}
	}
	return n
}

// The round trips of a message turn's start. Before OpenTurn combined the
// claim, the answers marked sent, the opening events and the grants read:
// 9 for a first message, 10 for the next (11 when it carried answers);
// then 7 and 8, and one more for the policy read after the commit; since
// the limits' lock and count go in one batch and OpenTurn makes the policy
// read: 6 and 7, the policy read included; since StartMessage sends the
// lock (or creation), the limits' lock and count, the last response's
// requests and the message in one batch: 4 and 4; and with BEGIN sent in
// that batch: 3 and 3; with OpenTurn sent with the COMMIT (issue 26): 2 and
// 2; and with a new conversation and its first message written in that
// same batch (startNewConversation: nothing in them needs an answer before
// the opening): 1 and 2.
const (
	firstMessageStatements = 1
	nextMessageStatements  = 2
)
