package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/toolgate/toolgate/internal/postgres"
)

// measureBuild times turns one after another from the request to the
// moment the upstream call reaches the mock, with Toolgate's CPU per turn:
// first as Toolgate is (the demo server), then with servers of o.seedTools
// tools each inserted into its database (rows inserted directly: the
// servers need not run) until it has o.seedServers.
func measureBuild(ctx context.Context, o options, res *results, tg *child, v *variant) error {
	before, cpu, err := timeTurns(ctx, tg, v)
	if err != nil {
		return err
	}
	res.Values["toolgate.unseeded_before_upstream_ms"] = ms(before)
	res.Values["toolgate.unseeded_cpu_per_turn_ms"] = ms(cpu)
	have, err := queryFloat(ctx, tg.dbURL, "SELECT count(*)::float8 FROM mcp_servers")
	if err != nil {
		return err
	}
	sql := fmt.Sprintf(`
INSERT INTO mcp_servers (label, url, tools_refreshed_at)
  SELECT 'bench' || s, 'http://127.0.0.1:9/mcp', now() FROM generate_series(1, %[1]d) s;
INSERT INTO mcp_tools (server_label, name, description, input_schema, annotations, digest, first_seen_at, definition_changed_at)
  SELECT 'bench' || s, 'tool_' || t, 'a seeded tool', '{"type":"object","properties":{"q":{"type":"string"}}}',
         '{"readOnlyHint":true}', md5(s || '.' || t), now(), now()
  FROM generate_series(1, %[1]d) s, generate_series(1, %[2]d) t;`, max(0, o.seedServers-int(have)), o.seedTools)
	if err := execSQL(ctx, tg.dbURL, sql); err != nil {
		return fmt.Errorf("seed %d × %d tools: %w", o.seedServers, o.seedTools, err)
	}
	// One turn first: caches, and the tools of the seeded servers.
	if s := v.stream(ctx, time.Now(), 1); s.err != nil {
		return s.err
	}
	if before, cpu, err = timeTurns(ctx, tg, v); err != nil {
		return err
	}
	res.Values["toolgate.build_before_upstream_ms"] = ms(before)
	res.Values["toolgate.build_cpu_per_turn_ms"] = ms(cpu)
	return nil
}

// timeTurns runs 10 turns one after another: the median time from posting
// the message to the request reaching the mock, and Toolgate's CPU per turn.
func timeTurns(ctx context.Context, tg *child, v *variant) (before, cpu time.Duration, err error) {
	const turns = 10
	var befores []time.Duration
	cpu0, _ := cpuTime(tg.pid())
	for range turns {
		s := v.stream(ctx, time.Now(), 1)
		if s.err != nil {
			return 0, 0, s.err
		}
		befores = append(befores, s.toUpstream)
	}
	cpu1, _ := cpuTime(tg.pid())
	return pct(befores, 50), (cpu1 - cpu0) / turns, nil
}

