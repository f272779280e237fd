package http_test

import (
	"fmt"
	"testing"
)

// BenchmarkAPI_ListTools measures GET .../tools (the settings panel's and,
// later, every chat turn's read) through real HTTP and Postgres, for a
// server with the demo's 6 tools plus 100 explicit policies.
func BenchmarkAPI_ListTools(b *testing.B) {
	e := newAPI(b)
	e.createDemo("weather")
	pols := map[string]string{}
	for i := range 100 {
		pols[fmt.Sprintf("tool_%03d", i)] = []string{"never", "always", "blocked"}[i%3]
	}
	e.must(200, "PUT", "/api/mcp/servers/weather/tools/approval-policies", map[string]any{"policies": pols}, nil)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if res := e.call("GET", "/api/mcp/servers/weather/tools", nil); res.status != 200 {
			b.Fatal(res.status)
		}
	}
}

// BenchmarkAPI_SetPolicy measures one audited policy change (transaction,
// row lock, upsert, audit insert) through real HTTP and Postgres.
func BenchmarkAPI_SetPolicy(b *testing.B) {
	e := newAPI(b)
	e.createDemo("weather")
	policies := []string{`{"policy":"always"}`, `{"policy":"never"}`}
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		i++
		if res := e.call("PUT", "/api/mcp/servers/weather/tools/delete_forecast/approval-policy", policies[i%2]); res.status != 200 {
			b.Fatal(res.status, string(res.body))
		}
	}
}
