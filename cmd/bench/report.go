package main

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// results is what a bench run writes as JSON: the table's rows as text and
// every figure behind them (medians over the runs) under values.
type results struct {
	Date    string             `json:"date"`
	Machine string             `json:"machine"`
	Options map[string]any     `json:"options"`
	Rows    []row              `json:"rows"`
	Values  map[string]float64 `json:"values"`
}

// row is one line of the table; Met is "✓" when Toolgate's figure
// meets the target, "✗" when not, "" when the row has no target.
type row struct {
	What     string `json:"what"`
	Direct   string `json:"direct"`
	Proxy    string `json:"proxy"`
	Toolgate string `json:"toolgate"`
	Target   string `json:"target"`
	Met      string `json:"met"`
}

func met(ok bool) string {
	if ok {
		return "✓"
	}
	return "✗"
}

// table reads the figures behind the rows.
type table struct {
	o options
	v map[string]float64
}

func (t table) f(who, key string) float64 { return t.v[who+"."+key] }

func (t table) pair(who, a, b string) string {
	if _, ok := t.v[who+"."+a]; !ok {
		return "—"
	}
	return fmt.Sprintf("%.2f / %.2f ms", t.f(who, a), t.f(who, b))
}

// firstDelta is a row of added time to first delta: p50 ≤ 1 ms and p99 ≤
// p99ms.
func (t table) firstDelta(what, p50, p99 string, p99ms float64) row {
	return row{What: what, Direct: t.pair("direct", p50, p99), Proxy: t.pair("proxy", p50, p99),
		Toolgate: t.pair("toolgate", p50, p99), Target: fmt.Sprintf("≤ 1 / ≤ %.0f ms", p99ms),
		Met: met(t.f("toolgate", p50) <= 1 && t.f("toolgate", p99) <= p99ms)}
}

func rows(o options, v map[string]float64) []row {
	t := table{o, v}
	var out []row
	for _, rate := range o.rates {
		out = append(out, t.firstDelta(fmt.Sprintf("added time to first text delta, p50 / p99 @ %d turns/s, one user", rate),
			fmt.Sprintf("ttfd_added_p50_ms@%d", rate), fmt.Sprintf("ttfd_added_p99_ms@%d", rate), 3))
	}
	out = append(out, t.firstDelta(fmt.Sprintf("the same @ %d turns/s, one user (%s)", o.rate, o.queueFor), "ttfd_long_p50_ms", "ttfd_long_p99_ms", 5),
		t.queueRow())
	if o.users > 0 {
		r := t.firstDelta(fmt.Sprintf("many users: %d users × %g turn/s each, p50 / p99", o.users, o.userRate), "ttfd_many_p50_ms", "ttfd_many_p99_ms", 5)
		r.Target += " (as one user)"
		out = append(out, r)
	}
	for i, n := range o.levels {
		out = append(out, t.levelRow(i, n))
	}
	out = append(out, t.cpuRow(), t.firstDelta("approval decision → follow-up at upstream, p50 / p99", "approval_p50_ms", "approval_p99_ms", 3), t.memoryRow())
	if _, ok := v["toolgate.build_before_upstream_ms"]; ok {
		out = append(out, row{What: fmt.Sprintf("%d servers × %d tools: time before the upstream call", o.seedServers, o.seedTools),
			Direct: "—", Proxy: "—",
			Toolgate: fmt.Sprintf("%.1f ms (%.1f ms CPU per turn); demo server alone: %.1f ms (%.1f ms CPU)",
				v["toolgate.build_before_upstream_ms"], v["toolgate.build_cpu_per_turn_ms"],
				v["toolgate.unseeded_before_upstream_ms"], v["toolgate.unseeded_cpu_per_turn_ms"]),
			Target: "≤ 5 ms", Met: met(v["toolgate.build_before_upstream_ms"] <= 5)})
	}
	if _, ok := v["toolgate.commits_per_turn"]; ok {
		r := row{What: "Postgres commits per turn / per approval flow: that write and wait for the disk (WAL commit records less the deltas' asynchronous writes); every transaction (pg_stat_database.xact_commit)",
			Direct: "—", Proxy: "—", Target: "— / ≤ 3 that wait"}
		all := fmt.Sprintf("every transaction %.1f / %.1f (idle: %.1f a second, taken off)", v["toolgate.commits_per_turn"], v["toolgate.commits_per_flow"], v["toolgate.commits_idle_per_s"])
		if w, ok := v["toolgate.wal_commits_per_flow"]; ok {
			turn, flow := v["toolgate.wal_commits_per_turn"]-v["toolgate.delta_writes_per_turn"], w-v["toolgate.delta_writes_per_flow"]
			r.Toolgate = fmt.Sprintf("that wait %.1f / %.1f, besides %.1f / %.1f asynchronous delta writes (idle: %.1f a second, taken off); %s",
				turn, flow, v["toolgate.delta_writes_per_turn"], v["toolgate.delta_writes_per_flow"], v["toolgate.wal_commits_idle_per_s"], all)
			r.Met = met(flow <= 3)
		} else {
			r.Toolgate = "that write: not read (no pg_walinspect); " + all
			r.Met = "?"
		}
		out = append(out, r)
	}
	needless := v["toolgate.upstream_conns_needless"]
	return append(out, row{What: "upstream connections: new / opened while one stood idle / requests", Direct: "—",
		Proxy:    reuse(v["proxy.upstream_conns"], v["proxy.upstream_conns_needless"], v["proxy.upstream_requests"]),
		Toolgate: reuse(v["toolgate.upstream_conns"], needless, v["toolgate.upstream_requests"]),
		Target:   "reused: ≤ 1 % of requests open one while one stands idle",
		Met:      met(v["toolgate.upstream_requests"] > 0 && needless <= 0.01*v["toolgate.upstream_requests"])})
}

