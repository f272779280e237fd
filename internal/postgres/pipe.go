package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// pipeTx is a conversation transaction that saves round trips three ways.
// It begins lazily: BEGIN goes in one batch with the transaction's first
// statement. It holds back the writes whose result nobody waits for (a
// decision stored, its audit entry: hold) and sends them in one batch with
// the next statement. And what is left at the end (held writes, and the
// statements whose results are only wanted once the transaction committed:
// deferUntilCommit) goes in one batch with the COMMIT. Postgres runs what a
// batch carries in the order it was made, in the same transaction, exactly
// as if each statement had been sent on its own; only the waiting for each
// is saved. An error of a held-back write is returned by the statement it
// went with (and the transaction rolls back, as it would have); an error of
// a statement in the commit's batch makes Postgres skip the COMMIT, and the
// transaction rolls back.
//
// BEGIN and COMMIT are plain statements on a connection the transaction
// holds from its first statement to its end (pgx's Tx would send its own
// COMMIT, a round trip more).
type pipeTx struct {
	pool     *pgxpool.Pool
	conn     *pgxpool.Conn // nil until the first statement
	begun    bool          // BEGIN was sent
	done     bool          // committed, or rolled back
	held     []heldExec
	deferred []deferredQuery
}

type heldExec struct {
	sql   string
	args  []any
	what  string                        // for translate
	check func(pgconn.CommandTag) error // nil: any result is fine
}

// deferredQuery is a statement sent with the COMMIT; scan reads its row.
type deferredQuery struct {
	sql  string
	args []any
	scan func(pgx.Row) error
}

// inTransaction reports whether q is a transaction (not the pool).
func inTransaction(q querier) bool {
	switch q.(type) {
	case *pipeTx, pgx.Tx:
		return true
	}
	return false
}

// hold queues a write on q when q is a pipeTx, else runs it now; check, if
// set, judges its result (rows affected).
func hold(ctx context.Context, q querier, what string, check func(pgconn.CommandTag) error, sql string, args ...any) error {
	if p, ok := q.(*pipeTx); ok {
		p.held = append(p.held, heldExec{sql: sql, args: args, what: what, check: check})
		return nil
	}
	tag, err := q.Exec(ctx, sql, args...)
	if err != nil {
		return translate(err, what)
	}
	if check != nil {
		return check(tag)
	}
	return nil
}

// deferUntilCommit sends sql with the COMMIT when q is a pipeTx (scan reads
// its row once the batch is back; its error fails the commit); else it runs
// it now. It reports whether the statement was deferred. Only a statement
// that is the transaction's last and whose results are wanted only after
// the commit may be deferred.
func deferUntilCommit(ctx context.Context, q querier, scan func(pgx.Row) error, sql string, args ...any) (bool, error) {
	if p, ok := q.(*pipeTx); ok {
		p.deferred = append(p.deferred, deferredQuery{sql: sql, args: args, scan: scan})
		return true, nil
	}
	return false, scan(q.QueryRow(ctx, sql, args...))
}

// send sends in one batch BEGIN (if the transaction has not begun), the
// held writes, then tail's statements (tail may be nil). It reads the
// results of the first two and returns the batch positioned at tail's.
func (p *pipeTx) send(ctx context.Context, tail *pgx.Batch) (pgx.BatchResults, error) {
	if p.conn == nil {
		c, err := p.pool.Acquire(ctx)
		if err != nil {
			return nil, translate(err, "begin transaction")
		}
		p.conn = c
	}
	b := &pgx.Batch{}
	begin := !p.begun
	if begin {
		b.Queue("begin")
	}
	for _, h := range p.held {
		b.Queue(h.sql, h.args...)
	}
	held := p.held
	p.held = nil
	if tail != nil {
		b.QueuedQueries = append(b.QueuedQueries, tail.QueuedQueries...)
	}
	br := p.conn.SendBatch(ctx, b)
	if begin {
		p.begun = true // whatever came of it: the rollback ends it
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			return nil, translate(err, "begin transaction")
		}
	}
	for _, h := range held {
		tag, err := br.Exec()
		if err != nil {
			_ = br.Close()
			return nil, translate(err, h.what)
		}
		if h.check != nil {
			if err := h.check(tag); err != nil {
				_ = br.Close()
				return nil, err
			}
		}
	}
	return br, nil
}

