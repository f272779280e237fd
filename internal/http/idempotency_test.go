package http_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/auth"
)

// keyed posts body (a string as is, anything else as JSON) to path with
// the Idempotency-Key headers keys and reads the whole answer.
func (e *apiEnv) keyed(path string, body any, keys ...string) stream {
	e.t.Helper()
	res := e.openKeyed(context.Background(), path, body, keys...)
	defer res.Body.Close()
	return readStream(e.t, res)
}

func (e *apiEnv) openKeyed(ctx context.Context, path string, body any, keys ...string) *http.Response {
	e.t.Helper()
	specWatch(e.t, e.url)
	raw, ok := body.(string)
	if !ok {
		b, err := json.Marshal(body)
		if err != nil {
			e.t.Fatal(err)
		}
		raw = string(b)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url+path, strings.NewReader(raw))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+e.token)
	for _, k := range keys {
		req.Header.Add("Idempotency-Key", k)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("POST %s: %v", path, err)
	}
	return res
}

func readStream(t testing.TB, res *http.Response) stream {
	t.Helper()
	s := stream{status: res.StatusCode, header: res.Header}
	if !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		s.body, _ = io.ReadAll(res.Body)
		return s
	}
	s.events, s.pings = parseSSE(t, res.Body, nil)
	return s
}

// withoutDeltas is the stream's events a replay repeats: all but text.delta,
// payloads compacted.
func withoutDeltas(t testing.TB, s stream) []string {
	t.Helper()
	var out []string
	for _, ev := range s.events {
		if ev.Name == "text.delta" {
			continue
		}
		var b bytes.Buffer
		if err := json.Compact(&b, ev.Data); err != nil {
			t.Fatal(err)
		}
		out = append(out, ev.Name+" "+b.String())
	}
	return out
}

func wantError(t *testing.T, what string, s stream, status int, code string) apiError {
	t.Helper()
	var e apiError
	if s.status != status || json.Unmarshal(s.body, &e) != nil || e.Error.Code != code {
		t.Fatalf("%s: status %d body %s events %v; want %d %s", what, s.status, s.body, s.names(), status, code)
	}
	return e
}

func TestIdempotency_RepeatReplaysTheStreamWithoutAnUpstreamCall(t *testing.T) {
	e := newAPI(t)
	e.createDemo("demo")
	e.setPolicy("demo", "get_forecast", "never")
	body := map[string]any{"input": `get_forecast {"city": "Berlin"}`}

	first := e.keyed("/api/responses", body, "k-1").ok(t)
	if first.header.Get("Idempotent-Replayed") != "" {
		t.Errorf("the first answer says it was replayed")
	}
	conv := first.conv(t)
	sent, runs, items := e.up.count(), e.demoCalls()["get_forecast"], len(e.transcript(conv).Items)
	if runs != 1 || !slices.Contains(first.names(), "text.delta") {
		t.Fatalf("first: get_forecast ran %d times, events %v", runs, first.names())
	}

	// The same body with other key order and spacing is the same request.
	again := e.keyed("/api/responses", ` { "input" : "get_forecast {\"city\": \"Berlin\"}" } `, "k-1").ok(t)
	if again.header.Get("Idempotent-Replayed") != "true" || again.header.Get("X-Conversation-Id") != conv {
		t.Errorf("replay headers %v", again.header)
	}
	if got, want := withoutDeltas(t, again), withoutDeltas(t, first); !slices.Equal(got, want) {
		t.Errorf("replayed events\n%v\nwant the first stream's (without text.delta)\n%v", got, want)
	}
	if slices.Contains(again.names(), "text.delta") {
		t.Errorf("a replay repeated text.delta: %v", again.names())
	}
	if e.up.count() != sent {
		t.Errorf("the repeat sent %d more requests upstream", e.up.count()-sent)
	}
	if n := e.demoCalls()["get_forecast"]; n != runs {
		t.Errorf("get_forecast ran %d times, want %d", n, runs)
	}
	if n := len(e.transcript(conv).Items); n != items {
		t.Errorf("the transcript grew from %d to %d items", items, n)
	}
	if n := e.conversationCount(); n != 1 {
		t.Errorf("%d conversations, want 1", n)
	}
}

func TestIdempotency_ApprovalResponseRunsTheToolOnce(t *testing.T) {
	e := newAPI(t)
	e.askFor("delete_forecast")
	_, conv, ap := e.askToDeleteOslo()
	body := map[string]any{"conversation_id": conv, "approval_request_id": ap.ID, "approve": true}

	first := e.keyed("/api/responses/approval-response", body, "approve-oslo").ok(t)
	sent := e.up.count()
	if n := e.demoCalls()["delete_forecast"]; n != 1 {
		t.Fatalf("delete_forecast ran %d times, want 1", n)
	}
	again := e.keyed("/api/responses/approval-response", body, "approve-oslo").ok(t)
	if got, want := withoutDeltas(t, again), withoutDeltas(t, first); !slices.Equal(got, want) {
		t.Errorf("replayed events\n%v\nwant\n%v", got, want)
	}
	if n := e.demoCalls()["delete_forecast"]; n != 1 || e.up.count() != sent {
		t.Errorf("after the repeat delete_forecast ran %d times and %d more requests went upstream", n, e.up.count()-sent)
	}
	// Without the key the same decision is refused as usual.
	wantError(t, "unkeyed repeat", e.decide(conv, ap.ID, true, nil), 409, "approval_already_decided")
	// The key and body on the other route are another request.
	wantError(t, "other route", e.keyed("/api/responses", body, "approve-oslo"), 422, "idempotency_key_reused")
}

