package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/testdb"
)

// TestMain lets the test binary be the bench's proxy process, as the bench
// binary is when it starts itself.
func TestMain(m *testing.M) {
	if target := os.Getenv(proxyEnv); target != "" {
		if err := runProxy(target); err != nil {
			fmt.Fprintln(os.Stderr, "bench proxy:", err)
			os.Exit(1)
		}
		return
	}
	os.Exit(m.Run())
}

// TestBench_QuickModeProducesEveryRow runs the whole harness in -quick mode
// against the real binary and checks that every row and every figure behind
// it was produced (never how fast anything was).
func TestBench_QuickModeProducesEveryRow(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := filepath.Join(t.TempDir(), "toolgate")
	if out, err := exec.Command("go", "build", "-o", bin, "../api").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out := filepath.Join(t.TempDir(), "bench-results.json")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var stdout bytes.Buffer
	if err := run(ctx, []string{"-quick", "-toolgate", bin, "-database", testdb.URL(t), "-json", out}, os.Getenv, &stdout); err != nil {
		t.Fatalf("bench: %v\n%s", err, stdout.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var res results
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatalf("results are not JSON: %v\n%s", err, b)
	}
	wantRows := []string{"added time to first text delta, p50 / p99 @ 5 turns/s", "added time to first text delta, p50 / p99 @ 10 turns/s",
		"the same @ 20 turns/s, one user (2s)", "2s at 20 turns/s, one user: did turn starts queue?", "many users: 10 users × 1 turn/s each",
		"per-event delay p50 / p99 @ 10 streams", "per-event delay p50 / p99 @ 20 streams", "CPU per relayed event @ 10 streams",
		"approval decision → follow-up", "memory: RSS per open stream @ 20 streams", "20 servers × 10 tools: time before the upstream call",
		"Postgres commits per turn / per approval flow: that write and wait", "upstream connections: new / opened while one stood idle"}
	if len(res.Rows) != len(wantRows) {
		t.Fatalf("%d rows, want %d: %+v", len(res.Rows), len(wantRows), res.Rows)
	}
	for i, r := range res.Rows {
		if !strings.Contains(r.What, wantRows[i]) || r.Toolgate == "" || r.Proxy == "" || r.Direct == "" || r.Target == "" {
			t.Errorf("row %d = %+v, want %q with every cell filled", i, r, wantRows[i])
		}
		if r.Met != "✓" && r.Met != "✗" {
			t.Errorf("row %d = %+v: met is %q, want ✓ or ✗", i, r, r.Met)
		}
		if !strings.Contains(stdout.String(), r.What) {
			t.Errorf("the printed table lacks row %q:\n%s", r.What, stdout.String())
		}
	}
	positive := []string{"upstream_conns", "upstream_requests", "cpu_per_event_us@10", "rss_peak_mb@20",
		"event_delay_p99_ms@10", "event_delay_p99_ms@20", "approval_p50_ms", "approval_p99_ms", "ttfd_added_p99_ms@5",
		"ttfd_added_p99_ms@10", "ttfd_long_p99_ms", "headers_long_p99_ms", "ttfd_many_p99_ms", "headers_many_p99_ms",
		"peak_open@10", "peak_open@20"}
	for _, who := range []string{"toolgate", "proxy"} {
		for _, k := range positive {
			if v, ok := res.Values[who+"."+k]; !ok || !(v > 0) || math.IsInf(v, 0) {
				t.Errorf("%s.%s = %v (present %v), want a measured positive figure", who, k, v, ok)
			}
		}
	}
	for _, k := range []string{"toolgate.build_before_upstream_ms", "toolgate.unseeded_before_upstream_ms",
		"direct.event_delay_p99_ms@20", "direct.approval_p50_ms", "direct.ttfd_added_p99_ms@5"} {
		if v, ok := res.Values[k]; !ok || !(v > 0) {
			t.Errorf("%s = %v (present %v), want a measured positive figure", k, v, ok)
		}
	}
	// The commits are counted, less what Toolgate commits when idle at the
	// rate of one more quiet wait: 2 s in quick mode, where a sweeper's round
	// can make that rate larger than a phase's own (a figure below zero).
	for _, k := range []string{"toolgate.commits_per_turn", "toolgate.commits_per_flow", "toolgate.wal_commits_per_turn", "toolgate.wal_commits_per_flow"} {
		if v, ok := res.Values[k]; !ok || math.IsNaN(v) || math.IsInf(v, 0) || v == 0 {
			t.Errorf("%s = %v (present %v), want a counted figure", k, v, ok)
		}
	}
	for _, k := range []string{"toolgate.stacks_per_stream_kib@20", "toolgate.goroutines_per_stream@20"} {
		if v, ok := res.Values[k]; !ok || v == 0 {
			t.Errorf("%s = %v (present %v), want a figure read from /metrics", k, v, ok)
		}
	}
	for _, k := range []string{"toolgate.queued_long", "proxy.queued_long", "toolgate.held@20", "proxy.held@20"} {
		if v, ok := res.Values[k]; !ok || (v != 0 && v != 1) {
			t.Errorf("%s = %v (present %v), want 0 or 1", k, v, ok)
		}
	}
	for _, k := range []string{"toolgate.upstream_conns_needless", "proxy.upstream_conns_needless"} {
		if v, ok := res.Values[k]; !ok || v < 0 || v > res.Values["toolgate.upstream_conns"]+res.Values["proxy.upstream_conns"] {
			t.Errorf("%s = %v (present %v), want a count no larger than the connections", k, v, ok)
		}
	}
	if res.Values["toolgate.upstream_requests"] < res.Values["toolgate.upstream_conns"] {
		t.Errorf("more connections than requests at the mock: %v", res.Values)
	}
}

// TestQueued_SaysWhenTimeToHeadersGrowsOverTheRound checks the rule that
// says whether turn starts queued in the long round.
func TestQueued_SaysWhenTimeToHeadersGrowsOverTheRound(t *testing.T) {
	ms := time.Millisecond
	flat := []time.Duration{3 * ms, 4 * ms, 3 * ms, 5 * ms, 4 * ms, 3 * ms, 4 * ms, 3 * ms, 40 * ms, 4 * ms}
	if g, q := queued(flat); q {
		t.Errorf("steady times to headers (one outlier): queued (growth %v), want not", g)
	}
	growing := make([]time.Duration, 50)
	for i := range growing {
		growing[i] = 3*ms + time.Duration(i)*ms
	}
	if g, q := queued(growing); !q || g < 30*ms {
		t.Errorf("times to headers growing by 1 ms a turn: queued %v (growth %v), want queued with about 40 ms", q, g)
	}
	slowButSteady := []time.Duration{80 * ms, 82 * ms, 81 * ms, 79 * ms, 83 * ms}
	if _, q := queued(slowButSteady); q {
		t.Error("steady 80 ms to headers: queued, want not (slow is not queued)")
	}
}

// TestRows_MetFollowsTheTargets checks the ✓/✗ of rows from made-up figures.
func TestRows_MetFollowsTheTargets(t *testing.T) {
	o := options{rates: []int{5}, rate: 50, queueFor: 10 * time.Second, users: 100, userRate: 1, levels: []int{50, 500}, gap: 20 * time.Millisecond}
	v := map[string]float64{
		"toolgate.ttfd_added_p50_ms@5": 0.8, "toolgate.ttfd_added_p99_ms@5": 2.9, // met
		"toolgate.ttfd_long_p50_ms": 0.9, "toolgate.ttfd_long_p99_ms": 5.1, // p99 over 5
		"toolgate.queued_long":      1,
		"toolgate.ttfd_many_p50_ms": 0.5, "toolgate.ttfd_many_p99_ms": 4,
		"toolgate.event_delay_p50_ms@50": 0.35, "proxy.event_delay_p50_ms@50": 0.2, // +0.15 over the proxy
		"toolgate.event_delay_p99_ms@50": 0.5, "proxy.event_delay_p99_ms@50": 1, "toolgate.held@50": 1,
		"toolgate.event_delay_p99_ms@500": 1.9, "proxy.event_delay_p99_ms@500": 1, "toolgate.held@500": 1,
		"toolgate.cpu_per_event_us@50": 40, "proxy.cpu_per_event_us@50": 20,
		"toolgate.approval_p50_ms": 1.1, "toolgate.approval_p99_ms": 2,
		"toolgate.rss_per_stream_kib@500": 64,
		"toolgate.upstream_conns":         1, "toolgate.upstream_requests": 100,
	}
	want := map[string]string{"@ 5 turns/s": "✓", "the same @ 50": "✗", "did turn starts queue": "✗", "many users": "✓",
		"delay p50 / p99 @ 50 streams": "✗", "delay p50 / p99 @ 500 streams": "✓", "CPU per relayed": "✓", "approval decision": "✗", "memory": "✓", "upstream connections": "✓"}
	got := rows(o, v)
	for _, r := range got {
		for k, m := range want {
			if strings.Contains(r.What, k) && r.Met != m {
				t.Errorf("row %q: met %q, want %q (%+v)", r.What, r.Met, m, r)
			}
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d rows, want %d", len(got), len(want))
	}
	v["toolgate.upstream_conns_needless"] = 2 // of 100 requests: 2 opened a connection while one stood idle
	if r := rows(o, v)[len(got)-1]; r.Met != "✗" {
		t.Errorf("2 of 100 requests opened a connection while one stood idle: %+v, want ✗", r)
	}
	v["toolgate.held@500"] = 0
	if r := rows(o, v)[5]; r.Met != "✗" || !strings.Contains(r.Toolgate, "not held") {
		t.Errorf("500 streams not held: %+v, want ✗ and not held", r)
	}
}

// TestParseFigures reads the runtime's figures from the Prometheus text
// format, and says which one is missing.
func TestParseFigures(t *testing.T) {
	text := "# HELP go_goroutines Number of goroutines.\n# TYPE go_goroutines gauge\ngo_goroutines 1429\n" +
		"go_memstats_stack_inuse_bytes 1.5597568e+07\ngo_gc_duration_seconds{quantile=\"0\"} 1e-05\n"
	got, err := parseFigures(bufio.NewScanner(strings.NewReader(text)), []string{"go_goroutines", "go_memstats_stack_inuse_bytes"})
	if err != nil || got["go_goroutines"] != 1429 || got["go_memstats_stack_inuse_bytes"] != 15597568 {
		t.Errorf("parseFigures = %v, %v", got, err)
	}
	if _, err := parseFigures(bufio.NewScanner(strings.NewReader(text)), []string{"go_memstats_next_gc_bytes"}); err == nil {
		t.Error("a figure missing: no error")
	}
}
