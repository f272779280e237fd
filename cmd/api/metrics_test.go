package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/testdb"
)

// metricValue is the value of the one sample line that starts with
// series (a name with its labels as written, e.g. `x{a="b"}`); -1 if none.
func metricValue(t *testing.T, text, series string) float64 {
	t.Helper()
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`)
	m := re.FindStringSubmatch(text)
	if m == nil {
		return -1
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestNewMetrics_ReadsThePool: the pool collector reports pgxpool's numbers
// as they are at the scrape.
func TestNewMetrics_ReadsThePool(t *testing.T) {
	pool := testdb.New(t)
	m := newMetrics(buildInfo{Version: "v1.2.3", Commit: "0123abcd"}, pool)
	conn, err := pool.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	scrape := func() string {
		rec := httptest.NewRecorder()
		m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		if rec.Code != 200 {
			t.Fatalf("scrape: %d %s", rec.Code, rec.Body)
		}
		return rec.Body.String()
	}
	text := scrape()
	st := pool.Stat()
	for series, want := range map[string]float64{
		"toolgate_db_pool_acquired_conns":                         1,
		"toolgate_db_pool_max_conns":                              float64(st.MaxConns()),
		"toolgate_db_pool_total_conns":                            float64(st.TotalConns()),
		"toolgate_db_pool_idle_conns":                             float64(st.IdleConns()),
		"toolgate_db_pool_acquires_total":                         float64(st.AcquireCount()),
		"toolgate_db_pool_empty_acquires_total":                   float64(st.EmptyAcquireCount()),
		"toolgate_db_pool_canceled_acquires_total":                0,
		`toolgate_build_info{commit="0123abcd",version="v1.2.3"}`: 1,
	} {
		if got := metricValue(t, text, series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
	if got := metricValue(t, text, "toolgate_db_pool_acquire_seconds_total"); got <= 0 {
		t.Errorf("toolgate_db_pool_acquire_seconds_total = %v, want > 0", got)
	}
	if got := metricValue(t, text, "toolgate_db_pool_acquire_wait_seconds_total"); got < 0 {
		t.Errorf("toolgate_db_pool_acquire_wait_seconds_total missing")
	}
	conn.Release()
	if got := metricValue(t, scrape(), "toolgate_db_pool_acquired_conns"); got != 0 {
		t.Errorf("after release: acquired %v, want 0", got)
	}
}

// TestRun_MetricsNeedTheToken: the binary serves /metrics on its API port
// to METRICS_TOKEN only, with the pool and the build in it.
func TestRun_MetricsNeedTheToken(t *testing.T) {
	tok := "0123456789abcdef0123456789abcdef"
	base, _, _ := start(t, map[string]string{"DATABASE_URL": testdb.URL(t), "METRICS_TOKEN": tok, "OFFLINE_DEMO": "false"})
	get := func(auth string) (int, string) {
		req, _ := http.NewRequest("GET", base+"/metrics", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, body := get(""); code != 401 || !strings.Contains(body, "metrics_unauthenticated") {
		t.Errorf("no token: %d %s", code, body)
	}
	// A turn: the metrics, the chat service's observer, hear how long the
	// upstream took to its first event.
	if _, events := sse(t, base+"/api/responses", `{"input":"hello"}`); len(events) == 0 || events[len(events)-1].name != "completed" {
		t.Fatalf("a turn: %v", events)
	}
	code, body := get("Bearer " + tok)
	if code != 200 {
		t.Fatalf("with METRICS_TOKEN: %d %s", code, body)
	}
	if !strings.Contains(body, "\ntoolgate_upstream_first_event_seconds_count 1\n") {
		t.Errorf("after one turn the scrape does not count one upstream first event:\n%s", body)
	}
	for _, name := range []string{"toolgate_build_info{", "toolgate_db_pool_total_conns ", "toolgate_http_requests_total{",
		`toolgate_stream_reads_total{source="memory"} `, `toolgate_stream_reads_total{source="store"} `,
		"toolgate_event_writes_seconds_count ", "toolgate_event_write_conversations_count "} {
		if !strings.Contains(body, "\n"+name) {
			t.Errorf("scrape lacks %s", name)
		}
	}
}