func one(sql string, args []any) *pgx.Batch {
	b := &pgx.Batch{}
	b.Queue(sql, args...)
	return b
}

// commit sends what is held and deferred with the COMMIT, in one batch, and
// reads the deferred statements' rows; nothing to do if no statement began
// the transaction.
func (p *pipeTx) commit(ctx context.Context) error {
	if !p.begun && len(p.held) == 0 && len(p.deferred) == 0 {
		p.release()
		return nil
	}
	tail := &pgx.Batch{}
	for _, d := range p.deferred {
		tail.Queue(d.sql, d.args...)
	}
	tail.Queue("commit")
	deferred := p.deferred
	p.deferred = nil
	br, err := p.send(ctx, tail)
	if err != nil {
		return err
	}
	for _, d := range deferred {
		if err := d.scan(br.QueryRow()); err != nil {
			_ = br.Close()
			return err
		}
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return translate(err, "commit")
	}
	if tag.String() != "COMMIT" {
		return translate(pgx.ErrTxCommitRollback, "commit")
	}
	p.done = true
	p.release()
	return nil
}

// rollback ends the transaction if it began and was not committed (a no-op
// after commit) and gives its connection back.
func (p *pipeTx) rollback(ctx context.Context) {
	p.held, p.deferred = nil, nil
	if p.conn == nil {
		return
	}
	if p.begun && !p.done {
		if _, err := p.conn.Exec(ctx, "rollback"); err != nil {
			// The connection's state is unknown: it is not given back.
			_ = p.conn.Conn().Close(ctx)
		}
	}
	p.done = true
	p.release()
}

func (p *pipeTx) release() {
	if p.conn != nil {
		p.conn.Release()
		p.conn = nil
	}
}

func (p *pipeTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if p.begun && len(p.held) == 0 {
		return p.conn.Exec(ctx, sql, args...)
	}
	br, err := p.send(ctx, one(sql, args))
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag, err
}

func (p *pipeTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if p.begun && len(p.held) == 0 {
		return p.conn.QueryRow(ctx, sql, args...)
	}
	br, err := p.send(ctx, one(sql, args))
	if err != nil {
		return errRow{err}
	}
	return batchRow{row: br.QueryRow(), br: br}
}

func (p *pipeTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if p.begun && len(p.held) == 0 {
		return p.conn.Query(ctx, sql, args...)
	}
	br, err := p.send(ctx, one(sql, args))
	if err != nil {
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		_ = br.Close()
		return nil, err
	}
	return &batchRows{Rows: rows, br: br}, nil
}

func (p *pipeTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if p.begun && len(p.held) == 0 {
		return p.conn.SendBatch(ctx, b)
	}
	br, err := p.send(ctx, b)
	if err != nil {
		return errBatch{err}
	}
	return br
}

// batchRow is a row read from a batch: reading it closes the batch.
type batchRow struct {
	row pgx.Row
	br  pgx.BatchResults
}

func (r batchRow) Scan(dest ...any) error {
	err := r.row.Scan(dest...)
	if cerr := r.br.Close(); err == nil {
		err = cerr
	}
	return err
}

// batchRows are rows read from a batch: closing them closes the batch.
type batchRows struct {
	pgx.Rows
	br  pgx.BatchResults
	err error
}

func (r *batchRows) Close() {
	r.Rows.Close()
	if r.br != nil {
		r.err = r.br.Close()
		r.br = nil
	}
}

func (r *batchRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return err
	}
	return r.err
}

func (r *batchRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.Close()
	return false
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

type errBatch struct{ err error }

func (b errBatch) Exec() (pgconn.CommandTag, error) { return pgconn.CommandTag{}, b.err }
func (b errBatch) Query() (pgx.Rows, error)         { return nil, b.err }
func (b errBatch) QueryRow() pgx.Row                { return errRow(b) }
func (b errBatch) Close() error                     { return b.err }
func (b errBatch) Tx() pgx.Tx                       { return nil }
