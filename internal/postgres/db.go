// Package postgres is Toolgate's Postgres adapter: the connection pool,
// migrations, and the stores (policies, conversations, accounts). It is the
// only package that uses pgx for queries; .golangci.yml lists the few places
// that may name the pool type (cmd/api wires it, tests seed rows) and
// internal/testdb, which creates the test databases.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/conversation"
)

// DefaultMaxConns is the pool's size unless DATABASE_URL sets
// pool_max_conns.
const DefaultMaxConns = 16

// Open connects a pool to url. When the database does not exist yet and
// create is true, it is created first, so a fresh machine needs no setup.
func Open(ctx context.Context, url string, create bool, log *slog.Logger) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse DATABASE_URL: %w", err)
	}
	if !strings.Contains(url, "pool_max_conns") {
		// pgx's default (4 on a 2-core machine) makes hundreds of streams
		// wait for a connection; the URL's pool_max_conns overrides this.
		cfg.MaxConns = DefaultMaxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open pool: %w", err)
	}
	err = pool.Ping(ctx)
	if err == nil {
		return pool, nil
	}
	pool.Close()
	if !create || !hasCode(translate(err, "connect"), "database_missing") {
		return nil, fmt.Errorf("connect to the database: %w", err)
	}
	if err := createDatabase(ctx, cfg.ConnConfig); err != nil {
		return nil, err
	}
	log.InfoContext(ctx, "created database", "database", cfg.ConnConfig.Database)
	return Open(ctx, url, false, log)
}

func createDatabase(ctx context.Context, target *pgx.ConnConfig) error {
	admin := target.Copy()
	admin.Database = "postgres"
	conn, err := pgx.ConnectConfig(ctx, admin)
	if err != nil {
		return fmt.Errorf("connect to the postgres database to create %q: %w", target.Database, err)
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{target.Database}.Sanitize())
	if apperr.KindOf(translate(err, "create database")) == apperr.Conflict { // another process won
		return nil
	}
	if err != nil {
		return fmt.Errorf("create database %q: %w", target.Database, err)
	}
	return nil
}

// Querier is what both a pool and a transaction offer.
type Querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// querier is Querier under the name the package's own stores use.
type querier = Querier

// inTx runs fn in a transaction on pool, committing only if fn succeeds.
func inTx(ctx context.Context, pool *pgxpool.Pool, fn func(pgx.Tx) error) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return translate(err, "begin transaction")
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after Commit
	if err := fn(tx); err != nil {
		return err
	}
	return translate(tx.Commit(ctx), "commit")
}

// translate is the one place where driver errors become domain errors; what
// names the operation. No row, or a row it refers to gone meanwhile, is
// NotFound; a duplicate is Conflict; a missing database is Unavailable
// (database_missing); a database that cannot be reached or dropped the
// connection is Unavailable (database_unavailable, with Retry-After, see
// connectionLost). Callers that know what was missing or duplicated check the
// Kind of the result and return a more specific error. A cancelled context
// (the caller went away) stays what it is.
func translate(err error, what string) error {
	if err == nil {
		return nil
	}
	if _, ok := apperr.As(err); ok {
		return err
	}
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("%s: %w", what, err)
	}
	if noRows(err) {
		return apperr.Wrap(err, apperr.NotFound, "not_found", "%s: it does not exist", what)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "23505", "42P04": // unique_violation, duplicate_database
			return apperr.Wrap(err, apperr.Conflict, "conflict", "%s: it already exists", what)
		case "23503": // foreign_key_violation: the parent went away concurrently
			return apperr.Wrap(err, apperr.NotFound, "not_found", "%s: what it refers to no longer exists", what)
		case "3D000": // invalid_catalog_name
			return apperr.Wrap(err, apperr.Unavailable, "database_missing", "%s: the database does not exist", what)
		case "TG409": // toolgate_turn_still_runs (00048)
			return apperr.Wrap(err, apperr.Conflict, conversation.CodeTurnNotRunning, "%s: the turn no longer runs in its conversation", what)
		}
	}
	if connectionLost(err) {
		return apperr.DatabaseUnavailable(fmt.Errorf("%s: %w", what, err))
	}
	return fmt.Errorf("%s: %w", what, err)
}

// InTx is inTx for the stores in the subpackages (authdb, webhookdb).
func InTx(ctx context.Context, pool *pgxpool.Pool, fn func(pgx.Tx) error) error {
	return inTx(ctx, pool, fn)
}

// Translate is translate, the one function that translates driver errors,
// for the stores in the subpackages (authdb, webhookdb, idempotencydb).
func Translate(err error, what string) error { return translate(err, what) }

// NoRows is noRows for the stores in the subpackages: they name no driver
// error themselves.
func NoRows(err error) bool { return noRows(err) }

// noRows reports whether err is the driver's "the query returned no row",
// for the reads to which no row is an answer (false, a zero value, a
// default, or a more specific NotFound than translate's), not an error.
// Nothing else in the package or its subpackages names pgx.ErrNoRows.
func noRows(err error) bool {
	return errors.Is(err, pgx.ErrNoRows)
}

// missingRow is translate's NotFound for a read that found no row, for a
// caller that learns it without the driver saying so (an empty list).
func missingRow(what string) error {
	return translate(pgx.ErrNoRows, what)
}

// connectionLost reports whether err means the database could not be
// reached, or the connection went away under the operation: worth trying
// again in a few seconds (pgxpool replaces broken connections), not a bug.
func connectionLost(err error) bool {
	var connectErr *pgconn.ConnectError
	if errors.As(err, &connectErr) { // refused, timed out, or the server said no (starting up, too many connections, …)
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "57P01", // admin_shutdown: pg_terminate_backend, a fast shutdown
			"57P02", // crash_shutdown: another backend crashed
			"57P03", // cannot_connect_now: starting up, shutting down, in recovery
			"57P05", // idle_session_timeout
			"53300": // too_many_connections
			return true
		}
		return strings.HasPrefix(pgErr.Code, "08") // connection_exception and its subclasses
	}
	var opErr *net.OpError
	return errors.As(err, &opErr) || // dial, read or write on the socket failed
		errors.Is(err, context.DeadlineExceeded) || // no pool connection, or no answer, in time
		pgconn.Timeout(err) ||
		pgconn.SafeToRetry(err) || // failed before anything was sent, e.g. "conn closed"
		errors.Is(err, pgconn.ErrConnClosed) ||
		errors.Is(err, pgx.ErrTxClosed) ||
		errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) // the server closed the socket
}

// hasCode reports whether err carries the apperr code.
func hasCode(err error, code string) bool {
	e, ok := apperr.As(err)
	return ok && e.Code == code
}
