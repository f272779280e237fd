package gateway_test

import (
	"context"
	"crypto/rand"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/demomcp"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/mcpclient"
	"github.com/toolgate/toolgate/internal/netguard"
	"github.com/toolgate/toolgate/internal/policy"
)

// runGate admits every call and stores nothing: the benchmark measures the
// face and the forwarding, not the gate's database work.
type runGate struct{}

func (runGate) Authorize(context.Context, gateway.Claims) error { return nil }
func (runGate) Listed(_ context.Context, _ gateway.Claims, t []policy.DiscoveredTool) ([]policy.DiscoveredTool, error) {
	return t, nil
}
func (runGate) Admit(context.Context, gateway.Call) (gateway.Verdict, error) {
	return gateway.Verdict{CallID: "c", Run: true}, nil
}
func (runGate) Finish(context.Context, string, gateway.Result) error { return nil }
func (runGate) Await(context.Context, string) (gateway.Result, error) {
	return gateway.Result{}, nil
}

// BenchmarkFaceCall measures one tools/call of the demo server made with
// the official SDK client directly, and through the face (token check,
// definition check, gate, forwarding on a kept session), in the same run.
// It reports the median and the 99th percentile of a call.
//
//	go test ./internal/gateway/ -run '^$' -bench BenchmarkFaceCall -benchtime 2000x
func BenchmarkFaceCall(b *testing.B) {
	demo := demomcp.New(demomcp.Options{Token: demoSecret})
	demoSrv := httptest.NewServer(demo.Handler())
	b.Cleanup(demoSrv.Close)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	tokens := gateway.NewTokens(key)
	guard, _ := netguard.New(netguard.Config{AllowLoopback: true})
	caller := &mcpclient.Caller{Guard: guard}
	b.Cleanup(caller.Close)
	servers := &mapServers{m: map[string]policy.Server{"demo": {Label: "demo", URL: demoSrv.URL + "/mcp",
		Headers: map[string]string{"Authorization": "Bearer " + demoSecret}, Enabled: true}}}
	tok := tokens.Mint(gateway.Claims{ConversationID: "c", TurnID: "t", ServerLabel: "demo", ExpiresAt: time.Now().Add(time.Hour)})

	run := func(b *testing.B, cs *mcp.ClientSession) {
		args := map[string]any{"city": "Berlin"}
		ctx := context.Background()
		// One call first: sessions are open and definitions listed, as in a
		// running Toolgate.
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_forecast", Arguments: args}); err != nil {
			b.Fatal(err)
		}
		d := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for range b.N {
			start := time.Now()
			out, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_forecast", Arguments: args})
			d = append(d, time.Since(start))
			if err != nil || out.IsError {
				b.Fatalf("%v %+v", err, out)
			}
		}
		b.StopTimer()
		slices.Sort(d)
		b.ReportMetric(float64(d[len(d)/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(d[len(d)*99/100].Microseconds()), "p99-µs")
	}
	b.Run("direct", func(b *testing.B) {
		client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
		cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: demoSrv.URL + "/mcp", DisableStandaloneSSE: true,
			HTTPClient: &http.Client{Transport: bearer{token: demoSecret}}}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		run(b, cs)
	})
	for _, tc := range []struct {
		name   string
		maxAge time.Duration
	}{{"face", gateway.DefaultDefinitionMaxAge}, {"face-list-every-call", 0}} {
		b.Run(tc.name, func(b *testing.B) {
			face := gateway.NewFace(gateway.FaceOptions{Tokens: tokens, Gate: runGate{}, Servers: servers, Upstream: caller, DefinitionMaxAge: tc.maxAge})
			faceSrv := httptest.NewServer(face)
			defer faceSrv.Close()
			cs, err := connectTo(context.Background(), faceSrv.URL+"/mcp/demo", tok)
			if err != nil {
				b.Fatal(err)
			}
			defer cs.Close()
			run(b, cs)
		})
	}
}
