// Command bench measures Toolgate beside a plain Go reverse proxy and a
// direct connection, in the same run, against a mock Responses upstream
// with a fixed time to first event and gap between text deltas (issue 15).
// `make bench` runs it (scripts/bench.sh); it prints a table and writes the
// same figures as JSON. Everything listens on loopback only.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

func main() {
	if target := os.Getenv(proxyEnv); target != "" {
		if err := runProxy(target); err != nil {
			fmt.Fprintln(os.Stderr, "bench proxy:", err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// options are the bench's flags.
type options struct {
	bin                    string
	dbURL                  string
	out                    string
	runs                   int
	ttfe, gap              time.Duration
	rates                  []int         // turns/s of the shorter first-delta rounds
	ttfdFor                time.Duration // how long each of those lasts
	rate                   int           // turns/s of one user in the long round
	queueFor               time.Duration // how long the long round lasts
	users                  int           // users of the many-users round
	userRate               float64       // turns/s of each of them
	levels                 []int
	ramp, hold             time.Duration
	approvals              int
	seedServers, seedTools int
	statsWait              time.Duration // Postgres's idle backends report their counters within this
	statsTurns, statsFlows int
}

func parseOptions(args []string, getenv func(string) string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	var levels, rates string
	quick := fs.Bool("quick", false, "a few seconds in all: 1 run, short phases, 10 and 20 streams (proves the harness works; the figures mean little)")
	fs.StringVar(&o.bin, "toolgate", "bin/toolgate", "the Toolgate binary to measure")
	fs.StringVar(&o.dbURL, "database", getenv("TEST_DATABASE_URL"), "a Postgres URL (default $TEST_DATABASE_URL); a fresh database is created beside it")
	fs.StringVar(&o.out, "json", "bench-results.json", "where to write the results as JSON (empty: nowhere)")
	fs.IntVar(&o.runs, "runs", 3, "runs; each figure is the median of the runs")
	fs.DurationVar(&o.ttfe, "ttfe", 100*time.Millisecond, "the mock's time to first event")
	fs.DurationVar(&o.gap, "gap", 20*time.Millisecond, "the mock's gap between text deltas")
	fs.StringVar(&rates, "rates", "5,20", "turns per second of one user in the shorter time-to-first-delta rounds")
	fs.DurationVar(&o.ttfdFor, "ttfd-for", 3*time.Second, "how long turns arrive at each of -rates (and in the many-users round), per variant and run")
	fs.IntVar(&o.rate, "rate", 50, "turns per second of one user in the long round (time to first delta, and whether turn starts queue)")
	fs.DurationVar(&o.queueFor, "queue-for", 10*time.Second, "how long the long round at -rate lasts, per variant and run")
	fs.IntVar(&o.users, "users", 100, "users of the many-users round, each signed in with a session of their own (0: skip the round)")
	fs.Float64Var(&o.userRate, "user-rate", 1, "turns per second of each user in the many-users round")
	fs.StringVar(&levels, "streams", "50,200,500", "concurrent stream levels for the per-event delay (the first also gives CPU per event; every level the memory)")
	fs.DurationVar(&o.ramp, "ramp", time.Second, "streams of a level start evenly over this time")
	fs.DurationVar(&o.hold, "hold", time.Second, "streams stay open this long after the ramp")
	fs.IntVar(&o.approvals, "approvals", 20, "approval round trips per variant and run (10 a second)")
	fs.IntVar(&o.seedServers, "servers", 128, "MCP servers in the build-time row, the demo server counted (the provider accepts 128 per request; 0: skip the row)")
	fs.IntVar(&o.seedTools, "tools", 1000, "tools per seeded server")
	fs.DurationVar(&o.statsWait, "stats-wait", 11*time.Second, "the wait before reading Postgres's commit counter (an idle backend reports within 10 s; 0: skip the statements row)")
	fs.IntVar(&o.statsTurns, "stats-turns", 30, "turns counted for the commits per turn")
	fs.IntVar(&o.statsFlows, "stats-flows", 10, "approval flows counted for the commits per decision")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	var err error
	if *quick {
		o.runs, o.ttfdFor, o.ramp, o.hold, o.approvals = 1, time.Second, 500*time.Millisecond, 500*time.Millisecond, 3
		levels, rates, o.seedServers, o.seedTools = "10,20", "5,10", 20, 10
		o.rate, o.queueFor, o.users = 20, 2*time.Second, 10
		// The commit counter needs its full quiet (idle backends report
		// within 10 s): shorter, a late report from an earlier phase lands
		// in the idle rate and a per-turn figure can come out below zero.
		o.statsTurns, o.statsFlows = 10, 3
	}
	if o.levels, err = parseList("-streams", levels, 1000); err != nil {
		return o, err
	}
	if o.rates, err = parseList("-rates", rates, 500); err != nil {
		return o, err
	}
	switch {
	case o.dbURL == "":
		return o, fmt.Errorf("no Postgres: set TEST_DATABASE_URL or -database (e.g. postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable)")
	case o.runs < 1 || o.runs > 9:
		return o, fmt.Errorf("-runs: from 1 to 9")
	case o.rate < 1 || o.rate > 500:
		return o, fmt.Errorf("-rate: from 1 to 500 turns a second")
	case o.users < 0 || o.users > 1000 || o.userRate <= 0:
		return o, fmt.Errorf("-users: from 0 to 1000, and -user-rate positive")
	case o.queueFor < time.Second:
		return o, fmt.Errorf("-queue-for: at least 1s")
	case o.gap <= 0 || o.ttfe < 0:
		return o, fmt.Errorf("-gap must be positive and -ttfe not negative")
	}
	return o, nil
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	o, err := parseOptions(args, getenv, stdout)
	if err != nil {
		return err
	}
	if _, err := os.Stat(o.bin); err != nil {
		return fmt.Errorf("no Toolgate binary at %s (./scripts/build.sh builds it): %w", o.bin, err)
	}
	// Toolgate runs in a directory of its own: a relative path would be
	// looked up there.
	if o.bin, err = filepath.Abs(o.bin); err != nil {
		return fmt.Errorf("toolgate binary: %w", err)
	}
	log := newProgress(stdout)
	m := newMock(o.ttfe, o.gap)
	lDirect, err := m.listen()
	if err != nil {
		return err
	}
	lProxy, err := m.listen()
	if err != nil {
		return err
	}
	lTool, err := m.listen()
	if err != nil {
		return err
	}
	proxy, err := startProxy(ctx, lProxy.URL)
	if err != nil {
		return err
	}
	defer proxy.stop()
	tg, tgc, err := startToolgate(ctx, o.bin, o.dbURL, lTool.URL, o.seedServers)
	if err != nil {
		return err
	}
	defer dropDatabase(o.dbURL, tg.dbName)
	defer tg.stop()
	vs := []*variant{
		{name: "toolgate", base: tg.base, tg: tgc, pid: tg.pid(), mockL: lTool, metrics: func(ctx context.Context) (map[string]float64, error) {
			return runtimeFigures(ctx, tgc.HTTP, tg.base, tg.metrics)
		}},
		{name: "proxy", base: proxy.base, pid: proxy.pid(), client: newClient(), mockL: lProxy},
		{name: "direct", base: lDirect.URL, client: newClient(), mockL: lDirect},
	}
	fmt.Fprintf(log, "bench: %d run(s), mock %s to first event, 1 delta / %s; Toolgate pid %d, proxy pid %d\n",
		o.runs, o.ttfe, o.gap, tg.pid(), proxy.pid())
	if o.users > 0 {
		fmt.Fprintf(log, "signing %d users in…\n", o.users)
	}
	users, err := signInUsers(ctx, tgc, o.users)
	if err != nil {
		return err
	}
	// Warm up: connections, caches, the demo server's tools.
	for _, v := range vs {
		if r := v.stream(ctx, time.Now(), 3); r.err != nil {
			return fmt.Errorf("warm-up: %w; toolgate logs:\n%s", r.err, tg.logs)
		}
	}
	var runs []runResult
	for i := range o.runs {
		fmt.Fprintf(log, "run %d of %d…\n", i+1, o.runs)
		r, err := measureRun(ctx, o, m, vs, users, log)
		if err != nil {
			return fmt.Errorf("run %d: %w; toolgate logs:\n%.4000s", i+1, err, tg.logs)
		}
		runs = append(runs, r)
	}
	res := results{
		Date:    time.Now().UTC().Format(time.RFC3339),
		Machine: fmt.Sprintf("%d cores, %s/%s, %s", runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version()),
		Options: map[string]any{"runs": o.runs, "ttfe_ms": ms(o.ttfe), "gap_ms": ms(o.gap), "rates": o.rates, "rate": o.rate,
			"ttfd_for_s": o.ttfdFor.Seconds(), "queue_for_s": o.queueFor.Seconds(), "users": o.users, "user_rate": o.userRate,
			"streams": o.levels, "ramp_s": o.ramp.Seconds(), "hold_s": o.hold.Seconds(), "approvals": o.approvals,
			"servers": o.seedServers, "tools": o.seedTools, "stats_wait_s": o.statsWait.Seconds()},
		Values: median(runs),
	}
	res.Values["toolgate.upstream_conns"] = float64(lTool.conns.Load())
	res.Values["toolgate.upstream_requests"] = float64(lTool.requests.Load())
	res.Values["proxy.upstream_conns"] = float64(lProxy.conns.Load())
	res.Values["toolgate.upstream_conns_needless"] = float64(lTool.needless.Load())
	res.Values["proxy.upstream_conns_needless"] = float64(lProxy.needless.Load())
	res.Values["proxy.upstream_requests"] = float64(lProxy.requests.Load())
	if o.statsWait > 0 {
		fmt.Fprintf(log, "Postgres commits per turn and per decision (%s of quiet around each phase)…\n", o.statsWait)
		if err := measureStatements(ctx, o, &res, tg, vs[0], m); err != nil {
			return fmt.Errorf("statements: %w", err)
		}
	}
	if o.seedServers > 0 {
		fmt.Fprintf(log, "%d servers × %d tools…\n", o.seedServers, o.seedTools)
		if err := measureBuild(ctx, o, &res, tg, vs[0]); err != nil {
			return fmt.Errorf("build time: %w", err)
		}
	}
	res.Rows = rows(o, res.Values)
	printTable(stdout, res)
	if o.out != "" {
		b, _ := json.MarshalIndent(res, "", "  ")
		if err := os.WriteFile(o.out, append(b, '\n'), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", o.out, err)
		}
		fmt.Fprintf(stdout, "wrote %s\n", o.out)
	}
	return nil
}

// parseList reads whole numbers from 1 to most separated by commas.
func parseList(flag, list string, most int) ([]int, error) {
	var out []int
	for _, s := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || n > most {
			return nil, fmt.Errorf("%s: want numbers from 1 to %d separated by commas, got %q", flag, most, list)
		}
		out = append(out, n)
	}
	return out, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
