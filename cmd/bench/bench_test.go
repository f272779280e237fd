package main

import (
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
	wantRows := []string{"added time to first text delta", "per-event delay p99", "CPU per relayed event",
		"approval decision → follow-up", "servers × 10 tools: time before the upstream call", "memory at 20 open streams",
		"new upstream connections"}
	if len(res.Rows) != len(wantRows) {
		t.Fatalf("%d rows, want %d: %+v", len(res.Rows), len(wantRows), res.Rows)
	}
	for i, r := range res.Rows {
		if !strings.Contains(r.What, wantRows[i]) || r.Toolgate == "" || r.Proxy == "" || r.Direct == "" || r.Target == "" {
			t.Errorf("row %d = %+v, want %q with every cell filled", i, r, wantRows[i])
		}
		if !strings.Contains(stdout.String(), r.What) {
			t.Errorf("the printed table lacks row %q:\n%s", r.What, stdout.String())
		}
	}
	positive := []string{"upstream_conns", "upstream_requests", "cpu_per_event_us@10", "rss_peak_mb@20",
		"event_delay_p99_ms@10", "event_delay_p99_ms@20", "approval_p50_ms", "approval_p99_ms", "ttfd_added_p99_ms"}
	for _, who := range []string{"toolgate", "proxy"} {
		for _, k := range positive {
			if v, ok := res.Values[who+"."+k]; !ok || !(v > 0) || math.IsInf(v, 0) {
				t.Errorf("%s.%s = %v (present %v), want a measured positive figure", who, k, v, ok)
			}
		}
	}
	for _, k := range []string{"toolgate.build_before_upstream_ms", "direct.event_delay_p99_ms@20", "direct.approval_p50_ms"} {
		if v, ok := res.Values[k]; !ok || !(v > 0) {
			t.Errorf("%s = %v (present %v), want a measured positive figure", k, v, ok)
		}
	}
	if res.Values["toolgate.upstream_requests"] < res.Values["toolgate.upstream_conns"] {
		t.Errorf("more connections than requests at the mock: %v", res.Values)
	}
}
