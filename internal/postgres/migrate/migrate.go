// Package migrate runs Toolgate's goose migrations (db/migrations,
// embedded in the binary) on a pool: up, down one, status.
package migrate

import (
	"context"
	"fmt"
	"io"
	"io/fs"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/toolgate/toolgate/db"
)

// provider returns goose's provider on pool and a func that closes the
// database/sql wrapper it runs on (the pool itself stays open).
func provider(pool *pgxpool.Pool) (*goose.Provider, func(), error) {
	sqlDB := stdlib.OpenDBFromPool(pool)
	closeDB := func() { _ = sqlDB.Close() } // only releases the wrapper's idle connections to the pool
	migrations, err := fs.Sub(db.Migrations, "migrations")
	if err != nil {
		closeDB()
		return nil, nil, err
	}
	p, err := goose.NewProvider(goose.DialectPostgres, sqlDB, migrations)
	if err != nil {
		closeDB()
		return nil, nil, fmt.Errorf("load migrations: %w", err)
	}
	return p, closeDB, nil
}

// Up applies every pending migration. goose takes a Postgres advisory
// lock, so two processes starting at once do not race.
func Up(ctx context.Context, pool *pgxpool.Pool) ([]string, error) {
	p, closeDB, err := provider(pool)
	if err != nil {
		return nil, err
	}
	defer closeDB()
	res, err := p.Up(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrate up: %w", err)
	}
	applied := make([]string, 0, len(res))
	for _, r := range res {
		applied = append(applied, r.Source.Path)
	}
	return applied, nil
}

// Down rolls back the newest migration.
func Down(ctx context.Context, pool *pgxpool.Pool) (string, error) {
	p, closeDB, err := provider(pool)
	if err != nil {
		return "", err
	}
	defer closeDB()
	res, err := p.Down(ctx)
	if err != nil {
		return "", fmt.Errorf("migrate down: %w", err)
	}
	if res == nil {
		return "", nil
	}
	return res.Source.Path, nil
}

// Status writes one line per migration: applied or pending.
func Status(ctx context.Context, pool *pgxpool.Pool, w io.Writer) error {
	p, closeDB, err := provider(pool)
	if err != nil {
		return err
	}
	defer closeDB()
	st, err := p.Status(ctx)
	if err != nil {
		return fmt.Errorf("migrate status: %w", err)
	}
	for _, s := range st {
		when := "pending"
		if s.State == goose.StateApplied {
			when = "applied " + s.AppliedAt.UTC().Format("2006-01-02 15:04:05Z")
		}
		fmt.Fprintf(w, "%-40s %s\n", s.Source.Path, when)
	}
	return nil
}
