package postgres_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/postgres"
	"github.com/toolgate/toolgate/internal/testdb"
)

func wantDBUnavailable(t *testing.T, what string, err error) {
	t.Helper()
	e, ok := apperr.As(err)
	if !ok || e.Kind != apperr.Unavailable || e.Code != "database_unavailable" || e.RetryAfter != apperr.DatabaseRetryAfter {
		t.Errorf("%s: %v; want database_unavailable with Retry-After %d", what, err, apperr.DatabaseRetryAfter)
	}
}

// TestStore_ClosedPortIsDatabaseUnavailable: a store whose database refuses
// connections (nothing listens on the port) says database_unavailable,
// for reads and for transactions alike.
func TestStore_ClosedPortIsDatabaseUnavailable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	pool, err := pgxpool.New(t.Context(), "postgres://postgres@"+addr+"/toolgate?sslmode=disable&connect_timeout=2")
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	store := postgres.NewStore(pool)
	_, err = store.Repo().Servers.List(t.Context())
	wantDBUnavailable(t, "ListServers", err)
	err = store.Tx(t.Context(), func(policy.Repo) error { return nil })
	wantDBUnavailable(t, "Tx", err)
	wantDBUnavailable(t, "Ping", store.Ping(t.Context()))
}

// TestStore_TerminatedAndRefusedSessionsAreDatabaseUnavailable: Postgres
// terminates the store's connections (57P01) and refuses new sessions
// (ALLOW_CONNECTIONS false: 55000 while connecting), as during maintenance:
// database_unavailable every time, and the store works again, without a
// new pool, once connections are allowed.
func TestStore_TerminatedAndRefusedSessionsAreDatabaseUnavailable(t *testing.T) {
	url := testdb.URL(t)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	adminCfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	// From the server's maintenance database: a database cannot close itself.
	name := adminCfg.ConnConfig.Database
	adminCfg.ConnConfig.Database = "postgres"
	adminCfg.MaxConns = 1
	admin, err := pgxpool.NewWithConfig(ctx, adminCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	exec := func(sql string) {
		t.Helper()
		if _, err := admin.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}

	store := postgres.NewStore(pool)
	if _, err := store.Repo().Servers.List(ctx); err != nil {
		t.Fatal(err)
	}
	exec(`ALTER DATABASE "` + name + `" ALLOW_CONNECTIONS false`)
	defer exec(`ALTER DATABASE "` + name + `" ALLOW_CONNECTIONS true`)
	exec(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '` + name + `'`)
	for i := range 3 {
		_, err := store.Repo().Servers.List(ctx)
		wantDBUnavailable(t, "ListServers while the database is closed", err)
		if i == 0 {
			err = store.Tx(ctx, func(r policy.Repo) error { _, err := r.Servers.List(ctx); return err })
			wantDBUnavailable(t, "Tx while the database is closed", err)
		}
	}

	exec(`ALTER DATABASE "` + name + `" ALLOW_CONNECTIONS true`)
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := store.Repo().Servers.List(ctx)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the store did not recover within 5s: %v", err)
		}
		wantDBUnavailable(t, "ListServers while recovering", err)
		time.Sleep(50 * time.Millisecond)
	}
}