func TestIdempotency_SameKeyOtherBodyIs422(t *testing.T) {
	e := newAPI(t)
	e.keyed("/api/responses", map[string]any{"input": "hello"}, "k").ok(t)
	sent := e.up.count()

	res := wantError(t, "other body", e.keyed("/api/responses", map[string]any{"input": "hello!"}, "k"), 422, "idempotency_key_reused")
	if !strings.Contains(res.Error.Message, "new key") {
		t.Errorf("message %q does not say what to do", res.Error.Message)
	}
	if e.up.count() != sent || e.conversationCount() != 1 {
		t.Errorf("the refused request sent %d upstream, %d conversations", e.up.count()-sent, e.conversationCount())
	}
}

func TestIdempotency_RepeatWhileTheFirstRunsIs409(t *testing.T) {
	e := newAPI(t)
	e.up.setBehavior("first-event-delay=1s")
	body := map[string]any{"input": "hello"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res := e.openKeyed(ctx, "/api/responses", body, "slow")
	defer res.Body.Close()
	conv := res.Header.Get("X-Conversation-Id")
	if res.StatusCode != 200 || conv == "" {
		t.Fatalf("first: status %d headers %v", res.StatusCode, res.Header)
	}

	s := e.keyed("/api/responses", body, "slow")
	busy := wantError(t, "in flight", s, 409, "idempotency_key_in_flight")
	var details struct {
		Error struct {
			Details map[string]string `json:"details"`
		} `json:"error"`
	}
	_ = json.Unmarshal(s.body, &details)
	if details.Error.Details["conversation_id"] != conv {
		t.Errorf("409 details %v, want conversation_id %s; message %q", details.Error.Details, conv, busy.Error.Message)
	}

	first := readStream(t, res).ok(t)
	if n := e.up.count(); n != 1 {
		t.Errorf("%d requests upstream, want 1", n)
	}
	again := e.keyed("/api/responses", body, "slow").ok(t)
	if got, want := withoutDeltas(t, again), withoutDeltas(t, first); !slices.Equal(got, want) {
		t.Errorf("after the first ended: replayed\n%v\nwant\n%v", got, want)
	}
	if n := e.up.count(); n != 1 {
		t.Errorf("%d requests upstream after the replay, want 1", n)
	}
}

func TestIdempotency_KeysAreScopedPerUser(t *testing.T) {
	e := newAPI(t)
	body := map[string]any{"input": "hello"}
	a := e.keyed("/api/responses", body, "shared-key").ok(t)
	sent := e.up.count()

	b, _ := e.newUser(auth.Member)
	s := b.keyed("/api/responses", body, "shared-key").ok(t)
	if s.header.Get("Idempotent-Replayed") != "" || s.conv(t) == a.conv(t) {
		t.Errorf("user B got user A's stream (conversation %s)", s.conv(t))
	}
	if e.up.count() != sent+1 {
		t.Errorf("user B's request sent %d requests upstream, want 1", e.up.count()-sent)
	}
	// Another body is no reuse either: the key is B's own now.
	b.keyed("/api/responses", body, "shared-key").ok(t)
	wantError(t, "B reuses own key", b.keyed("/api/responses", map[string]any{"input": "bye"}, "shared-key"), 422, "idempotency_key_reused")
	if n := b.conversationCount(); n != 1 {
		t.Errorf("user B has %d conversations, want 1", n)
	}
}

func TestIdempotency_BadKeyIs400(t *testing.T) {
	e := newAPI(t)
	body := map[string]any{"input": "hello"}
	for name, keys := range map[string][]string{
		"empty":     {""},
		"too long":  {strings.Repeat("k", 256)},
		"non-ASCII": {"schlüssel"},
		"tab":       {"a\tb"},
		"two":       {"a", "b"},
	} {
		res := wantError(t, name, e.keyed("/api/responses", body, keys...), 400, "invalid_idempotency_key")
		if !strings.Contains(res.Error.Message, "255 printable ASCII") || res.Error.Fields["Idempotency-Key"] == "" {
			t.Errorf("%s: error %+v does not say what a key must be", name, res.Error)
		}
	}
	if e.up.count() != 0 || e.conversationCount() != 0 {
		t.Errorf("refused keys sent %d requests upstream and made %d conversations", e.up.count(), e.conversationCount())
	}
	e.keyed("/api/responses", body, strings.Repeat("k", 255)).ok(t)
}

func TestIdempotency_ARefusedRequestLeavesTheKeyFree(t *testing.T) {
	e := newAPI(t)
	missing := map[string]any{"conversation_id": "conv_000000000000000000000000", "input": "hello"}
	wantError(t, "no such conversation", e.keyed("/api/responses", missing, "k"), 404, "conversation_not_found")
	// Refused before the turn began: nothing is stored, the repeat runs (and is refused) again.
	wantError(t, "repeat", e.keyed("/api/responses", missing, "k"), 404, "conversation_not_found")
	// And the key is free for a request that runs.
	e.keyed("/api/responses", map[string]any{"input": "hello"}, "k").ok(t)
}

func TestIdempotency_KeysExpireAfter24Hours(t *testing.T) {
	e := newAPI(t)
	body := map[string]any{"input": "hello"}
	first := e.keyed("/api/responses", body, "old").ok(t)
	if _, err := e.pool.Exec(context.Background(), `UPDATE idempotency_keys SET created_at = now() - interval '24 hours 1 minute'`); err != nil {
		t.Fatal(err)
	}
	s := e.keyed("/api/responses", body, "old").ok(t)
	if s.header.Get("Idempotent-Replayed") != "" || s.conv(t) == first.conv(t) || e.up.count() != 2 {
		t.Errorf("an expired key was replayed (%d requests upstream)", e.up.count())
	}
	var n int
	if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM idempotency_keys`).Scan(&n); err != nil || n != 1 {
		t.Errorf("%d keys stored (%v), want the expired one replaced by the new one", n, err)
	}
}