// measureStatements counts the transactions Toolgate commits per turn and
// per approval flow, two ways. Commits that write: the commit records
// Postgres wrote to its WAL between two readings (pg_walinspect's
// pg_get_wal_stats, "Transaction/COMMIT"; the WAL is the cluster's, so
// nothing else should write meanwhile). A transaction that writes nothing
// writes no commit record and waits for no disk. Every transaction:
// Postgres's counter for the bench's database (pg_stat_database.xact_commit,
// reads outside a transaction included), read after o.statsWait of quiet
// before and after each phase (a backend reports its counts when it goes
// idle, at most once a second; an idle one within 10 s). pg_stat_statements
// would count statements, but it must be preloaded, which needs a restart
// of the server. What Toolgate commits when idle (leases, sweepers: about 2
// a second) is measured over one more wait and taken off each phase at its
// rate. A flow is a turn that asks for approval, the decision and its
// follow-up: the asking turn is taken off at the rate per turn. Of the
// commits that write, those of the text deltas' group writes (asynchronous:
// nothing waits for their disk flush) are counted apart, from Toolgate's
// toolgate_event_writes_seconds_count. Without
// pg_walinspect (it ships with Postgres; CREATE EXTENSION needs a
// superuser) only the counter is read.
func measureStatements(ctx context.Context, o options, res *results, tg *child, v *variant, m *mock) error {
	type reading struct {
		n      float64 // xact_commit
		lsn    string  // the WAL flushed so far ("" without pg_walinspect)
		deltas float64 // the text deltas' group writes Toolgate made so far
		at     time.Time
	}
	wal := execSQL(ctx, tg.baseURL, "CREATE EXTENSION IF NOT EXISTS pg_walinspect") == nil
	if wal {
		release, err := keepWAL(ctx, tg.baseURL)
		if err != nil {
			return fmt.Errorf("statements: %w", err)
		}
		defer release()
	}
	commits := func() (reading, error) {
		time.Sleep(o.statsWait)
		n, err := queryFloat(ctx, tg.baseURL, "SELECT xact_commit::float8 FROM pg_stat_database WHERE datname = '"+tg.dbName+"'")
		r := reading{n: n, at: time.Now()}
		if err == nil && wal {
			r.lsn, err = queryText(ctx, tg.baseURL, "SELECT pg_current_wal_flush_lsn()::text")
		}
		if err == nil && wal {
			var f map[string]float64
			f, err = metricFigures(ctx, v.tg.HTTP, tg.base, tg.metrics, []string{"toolgate_event_writes_seconds_count"})
			r.deltas = f["toolgate_event_writes_seconds_count"]
		}
		return r, err
	}
	// written is the commit records in the WAL from a to b.
	written := func(a, b reading) (float64, error) {
		if a.lsn == "" || a.lsn == b.lsn {
			return 0, nil
		}
		return queryFloat(ctx, tg.baseURL, "SELECT coalesce(sum(count), 0)::float8 FROM pg_get_wal_stats('"+a.lsn+"', '"+b.lsn+
			"', true) WHERE \"resource_manager/record_type\" = 'Transaction/COMMIT'")
	}
	c0, err := commits()
	if err != nil {
		return err
	}
	idle, err := commits()
	if err != nil {
		return err
	}
	perSecond := (idle.n - c0.n) / idle.at.Sub(c0.at).Seconds()
	since := func(a, b reading) float64 { return b.n - a.n - perSecond*b.at.Sub(a.at).Seconds() }
	if _, err := turnRound(ctx, v, o.statsTurns, 100*time.Millisecond, nil); err != nil {
		return fmt.Errorf("statements: %w", err)
	}
	c1, err := commits()
	if err != nil {
		return err
	}
	var firstErr error
	openLoop(o.statsFlows, 200*time.Millisecond, func(int, time.Time) {
		if _, err := v.approval(ctx, m); err != nil && firstErr == nil {
			firstErr = err
		}
	})
	if firstErr != nil {
		return fmt.Errorf("statements: %w", firstErr)
	}
	c2, err := commits()
	if err != nil {
		return err
	}
	if wal {
		var w [3]float64
		for i, p := range [][2]reading{{c0, idle}, {idle, c1}, {c1, c2}} {
			if w[i], err = written(p[0], p[1]); err != nil {
				return fmt.Errorf("statements: %w", err)
			}
		}
		res.Values["toolgate.delta_writes_per_turn"] = (c1.deltas - idle.deltas) / float64(o.statsTurns)
		res.Values["toolgate.delta_writes_per_flow"] = (c2.deltas-c1.deltas)/float64(o.statsFlows) - res.Values["toolgate.delta_writes_per_turn"]
		walPerSecond := w[0] / idle.at.Sub(c0.at).Seconds()
		turn := (w[1] - walPerSecond*c1.at.Sub(idle.at).Seconds()) / float64(o.statsTurns)
		res.Values["toolgate.wal_commits_idle_per_s"] = walPerSecond
		res.Values["toolgate.wal_commits_per_turn"] = turn
		res.Values["toolgate.wal_commits_per_flow"] = (w[2]-walPerSecond*c2.at.Sub(c1.at).Seconds())/float64(o.statsFlows) - turn
	}
	perTurn := since(idle, c1) / float64(o.statsTurns)
	res.Values["toolgate.commits_idle_per_s"] = perSecond
	res.Values["toolgate.commits_per_turn"] = perTurn
	res.Values["toolgate.commits_per_flow"] = since(c1, c2)/float64(o.statsFlows) - perTurn
	return nil
}

// keepWAL keeps the WAL pg_walinspect will read from being recycled (a
// busy server checkpoints in between) until release: a temporary
// replication slot on a connection of the bench's own, so a bench that dies
// holds back nothing.
func keepWAL(ctx context.Context, dbURL string) (release func(), err error) {
	pool, err := postgres.Open(ctx, dbURL, false, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, err
	}
	slot, err := pool.Acquire(ctx)
	if err != nil {
		pool.Close()
		return nil, err
	}
	if _, err := slot.Exec(ctx, "SELECT pg_create_physical_replication_slot('toolgate_bench_'||pg_backend_pid(), true, true)"); err != nil {
		slot.Release()
		pool.Close()
		return nil, fmt.Errorf("keep the WAL for pg_walinspect: %w", err)
	}
	return func() { slot.Release(); pool.Close() }, nil
}

// queryText reads one text value from the database at dbURL.
func queryText(ctx context.Context, dbURL, sql string) (string, error) {
	pool, err := postgres.Open(ctx, dbURL, false, slog.New(slog.DiscardHandler))
	if err != nil {
		return "", err
	}
	defer pool.Close()
	var v string
	if err := pool.QueryRow(ctx, sql).Scan(&v); err != nil {
		return "", fmt.Errorf("%s: %w", sql, err)
	}
	return v, nil
}

// queryFloat reads one number from the database at dbURL.
func queryFloat(ctx context.Context, dbURL, sql string) (float64, error) {
	pool, err := postgres.Open(ctx, dbURL, false, slog.New(slog.DiscardHandler))
	if err != nil {
		return 0, err
	}
	defer pool.Close()
	var v float64
	if err := pool.QueryRow(ctx, sql).Scan(&v); err != nil {
		return 0, fmt.Errorf("%s: %w", sql, err)
	}
	return v, nil
}
