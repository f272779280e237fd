package http_test

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolgate/toolgate/internal/auth"
	toolhttp "github.com/toolgate/toolgate/internal/http"
	"github.com/toolgate/toolgate/internal/mcpclient"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/policy/policysvc"
	"github.com/toolgate/toolgate/internal/postgres"
	"github.com/toolgate/toolgate/internal/postgres/authdb"
)

// TestFaults_DatabaseDownIs503WithoutDetails: with no database (connection
// refused on a closed port) the API says so in the one error shape, with
// Retry-After, and leaks no driver detail.
func TestFaults_DatabaseDownIs503WithoutDetails(t *testing.T) {
	pool, err := pgxpool.New(context.Background(), "postgres://postgres@127.0.0.1:1/toolgate?sslmode=disable&connect_timeout=2")
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var logs strings.Builder
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logs.Write(p)
	}), nil))
	store := postgres.NewStore(pool)
	authn := auth.New(authdb.Stores(pool), auth.Options{}, log)
	srv := httptest.NewServer(toolhttp.NewServer(log, policysvc.New(store, &mcpclient.Discoverer{}, log, policy.Options{}), nil, authn, store, toolhttp.Options{MaxBodyBytes: 1 << 20}))
	defer srv.Close()
	// The token cannot be checked either: still 503, not 401.
	e := &apiEnv{t: t, url: srv.URL, token: auth.TokenPrefix + "unchecked"}

	for _, path := range []string{"/api/mcp/servers", "/api/settings", "/api/audit", "/readyz"} {
		var got apiError
		res := e.must(503, "GET", path, nil, &got)
		if got.Error.Code != "database_unavailable" || res.header.Get("Retry-After") != "3" {
			t.Errorf("GET %s: code %q, Retry-After %q; want database_unavailable, 3", path, got.Error.Code, res.header.Get("Retry-After"))
		}
		if strings.Contains(string(res.body), "127.0.0.1:1") || strings.Contains(string(res.body), "dial") {
			t.Errorf("GET %s leaks driver detail: %s", path, res.body)
		}
	}
	var got apiError
	res := e.must(503, "POST", "/api/mcp/servers", map[string]any{"label": "x", "url": "http://x.example/mcp"}, &got)
	if got.Error.Code != "database_unavailable" || res.header.Get("Retry-After") != "3" {
		t.Errorf("POST /api/mcp/servers: code %q, Retry-After %q; want database_unavailable, 3", got.Error.Code, res.header.Get("Retry-After"))
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "status=503") {
		t.Errorf("the server log does not record the failures:\n%s", logs.String())
	}
}

// TestFaults_PolicyChangesRaceServerDelete: policies written while their
// server is deleted either land before the delete (and go with it) or get
// 404; nothing answers 500 and nothing is left behind.
func TestFaults_PolicyChangesRaceServerDelete(t *testing.T) {
	e := newAPI(t)
	e.createDemo("weather")
	var wg sync.WaitGroup
	statuses := make(chan int, 41)
	for i := range 40 {
		wg.Go(func() {
			res := e.call("PUT", "/api/mcp/servers/weather/tools/t"+string(rune('a'+i%26))+"/approval-policy", `{"policy":"always"}`)
			statuses <- res.status
		})
		if i == 20 {
			wg.Go(func() { statuses <- e.call("DELETE", "/api/mcp/servers/weather", nil).status })
		}
	}
	wg.Wait()
	close(statuses)
	for st := range statuses {
		if st != 200 && st != 204 && st != 404 {
			t.Errorf("status %d during the race", st)
		}
	}
	var n int
	if err := e.pool.QueryRow(t.Context(), `SELECT count(*) FROM tool_policies`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d policies outlived their server", n)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

var _ io.Writer = writerFunc(nil)
