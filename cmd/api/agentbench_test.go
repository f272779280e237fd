package main

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/testdb"
)

// BenchmarkAgentFace_UnaskedCall measures one tools/call of a tool that
// runs unasked (the demo's read-only get_forecast) made by an MCP client
// (the official Go SDK's) directly to the demo server, and through the
// whole of Toolgate's MCP face for any client (API token, the person's
// effective policy and grants from Postgres, the definition check, the
// receipt written before and after the call, forwarding), in the same run,
// against the same demo server. It reports the median and the 99th
// percentile of a call.
//
//	go test ./cmd/api -run '^$' -bench BenchmarkAgentFace_UnaskedCall -benchtime 2000x
func BenchmarkAgentFace_UnaskedCall(b *testing.B) {
	demoAddr := freeAddr(b)
	env := map[string]string{"DATABASE_URL": testdb.URL(b), "DEMO_MCP_ADDR": demoAddr, "LOG_LEVEL": "warn"}
	base, _, _ := start(b, env)
	token := tokenFor(b, env, testAdminEmail)
	run := func(b *testing.B, url, auth string) {
		c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
		hc := http.DefaultClient
		if auth != "" {
			hc = &http.Client{Transport: bearer{auth, http.DefaultTransport}}
		}
		cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, DisableStandaloneSSE: true}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		args := map[string]any{"city": "Berlin"}
		ctx := context.Background()
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_forecast", Arguments: args}); err != nil {
			b.Fatal(err)
		}
		d := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for range b.N {
			t0 := time.Now()
			out, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_forecast", Arguments: args})
			d = append(d, time.Since(t0))
			if err != nil || out.IsError {
				b.Fatalf("%v %+v", err, out)
			}
		}
		b.StopTimer()
		slices.Sort(d)
		b.ReportMetric(float64(d[len(d)/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(d[len(d)*99/100].Microseconds()), "p99-µs")
	}
	b.Run("direct", func(b *testing.B) { run(b, "http://"+demoAddr+"/mcp", "") })
	b.Run("toolgate", func(b *testing.B) { run(b, base+"/mcp/demo", token) })
}
