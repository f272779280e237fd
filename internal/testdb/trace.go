package testdb

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Statements records what a pool sends to Postgres while on: every
// statement (BEGIN and COMMIT included) and every batch, a batch as one
// entry (one round trip) whose SQL joins its statements with " ;; ".
type Statements struct {
	mu   sync.Mutex
	on   bool
	list []Statement
}

// Statement is one round trip to Postgres.
type Statement struct {
	At   time.Time     // when it was sent
	Took time.Duration // until its result was read (0 if not yet)
	Conn uint32        // the backend's pid
	SQL  string        // whitespace collapsed
}

// NewTraced is New with every statement the pool sends seen by s.
func NewTraced(t testing.TB, s *Statements) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(URL(t))
	if err != nil {
		t.Fatalf("testdb: parse the URL: %v", err)
	}
	cfg.ConnConfig.Tracer = s
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatalf("testdb: open pool: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// Start forgets what was recorded and records from now on.
func (s *Statements) Start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.on, s.list = true, nil
}

// Stop stops recording and returns what was recorded.
func (s *Statements) Stop() []Statement {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.on = false
	return append([]Statement(nil), s.list...)
}

type traceKey struct{}

func (s *Statements) start(ctx context.Context, c *pgx.Conn, sql string) context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.on {
		return ctx
	}
	s.list = append(s.list, Statement{At: time.Now(), Conn: c.PgConn().PID(), SQL: strings.Join(strings.Fields(sql), " ")})
	return context.WithValue(ctx, traceKey{}, len(s.list)-1)
}

func (s *Statements) end(ctx context.Context) {
	i, ok := ctx.Value(traceKey{}).(int)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if i < len(s.list) {
		s.list[i].Took = time.Since(s.list[i].At)
	}
}

// TraceQueryStart implements pgx.QueryTracer.
func (s *Statements) TraceQueryStart(ctx context.Context, c *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	return s.start(ctx, c, d.SQL)
}

// TraceQueryEnd implements pgx.QueryTracer.
func (s *Statements) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryEndData) {
	s.end(ctx)
}

// TraceBatchStart implements pgx.BatchTracer.
func (s *Statements) TraceBatchStart(ctx context.Context, c *pgx.Conn, d pgx.TraceBatchStartData) context.Context {
	sqls := make([]string, len(d.Batch.QueuedQueries))
	for i, q := range d.Batch.QueuedQueries {
		sqls[i] = q.SQL
	}
	return s.start(ctx, c, "batch: "+strings.Join(sqls, " ;; "))
}

// TraceBatchQuery implements pgx.BatchTracer.
func (s *Statements) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

// TraceBatchEnd implements pgx.BatchTracer.
func (s *Statements) TraceBatchEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchEndData) {
	s.end(ctx)
}
