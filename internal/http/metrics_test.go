package http_test

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/metrics"
)

const metricsToken = "metrics-token-0123456789abcdef"

// newMetricsAPI is the real API with metrics on, scraped with metricsToken.
func newMetricsAPI(t *testing.T) *apiEnv {
	t.Helper()
	return newAPIWith(t, envOptions{metrics: metrics.New(metrics.Build{Version: "v9.9.9-test", Commit: "abc123"}), metricsTok: metricsToken})
}

// scrape gets /metrics with the Authorization header auth ("": none) and
// Host host ("": the server's own).
func (e *apiEnv) scrape(auth, host string) (int, string) {
	e.t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, e.url+"/metrics", nil)
	if err != nil {
		e.t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if host != "" {
		req.Host = host
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return res.StatusCode, string(raw)
}

// metricsText scrapes with the token and fails unless that works.
func (e *apiEnv) metricsText() string {
	e.t.Helper()
	status, body := e.scrape("Bearer "+metricsToken, "")
	if status != 200 {
		e.t.Fatalf("scrape with METRICS_TOKEN: %d %s", status, body)
	}
	return body
}

var sampleLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$`)
var labelPair = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)

// sample sums the samples of metric name in the text format whose labels
// include want (each label equal), and says whether there was any.
func sample(t testing.TB, text, name string, want map[string]string) (float64, bool) {
	t.Helper()
	var sum float64
	found := false
	for line := range strings.SplitSeq(text, "\n") {
		m := sampleLine.FindStringSubmatch(line)
		if m == nil || m[1] != name {
			continue
		}
		got := map[string]string{}
		for _, p := range labelPair.FindAllStringSubmatch(m[2], -1) {
			got[p[1]] = p[2]
		}
		match := true
		for k, v := range want {
			if got[k] != v {
				match = false
			}
		}
		if !match {
			continue
		}
		v, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			t.Fatalf("sample %q: %v", line, err)
		}
		sum, found = sum+v, true
	}
	return sum, found
}

func wantSample(t testing.TB, text, name string, labels map[string]string, want float64) {
	t.Helper()
	got, ok := sample(t, text, name, labels)
	if !ok || got != want {
		t.Errorf("%s%v = %v (present %v), want %v", name, labels, got, ok, want)
	}
}

func TestMetrics_CountsATurnWithAnApproval(t *testing.T) {
	e := newMetricsAPI(t)
	e.askFor("delete_forecast")

	_, conv, ap := e.askToDeleteOslo()
	e.decide(conv, ap.ID, true, nil).ok(t)
	// A turn that ends with an upstream error (three attempts, all 503).
	e.up.setBehavior("status=503, retry-after=0")
	if te := one[turnError](t, e.send(conv, "and now?"), "error"); te.Code != "upstream_unavailable" {
		t.Fatalf("error %+v, want upstream_unavailable", te)
	}
	e.up.setBehavior("")

	text := e.metricsText()
	if !strings.Contains(text, "# TYPE toolgate_chat_turns_total counter") {
		t.Fatalf("not the Prometheus text format:\n%.2000s", text)
	}
	wantSample(t, text, "toolgate_chat_turns_total", map[string]string{"kind": "message", "outcome": "completed", "code": ""}, 1)
	wantSample(t, text, "toolgate_chat_turns_total", map[string]string{"kind": "decisions", "outcome": "completed", "code": ""}, 1)
	wantSample(t, text, "toolgate_chat_turns_total", map[string]string{"kind": "message", "outcome": "error", "code": "upstream_unavailable"}, 1)
	wantSample(t, text, "toolgate_chat_turns_total", nil, 3)
	wantSample(t, text, "toolgate_upstream_errors_total", map[string]string{"code": "upstream_unavailable"}, 1)
	wantSample(t, text, "toolgate_approvals_requested_total", nil, 1)
	wantSample(t, text, "toolgate_approval_decisions_total", map[string]string{"state": "approved"}, 1)
	wantSample(t, text, "toolgate_approval_decision_seconds_count", nil, 1)
	wantSample(t, text, "toolgate_sse_streams_active", nil, 0)
	wantSample(t, text, "toolgate_sse_events_total", map[string]string{"event": "conversation"}, 3)
	wantSample(t, text, "toolgate_sse_events_total", map[string]string{"event": "approval.required"}, 1)
	wantSample(t, text, "toolgate_sse_events_total", map[string]string{"event": "decision.recorded"}, 1)
	wantSample(t, text, "toolgate_sse_events_total", map[string]string{"event": "completed"}, 2)
	wantSample(t, text, "toolgate_sse_events_total", map[string]string{"event": "error"}, 1)
	wantSample(t, text, "toolgate_http_requests_total", map[string]string{"method": "POST", "route": "/api/responses", "status_class": "2xx"}, 2)
	wantSample(t, text, "toolgate_http_requests_total", map[string]string{"method": "POST", "route": "/api/responses/approval-response", "status_class": "2xx"}, 1)
	// askFor: one server created, one policy set, by route template.
	wantSample(t, text, "toolgate_http_requests_total", map[string]string{"method": "PUT", "route": "/api/mcp/servers/:serverId/tools/:toolName/approval-policy", "status_class": "2xx"}, 1)
	wantSample(t, text, "toolgate_http_request_duration_seconds_count", map[string]string{"method": "POST", "route": "/api/responses"}, 2)
	wantSample(t, text, "toolgate_build_info", map[string]string{"version": "v9.9.9-test", "commit": "abc123"}, 1)
	if _, ok := sample(t, text, "go_goroutines", nil); !ok {
		t.Error("no go_goroutines: the Go runtime collector is missing")
	}

	// The scrape itself is counted by the next one.
	wantSample(t, e.metricsText(), "toolgate_http_requests_total", map[string]string{"method": "GET", "route": "/metrics", "status_class": "2xx"}, 1)
}

func TestMetrics_StreamGaugeCountsOpenStreams(t *testing.T) {
	e := newMetricsAPI(t)
	e.up.setBehavior("first-event-delay=400ms")
	res := e.open(context.Background(), "/api/responses", map[string]any{"input": "hello"})
	defer res.Body.Close()
	parseSSE(t, res.Body, func(ev sseEvent) bool { return ev.Name == "conversation" })
	wantSample(t, e.metricsText(), "toolgate_sse_streams_active", nil, 1)
	rest, _ := parseSSE(t, res.Body, nil)
	if len(rest) == 0 || rest[len(rest)-1].Name != "completed" {
		t.Fatalf("stream ended with %v", rest)
	}
	wantSample(t, e.metricsText(), "toolgate_sse_streams_active", nil, 0)
}

func TestMetrics_OnlyTheMetricsTokenMayScrape(t *testing.T) {
	e := newMetricsAPI(t)
	for name, auth := range map[string]string{
		"no credentials":          "",
		"a wrong token":           "Bearer metrics-token-0123456789abcdeX",
		"a personal API token":    "Bearer " + e.token,
		"the token as Basic auth": "Basic " + metricsToken,
		"the token alone":         metricsToken,
		"a token prefix":          "Bearer " + metricsToken[:len(metricsToken)-1],
	} {
		status, body := e.scrape(auth, "")
		if status != 401 || !strings.Contains(body, `"metrics_unauthenticated"`) {
			t.Errorf("%s: %d %s, want 401 metrics_unauthenticated", name, status, body)
		}
		if strings.Contains(body, "toolgate_build_info") {
			t.Errorf("%s: metrics leaked: %s", name, body)
		}
	}
	// Prometheus scrapes pod IPs: /metrics skips the Host check (the token
	// guards it), but still refuses anyone without the token there.
	if status, body := e.scrape("Bearer "+metricsToken, "10.1.2.3:8080"); status != 200 || !strings.Contains(body, "toolgate_build_info") {
		t.Errorf("scrape by IP: %d %.300s", status, body)
	}
	if status, body := e.scrape("", "10.1.2.3:8080"); status != 401 {
		t.Errorf("tokenless scrape by IP: %d %.300s", status, body)
	}
	// A page on another site is refused before the token is looked at.
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, e.url+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+metricsToken)
	req.Header.Set("Origin", "https://attacker.example")
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != 403 {
		t.Errorf("cross-origin scrape: %v %v, want 403", res, err)
	} else {
		res.Body.Close()
	}
}

func TestMetrics_OffWithoutAToken(t *testing.T) {
	for name, opts := range map[string]envOptions{
		"no METRICS_TOKEN": {metrics: metrics.New(metrics.Build{Version: "v", Commit: "c"})},
		"no metrics":       {metricsTok: metricsToken},
	} {
		t.Run(name, func(t *testing.T) {
			e := newAPIWith(t, opts)
			for _, auth := range []string{"", "Bearer " + metricsToken, "Bearer " + e.token} {
				status, body := e.scrape(auth, "")
				if status != 404 || !strings.Contains(body, `"metrics_disabled"`) || !strings.Contains(body, "METRICS_TOKEN") {
					t.Errorf("auth %q: %d %.300s, want 404 metrics_disabled", auth, status, body)
				}
			}
			// The rest of the API works, uncounted or counted alike.
			e.must(200, "GET", "/api/info", nil, nil)
		})
	}
}