// queueRow says whether turn starts queued in the long round at one user's
// o.rate: its p99, the time to the stream's headers (at Toolgate, after
// the turn started; at the proxy, after the mock's first event) and how
// much that grew from the round's first fifth to its last.
func (t table) queueRow() row {
	cell := func(who string) string {
		if _, ok := t.v[who+".queued_long"]; !ok {
			return "—"
		}
		q := "no"
		if t.f(who, "queued_long") == 1 {
			q = "yes"
		}
		return fmt.Sprintf("p99 %.2f ms; headers p50 / p99 %.2f / %.2f ms, %+.2f ms over the round; queued: %s",
			t.f(who, "ttfd_long_p99_ms"), t.f(who, "headers_long_p50_ms"), t.f(who, "headers_long_p99_ms"), t.f(who, "headers_growth_ms"), q)
	}
	return row{What: fmt.Sprintf("%s at %d turns/s, one user: did turn starts queue?", t.o.queueFor, t.o.rate),
		Direct: "—", Proxy: cell("proxy"), Toolgate: cell("toolgate"), Target: "never queues (p99 in the row above)",
		Met: met(t.f("toolgate", "queued_long") == 0)}
}

// levelRow is the per-event delay at the i-th level of n streams: p50 ≤
// the proxy's + 0.1 ms at the first level, p99 ≤ 2× the proxy's at every
// level, and every level held (all its streams open at once).
func (t table) levelRow(i, n int) row {
	key := func(k string) string { return fmt.Sprintf("%s@%d", k, n) }
	cell := func(who string) string {
		held := "held"
		if t.f(who, key("held")) == 0 {
			held = fmt.Sprintf("not held (%.0f open at most)", t.f(who, key("peak_open")))
		}
		return fmt.Sprintf("%.2f / %.2f ms, %s", t.f(who, key("event_delay_p50_ms")), t.f(who, key("event_delay_p99_ms")), held)
	}
	p50, p99 := t.f("toolgate", key("event_delay_p50_ms")), t.f("toolgate", key("event_delay_p99_ms"))
	pp50, pp99 := t.f("proxy", key("event_delay_p50_ms")), t.f("proxy", key("event_delay_p99_ms"))
	ok := t.f("toolgate", key("held")) == 1 && p99 <= 2*pp99
	target := "held; p99 ≤ 2× the proxy's"
	if i == 0 {
		ok = ok && p50 <= pp50+0.1
		target = "held; p50 ≤ the proxy's + 0.1 ms, p99 ≤ 2× the proxy's"
	}
	return row{What: fmt.Sprintf("per-event delay p50 / p99 @ %d streams (1 delta / %s)", n, t.o.gap),
		Direct: cell("direct"), Proxy: cell("proxy"),
		Toolgate: cell("toolgate") + fmt.Sprintf(" (%+.2f / %+.2f ms over the proxy)", p50-pp50, p99-pp99),
		Target:   target, Met: met(ok)}
}

func (t table) cpuRow() row {
	n := t.o.levels[0]
	p, tg := t.f("proxy", fmt.Sprintf("cpu_per_event_us@%d", n)), t.f("toolgate", fmt.Sprintf("cpu_per_event_us@%d", n))
	return row{What: fmt.Sprintf("CPU per relayed event @ %d streams", n), Direct: "—",
		Proxy: fmt.Sprintf("%.1f µs", p), Toolgate: fmt.Sprintf("%.1f µs", tg), Target: "≤ 2× the proxy's", Met: met(tg <= 2*p)}
}

func (t table) memoryRow() row {
	n := t.o.levels[len(t.o.levels)-1]
	cell := func(who string) string {
		return fmt.Sprintf("%.0f MB peak, %.0f KiB per stream", t.f(who, fmt.Sprintf("rss_peak_mb@%d", n)), t.f(who, fmt.Sprintf("rss_per_stream_kib@%d", n)))
	}
	per := t.f("toolgate", fmt.Sprintf("rss_per_stream_kib@%d", n))
	tg := cell("toolgate")
	if _, ok := t.v[fmt.Sprintf("toolgate.stacks_per_stream_kib@%d", n)]; ok {
		tg += fmt.Sprintf("; mid-round, per stream: stacks %.0f KiB, %.1f goroutines", t.f("toolgate", fmt.Sprintf("stacks_per_stream_kib@%d", n)),
			t.f("toolgate", fmt.Sprintf("goroutines_per_stream@%d", n)))
	}
	return row{What: fmt.Sprintf("memory: RSS per open stream @ %d streams", n), Direct: "—",
		Proxy: cell("proxy"), Toolgate: tg, Target: "≤ 64 KiB per stream", Met: met(per <= 64)}
}

func reuse(conns, needless, requests float64) string {
	if requests == 0 {
		return "—"
	}
	return fmt.Sprintf("%.0f / %.0f (%.1f %%) / %.0f", conns, needless, 100*needless/requests, requests)
}

func printTable(w io.Writer, res results) {
	fmt.Fprintf(w, "\n%s, %s\n\n", res.Date, res.Machine)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "what\tdirect\tplain Go proxy\tToolgate\ttarget\tmet")
	for _, r := range res.Rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.What, r.Direct, r.Proxy, r.Toolgate, r.Target, r.Met)
	}
	_ = tw.Flush()
}
