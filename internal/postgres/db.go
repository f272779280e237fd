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
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolgate/toolgate/internal/apperr"
)

// Open connects a pool to url. When the database does not exist yet and
// create is true, it is created first, so a fresh machine needs no setup.
func Open(ctx context.Context, url string, create bool, log *slog.Logger) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse DATABASE_URL: %w", err)
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

// querier is what both a pool and a transaction offer.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

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
// NotFound; a duplicate is Conflict; an unreachable or missing database is
// Unavailable. Callers that know what was missing or duplicated check the
// Kind of the result and return a more specific error.
func translate(err error, what string) error {
	if err == nil {
		return nil
	}
	if _, ok := apperr.As(err); ok {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w", what, err)
	}
	if errors.Is(err, pgx.ErrNoRows) {
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
		}
		return fmt.Errorf("%s: %w", what, err)
	}
	if pgconn.SafeToRetry(err) || errors.Is(err, pgx.ErrTxClosed) {
		return apperr.Wrap(err, apperr.Unavailable, "database_unavailable", "the database is not reachable; try again shortly")
	}
	var connErr *pgconn.ConnectError
	if errors.As(err, &connErr) {
		return apperr.Wrap(err, apperr.Unavailable, "database_unavailable", "the database is not reachable; try again shortly")
	}
	return fmt.Errorf("%s: %w", what, err)
}

// hasCode reports whether err carries the apperr code.
func hasCode(err error, code string) bool {
	e, ok := apperr.As(err)
	return ok && e.Code == code
}
