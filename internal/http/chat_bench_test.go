package http_test

import (
	"testing"
)

// BenchmarkChat_TextTurn measures one chat turn end to end: POST
// /api/responses, the turn's rows in Postgres, the request to the emulator
// through openai-go, and the relayed SSE stream read to its end.
func BenchmarkChat_TextTurn(b *testing.B) {
	e := newAPI(b)
	e.createDemo("demo")
	conv := e.send("", "hello").ok(b).conv(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		e.send(conv, "hello again").ok(b)
	}
}

// BenchmarkChat_ApprovalRoundTrip measures a tool that asks: the turn with
// the approval request, then the decision and its follow-up, in which the
// emulator calls the demo MCP server over streamable HTTP.
func BenchmarkChat_ApprovalRoundTrip(b *testing.B) {
	e := newAPI(b)
	e.askFor("get_forecast")
	conv := e.send("", "hello").ok(b).conv(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		s := e.send(conv, `get_forecast {"city": "Oslo"}`).ok(b)
		ap := one[approval](b, s, "approval.required")
		e.decide(conv, ap.ID, true, nil).ok(b)
	}
}
