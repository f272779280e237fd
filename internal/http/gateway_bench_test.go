package http_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/gateway"
)

// BenchmarkGateway_ToolCall is what a tool call costs through Toolgate's
// MCP face with the real gate, beside the same call made directly to the
// server, in the same run: the official go-sdk client on a kept session
// calls the demo server's get_forecast (runs unasked) with new arguments
// each time (an identical call in a turn would be answered from the
// record). Through the face: the token check, the turn check in Postgres,
// a listing of the server at most MCP_DEFINITION_MAX_AGE old (2s, the
// default; 0 in the "list-every-call" run), the admission (the call's
// record written in one transaction), forwarding on a kept session, and
// the result stored with its receipt. Reported as p50-ms and p99-ms.
//
//	go test ./internal/http/ -run '^$' -bench BenchmarkGateway_ToolCall -benchtime 1000x
func BenchmarkGateway_ToolCall(b *testing.B) {
	for _, mode := range []struct {
		name   string
		face   bool
		maxAge time.Duration
	}{{"direct", false, 0}, {"face", true, 2 * time.Second}, {"face-list-every-call", true, 0}} {
		b.Run(mode.name, func(b *testing.B) {
			e := newAPIWith(b, envOptions{gateway: true, definitionMaxAge: mode.maxAge})
			e.createDemo("demo")
			e.setPolicy("demo", "get_forecast", "never")
			conv := e.send("", "hello").ok(b).conv(b)
			// A turn that stays open for the benchmark: the face accepts
			// the token of a conversation's running turn only.
			const turn = "turn_bench"
			if _, err := e.pool.Exec(context.Background(), `UPDATE conversations SET active_turn = $2 WHERE id = $1`, conv, turn); err != nil {
				b.Fatal(err)
			}
			// The same client both ways; the demo server needs no token.
			endpoint, hc := e.demoURL, &http.Client{Transport: &faceClient{t: b}}
			if mode.face {
				tok := e.tokens.Mint(gateway.Claims{ConversationID: conv, TurnID: turn, ServerLabel: "demo", ExpiresAt: time.Now().Add(time.Hour)})
				endpoint, hc = e.url+"/mcp/demo", &http.Client{Transport: &faceClient{t: b, token: tok}}
			}
			ctx := context.Background()
			client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
			s, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc, DisableStandaloneSSE: true}, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			call := func(i int) {
				res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "get_forecast", Arguments: map[string]any{"city": fmt.Sprintf("c%d", i)}})
				if err != nil || res == nil || !res.IsError || resultText(res) == "" || !containsText(res, "no forecast") {
					b.Fatalf("call %d: %v %v", i, err, res)
				}
			}
			call(-1) // sessions open, definitions listed
			var lat []time.Duration
			i := 0
			for b.Loop() {
				start := time.Now()
				call(i)
				lat = append(lat, time.Since(start))
				i++
			}
			reportLatency(b, lat)
		})
	}
}

func containsText(r *mcp.CallToolResult, s string) bool {
	return strings.Contains(resultText(r), s)
}
