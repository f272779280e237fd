package http_test

import (
	"testing"
	"time"
)

// BenchmarkDirect_MessageToUpstream is what listing before a request
// costs in direct mode, with its baseline in the same run: from posting a
// message to its request reaching the upstream, with the demo server's
// get_forecast running unasked. baseline: no listing (gateway mode, or
// direct mode before this change); hit: the server's listing is reused
// (within MCP_PRELIST_MAX_AGE); miss: every request lists the server
// (MCP_PRELIST_MAX_AGE=0: connect, initialize, tools/list over loopback,
// and the definitions compared in Postgres). Reported as p50-ms and p99-ms.
func BenchmarkDirect_MessageToUpstream(b *testing.B) {
	for _, mode := range []struct {
		name   string
		on     bool
		maxAge time.Duration
	}{{"baseline", false, 0}, {"hit", true, time.Hour}, {"miss", true, 0}} {
		b.Run(mode.name, func(b *testing.B) {
			var opts envOptions
			if mode.on {
				opts.direct = &directMode{maxAge: mode.maxAge, limit: 2 * time.Second}
			}
			e := newAPIWith(b, opts)
			e.createDemo("demo")
			e.setPolicy("demo", "get_forecast", "never")
			conv := e.send("", "hello").ok(b).conv(b)
			var lat []time.Duration
			for b.Loop() {
				n := e.up.count()
				start := time.Now()
				res := e.post(b, "/api/responses", `{"conversation_id":"`+conv+`","input":"hello again"}`)
				lat = append(lat, e.up.arrivedAt(b, n).Sub(start))
				drain(b, res)
			}
			reportLatency(b, lat)
		})
	}
}
