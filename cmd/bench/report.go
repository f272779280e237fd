package main

import (
	"fmt"
	"io"
	"strings"
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

// row is one line of the table.
type row struct {
	What     string `json:"what"`
	Direct   string `json:"direct"`
	Proxy    string `json:"proxy"`
	Toolgate string `json:"toolgate"`
	Target   string `json:"target"`
}

func rows(o options, v map[string]float64) []row {
	pair := func(who, a, b string) string {
		return fmt.Sprintf("%.2f / %.2f ms", v[who+"."+a], v[who+"."+b])
	}
	levels := func(who, key string) string {
		var parts []string
		for _, n := range o.levels {
			parts = append(parts, fmt.Sprintf("%.2f", v[fmt.Sprintf("%s.%s@%d", who, key, n)]))
		}
		return strings.Join(parts, " / ") + " ms"
	}
	var lv []string
	for _, n := range o.levels {
		lv = append(lv, fmt.Sprint(n))
	}
	last := o.levels[len(o.levels)-1]
	out := []row{
		{What: fmt.Sprintf("added time to first text delta, p50 / p99 @ %d turns/s", o.rate),
			Direct: pair("direct", "ttfd_added_p50_ms", "ttfd_added_p99_ms"), Proxy: pair("proxy", "ttfd_added_p50_ms", "ttfd_added_p99_ms"),
			Toolgate: pair("toolgate", "ttfd_added_p50_ms", "ttfd_added_p99_ms"), Target: "≤ 1 / ≤ 3 ms"},
		{What: fmt.Sprintf("per-event delay p99 @ %s streams (1 delta / %s)", strings.Join(lv, " / "), o.gap),
			Direct: levels("direct", "event_delay_p99_ms"), Proxy: levels("proxy", "event_delay_p99_ms"),
			Toolgate: levels("toolgate", "event_delay_p99_ms"), Target: "≤ 2× the proxy's"},
		{What: fmt.Sprintf("CPU per relayed event @ %d streams", o.levels[0]), Direct: "—",
			Proxy:    fmt.Sprintf("%.1f µs", v[fmt.Sprintf("proxy.cpu_per_event_us@%d", o.levels[0])]),
			Toolgate: fmt.Sprintf("%.1f µs", v[fmt.Sprintf("toolgate.cpu_per_event_us@%d", o.levels[0])]),
			Target:   "≤ 2× the proxy's"},
		{What: "approval decision → follow-up at upstream, p50 / p99",
			Direct: pair("direct", "approval_p50_ms", "approval_p99_ms"), Proxy: pair("proxy", "approval_p50_ms", "approval_p99_ms"),
			Toolgate: pair("toolgate", "approval_p50_ms", "approval_p99_ms"), Target: "≤ 1 / ≤ 3 ms"},
	}
	if _, ok := v["toolgate.build_before_upstream_ms"]; ok {
		out = append(out, row{What: fmt.Sprintf("%d servers × %d tools: time before the upstream call", o.seedServers, o.seedTools),
			Direct: "—", Proxy: "—",
			Toolgate: fmt.Sprintf("%.1f ms (%.1f ms CPU per turn)", v["toolgate.build_before_upstream_ms"], v["toolgate.build_cpu_per_turn_ms"]),
			Target:   "≤ 5 ms"})
	}
	out = append(out,
		row{What: fmt.Sprintf("memory at %d open streams", last), Direct: "—",
			Proxy:    fmt.Sprintf("%.0f MB peak", v[fmt.Sprintf("proxy.rss_peak_mb@%d", last)]),
			Toolgate: fmt.Sprintf("%.0f MB peak (%.0f KiB per stream)", v[fmt.Sprintf("toolgate.rss_peak_mb@%d", last)], v[fmt.Sprintf("toolgate.rss_per_stream_kib@%d", last)]),
			Target:   "≤ 64 KiB per stream"},
		row{What: "new upstream connections / requests", Direct: "—",
			Proxy:    reuse(v["proxy.upstream_conns"], v["proxy.upstream_requests"]),
			Toolgate: reuse(v["toolgate.upstream_conns"], v["toolgate.upstream_requests"]),
			Target:   "reused (≥ 99 %)"},
	)
	return out
}

func reuse(conns, requests float64) string {
	if requests == 0 {
		return "—"
	}
	return fmt.Sprintf("%.0f for %.0f (%.1f %% reused)", conns, requests, 100*(1-conns/requests))
}

func printTable(w io.Writer, res results) {
	fmt.Fprintf(w, "\n%s, %s\n\n", res.Date, res.Machine)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "what\tdirect\tplain Go proxy\tToolgate\ttarget")
	for _, r := range res.Rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.What, r.Direct, r.Proxy, r.Toolgate, r.Target)
	}
	_ = tw.Flush()
}
