package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// pipeTx is a conversation transaction that saves round trips two ways.
// It begins lazily: BEGIN goes in one batch with the transaction's first
// statement. And it holds back the writes whose result nobody waits for (a
// decision stored, its audit entry: hold) and sends them in one batch with
// the next statement, or before the commit. Postgres runs what a batch
// carries in the order it was made, in the same transaction, exactly as if
// each statement had been sent on its own; only the waiting for each is
// saved. An error of a held-back write is returned by the statement it went
// with (and the transaction rolls back, as it would have).
type pipeTx struct {
	pool *pgxpool.Pool
	tx   pgx.Tx // nil until the first statement began it
	held []heldExec
}

type heldExec struct {
	sql   string
	args  []any
	what  string                        // for translate
	check func(pgconn.CommandTag) error // nil: any result is fine
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

// send sends in one batch BEGIN (if the transaction has not begun), the
// held writes, then tail's statements (tail may be nil). It reads the
// results of the first two and returns the batch positioned at tail's.
func (p *pipeTx) send(ctx context.Context, tail *pgx.Batch) (pgx.BatchResults, error) {
	b := &pgx.Batch{}
	begin := p.tx == nil
	if begin {
		b.BeginTx(pgx.TxOptions{})
	}
	for _, h := range p.held {
		b.Queue(h.sql, h.args...)
	}
	held := p.held
	p.held = nil
	if tail != nil {
		b.QueuedQueries = append(b.QueuedQueries, tail.QueuedQueries...)
	}
	var br pgx.BatchResults
	if begin {
		br = p.pool.SendBatch(ctx, b)
		p.tx = br.Tx() // closed if the BEGIN failed; Rollback then releases the connection
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			return nil, translate(err, "begin transaction")
		}
	} else {
		br = p.tx.SendBatch(ctx, b)
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

// flush sends what is held, if anything: before the commit.
func (p *pipeTx) flush(ctx context.Context) error {
	if len(p.held) == 0 {
		return nil
	}
	br, err := p.send(ctx, nil)
	if err != nil {
		return err
	}
	return translate(br.Close(), "send the held writes")
}

// commit sends what is held and commits; nothing to do if no statement
// began the transaction.
func (p *pipeTx) commit(ctx context.Context) error {
	if err := p.flush(ctx); err != nil {
		return err
	}
	if p.tx == nil {
		return nil
	}
	return translate(p.tx.Commit(ctx), "commit")
}

// rollback ends the transaction if it began and was not committed (a no-op
// after commit).
func (p *pipeTx) rollback(ctx context.Context) {
	p.held = nil
	if p.tx != nil {
		_ = p.tx.Rollback(ctx)
	}
}

func (p *pipeTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if p.tx != nil && len(p.held) == 0 {
		return p.tx.Exec(ctx, sql, args...)
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
	if p.tx != nil && len(p.held) == 0 {
		return p.tx.QueryRow(ctx, sql, args...)
	}
	br, err := p.send(ctx, one(sql, args))
	if err != nil {
		return errRow{err}
	}
	return batchRow{row: br.QueryRow(), br: br}
}

func (p *pipeTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if p.tx != nil && len(p.held) == 0 {
		return p.tx.Query(ctx, sql, args...)
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
	if p.tx != nil && len(p.held) == 0 {
		return p.tx.SendBatch(ctx, b)
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
