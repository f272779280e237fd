package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// pipeTx is a conversation transaction that holds back the writes whose
// result nobody waits for (a decision stored, its audit entry: later) and
// sends them in one round trip with the next statement that is read, or
// before the commit. Postgres runs them in the order they were made, in the
// same transaction, exactly as if each had been sent on its own; only the
// waiting for each is saved. An error of a held-back write is returned by
// the statement it went with (and the transaction rolls back, as it would
// have).
type pipeTx struct {
	pgx.Tx
	held []heldExec
}

type heldExec struct {
	sql   string
	args  []any
	what  string                        // for translate
	check func(pgconn.CommandTag) error // nil: any result is fine
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

// send sends the held writes, then sql, in one batch; the results of the
// held writes are read (and judged) before it returns.
func (p *pipeTx) send(ctx context.Context, sql string, args []any) (pgx.BatchResults, error) {
	b := &pgx.Batch{}
	for _, h := range p.held {
		b.Queue(h.sql, h.args...)
	}
	held := p.held
	p.held = nil
	if sql != "" {
		b.Queue(sql, args...)
	}
	br := p.Tx.SendBatch(ctx, b)
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

// flush sends what is held, if anything: before the commit.
func (p *pipeTx) flush(ctx context.Context) error {
	if len(p.held) == 0 {
		return nil
	}
	br, err := p.send(ctx, "", nil)
	if err != nil {
		return err
	}
	return translate(br.Close(), "send the held writes")
}

func (p *pipeTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if len(p.held) == 0 {
		return p.Tx.Exec(ctx, sql, args...)
	}
	br, err := p.send(ctx, sql, args)
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
	if len(p.held) == 0 {
		return p.Tx.QueryRow(ctx, sql, args...)
	}
	br, err := p.send(ctx, sql, args)
	if err != nil {
		return errRow{err}
	}
	return batchRow{row: br.QueryRow(), br: br}
}

func (p *pipeTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if len(p.held) == 0 {
		return p.Tx.Query(ctx, sql, args...)
	}
	br, err := p.send(ctx, sql, args)
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
	if err := p.flush(ctx); err != nil {
		return errBatch{err}
	}
	return p.Tx.SendBatch(ctx, b)
}

func (p *pipeTx) CopyFrom(ctx context.Context, table pgx.Identifier, cols []string, src pgx.CopyFromSource) (int64, error) {
	if err := p.flush(ctx); err != nil {
		return 0, err
	}
	return p.Tx.CopyFrom(ctx, table, cols, src)
}

func (p *pipeTx) Begin(ctx context.Context) (pgx.Tx, error) {
	if err := p.flush(ctx); err != nil {
		return nil, err
	}
	return p.Tx.Begin(ctx)
}

func (p *pipeTx) Commit(ctx context.Context) error {
	if err := p.flush(ctx); err != nil {
		return err
	}
	return p.Tx.Commit(ctx)
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
