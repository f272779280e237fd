package http_test

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// dbKiller terminates, from a connection of its own, every other backend
// on the test database: what an admin's pg_terminate_backend, a failover
// or a fast shutdown does to the API's pooled connections.
type dbKiller struct {
	t    *testing.T
	pool *pgxpool.Pool // one connection, never terminated by itself
}

func newDBKiller(t *testing.T, e *apiEnv) *dbKiller {
	t.Helper()
	cfg := e.pool.Config()
	cfg.MaxConns, cfg.MinConns = 1, 0
	cfg.ConnConfig.RuntimeParams["application_name"] = "toolgate-test-killer"
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return &dbKiller{t: t, pool: pool}
}

// kill terminates the other backends and, when wait is set, waits until
// they are gone (with requests running, new ones keep coming).
func (k *dbKiller) kill(wait bool) int {
	ctx := context.Background()
	var n int
	err := k.pool.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&n)
	if err != nil {
		k.t.Errorf("terminate backends: %v", err)
		return 0
	}
	for deadline := time.Now().Add(5 * time.Second); wait && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		var left int
		if err := k.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&left); err != nil {
			k.t.Errorf("count backends: %v", err)
			return n
		}
		if left == 0 {
			return n
		}
	}
	if wait {
		k.t.Errorf("terminated backends still listed after 5s")
	}
	return n
}

// checkDBUnavailable fails unless res is 503 database_unavailable with a
// Retry-After of a few seconds.
func checkDBUnavailable(t *testing.T, what string, res response) {
	t.Helper()
	var body apiError
	_ = json.Unmarshal(res.body, &body)
	if res.status != 503 || body.Error.Code != "database_unavailable" || res.header.Get("Retry-After") != "3" ||
		body.Error.Message == "" {
		t.Errorf("%s: %d %s (Retry-After %q); want 503 database_unavailable with Retry-After 3",
			what, res.status, res.body, res.header.Get("Retry-After"))
	}
}

// TestFaults_TerminatedConnectionsAre503AndTheAPIRecovers: when Postgres
// terminates the API's connections (SQLSTATE 57P01, then "conn closed" on
// the broken ones), the requests that hit them answer 503
// database_unavailable with Retry-After, never 500; once the database is
// back the pool reconnects by itself and every request succeeds again.
func TestFaults_TerminatedConnectionsAre503AndTheAPIRecovers(t *testing.T) {
	e := newAPI(t)
	e.createDemo("weather")
	k := newDBKiller(t, e)
	reads := []string{"/api/mcp/servers", "/api/mcp/servers/weather", "/api/settings", "/api/audit",
		"/api/conversations", "/api/mcp/servers/weather/tools/approval-policies"}

	// A pooled connection terminated while idle, used before the pool's
	// liveness ping (after 1s idle) would notice: the request fails, 503.
	seen503 := false
	for attempt := 0; attempt < 10 && !seen503; attempt++ {
		e.must(200, "GET", "/api/mcp/servers", nil, nil)
		if k.kill(true) == 0 {
			t.Fatal("no API connection to terminate")
		}
		res := e.call("GET", "/api/mcp/servers", nil)
		if res.status == 200 {
			continue // the pool happened to hand out a fresh connection
		}
		checkDBUnavailable(t, "GET /api/mcp/servers on a terminated connection", res)
		seen503 = true
	}
	if !seen503 {
		t.Fatal("no request ever hit a terminated connection in 10 attempts")
	}

	// Requests racing repeated terminations, reads and an idempotent write:
	// each succeeds or says database_unavailable.
	stop := make(chan struct{})
	var killer sync.WaitGroup
	killer.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(30 * time.Millisecond):
				k.kill(false)
			}
		}
	})
	var wg sync.WaitGroup
	var ok, unavailable atomic.Int64
	for w := range 6 {
		wg.Go(func() {
			for i := range 25 {
				var res response
				what := ""
				if (w+i)%4 == 0 {
					what = "PUT approval-policy"
					res = e.call("PUT", "/api/mcp/servers/weather/tools/get_forecast/approval-policy", `{"policy":"always"}`)
				} else {
					what = "GET " + reads[(w+i)%len(reads)]
					res = e.call("GET", reads[(w+i)%len(reads)], nil)
				}
				if res.status == 200 {
					ok.Add(1)
					continue
				}
				unavailable.Add(1)
				checkDBUnavailable(t, what+" during terminations", res)
			}
		})
	}
	wg.Wait()
	close(stop)
	killer.Wait()
	t.Logf("during terminations: %d ok, %d unavailable", ok.Load(), unavailable.Load())
	if unavailable.Load() == 0 {
		t.Error("no request failed while the connections were being terminated: the fault was not exercised")
	}

	// Recovery: once broken idle connections are past the pool's liveness
	// ping, nothing fails any more; no restart needed.
	time.Sleep(1100 * time.Millisecond)
	for range 3 {
		for _, path := range append(reads, "/readyz") {
			e.must(200, "GET", path, nil, nil)
		}
		e.must(200, "PUT", "/api/mcp/servers/weather/tools/get_forecast/approval-policy", `{"policy":"never"}`, nil)
	}
}
