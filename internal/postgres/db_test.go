package postgres_test

import (
	"log/slog"
	"sync"
	"testing"

	"github.com/toolgate/toolgate/internal/postgres"
	"github.com/toolgate/toolgate/internal/testdb"
)

// TestOpen_ConcurrentStartsAllCreateTheMissingDatabase: processes starting
// at once on a fresh machine race to create the database; the losers'
// "already exists" is success, not a failed start.
func TestOpen_ConcurrentStartsAllCreateTheMissingDatabase(t *testing.T) {
	url := testdb.MissingURL(t)
	const starts = 4
	errs := make([]error, starts)
	var wg sync.WaitGroup
	for i := range starts {
		wg.Go(func() {
			pool, err := postgres.Open(t.Context(), url, true, slog.New(slog.DiscardHandler))
			if err == nil {
				pool.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("start %d: %v", i, err)
		}
	}
}

// TestOpen_MissingDatabaseWithoutCreateFails names the database problem.
func TestOpen_MissingDatabaseWithoutCreateFails(t *testing.T) {
	_, err := postgres.Open(t.Context(), testdb.MissingURL(t), false, slog.New(slog.DiscardHandler))
	if err == nil {
		t.Fatal("Open succeeded on a missing database with create false")
	}
}

// A replica keeps DefaultMaxConns connections (pgx's default, 4 on a 2-core
// machine, kept hundreds of streams waiting), unless DATABASE_URL says
// otherwise with pool_max_conns.
func TestOpen_PoolSizeDefaultsTo16AndTheURLOverridesIt(t *testing.T) {
	url := testdb.URL(t)
	for _, c := range []struct {
		url  string
		want int32
	}{{url, postgres.DefaultMaxConns}, {url + "&pool_max_conns=3", 3}} {
		pool, err := postgres.Open(t.Context(), c.url, false, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		if got := pool.Config().MaxConns; got != c.want {
			t.Errorf("Open(%q) keeps up to %d connections; want %d", c.url, got, c.want)
		}
		pool.Close()
	}
	if postgres.DefaultMaxConns < 16 {
		t.Fatalf("DefaultMaxConns = %d; want at least 16", postgres.DefaultMaxConns)
	}
}
