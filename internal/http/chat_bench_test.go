package http_test

import (
	"bytes"
	"io"
	"net/http"
	"slices"
	"strings"
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
		res := e.post(b, "/api/responses/approval-response", `{"conversation_id":"`+conv+`","approval_request_id":"`+ap.ID+`","approve":true}`)
		lat = append(lat, e.up.arrivedAt(b, n).Sub(start))
		drain(b, res)
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
		res := e.post(b, "/api/responses", `{"conversation_id":"`+conv+`","input":"hello again"}`)
		lat = append(lat, e.up.arrivedAt(b, n).Sub(start))
		drain(b, res)
	}
	reportLatency(b, lat)
}

// post sends body as a plain client would (as cmd/bench does: no checks
// against the spec on the way), and returns the answer once its headers
// arrived: the turn's request is upstream by then.
func (e *apiEnv) post(b *testing.B, path, body string) *http.Response {
	req, err := http.NewRequest(http.MethodPost, e.url+path, strings.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+e.token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		b.Fatalf("%s: %d", path, res.StatusCode)
	}
	return res
}

// drain reads the stream to its end: the turn is over after it.
func drain(b *testing.B, res *http.Response) {
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil || !bytes.Contains(raw, []byte("event: completed")) {
		b.Fatalf("the stream did not complete (%v): %.300s", err, raw)
	}
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
