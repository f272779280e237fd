package http_test

import (
	"slices"
	"testing"
	"time"
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

// BenchmarkTurnPath_DecisionToUpstream times what the bench's approval row
// measures: from posting a decision to the follow-up carrying its answer
// reaching the upstream (the tap in front of the emulator). The turn that
// asks is not timed. Reported as p50-ms and p99-ms.
func BenchmarkTurnPath_DecisionToUpstream(b *testing.B) {
	e := newAPI(b)
	e.askFor("get_forecast")
	conv := e.send("", "hello").ok(b).conv(b)
	var lat []time.Duration
	for b.Loop() {
		b.StopTimer()
		s := e.send(conv, `get_forecast {"city": "Oslo"}`).ok(b)
		ap := one[approval](b, s, "approval.required")
		n := e.up.count()
		b.StartTimer()
		start := time.Now()
		e.decide(conv, ap.ID, true, nil).ok(b)
		lat = append(lat, e.up.arrivedAt(b, n).Sub(start))
	}
	reportLatency(b, lat)
}

// BenchmarkTurnPath_MessageToUpstream times a message turn from posting it
// to its request reaching the upstream: everything Toolgate does before
// the upstream call.
func BenchmarkTurnPath_MessageToUpstream(b *testing.B) {
	e := newAPI(b)
	e.createDemo("demo")
	conv := e.send("", "hello").ok(b).conv(b)
	var lat []time.Duration
	for b.Loop() {
		n := e.up.count()
		start := time.Now()
		e.send(conv, "hello again").ok(b)
		lat = append(lat, e.up.arrivedAt(b, n).Sub(start))
	}
	reportLatency(b, lat)
}

func reportLatency(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	at := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(at(0.5), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
}
