package http_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/toolgate/toolgate/internal/demomcp"
	"github.com/toolgate/toolgate/internal/termchat"
)

// Credentials a model could put in a tool call's arguments, built from
// parts so no scanner mistakes this file for a leak. Each names a piece
// that must never reach a person or another system.
var (
	leakPEM    = "-----BEGIN " + "RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7x9vQm3Zq2Lw0Yb8\n-----END " + "RSA PRIVATE KEY-----"
	leakBearer = "c2VjcmV0LWJlYXJlci0w" + "MTIzNDU2Nzg5"
	leakSK     = "sk-" + "proj-4fQk2VbZ8uXhT1rLmN0pAe7s"
	leaks      = []string{"MIIEowIBAAKCAQEA", leakBearer, leakSK}
)

// secretArgs are arguments that carry the three secrets under harmless
// keys, nested in an array and objects.
func secretArgs() string {
	b, _ := json.Marshal(map[string]any{"city": "Oslo", "options": map[string]any{
		"headers": []string{"Accept: text/plain", "Bearer " + leakBearer},
		"deploy":  []any{map[string]any{"key": leakPEM}}},
		"note": "run curl -u me:pass https://x.example with " + leakSK + " then report"})
	return string(b)
}

// promptWriter keeps what the terminal client writes and closes seen once
// prompt appears.
type promptWriter struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	prompt string
	seen   chan struct{}
	once   sync.Once
}

func (w *promptWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.prompt) {
		w.once.Do(func() { close(w.seen) })
	}
	return len(p), nil
}

func (w *promptWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func assertNoLeak(t *testing.T, where string, text []byte) {
	t.Helper()
	for _, s := range leaks {
		if bytes.Contains(text, []byte(s)) {
			t.Errorf("%s shows the secret %q:\n%s", where, s, text)
		}
	}
	if !bytes.Contains(text, []byte("[redacted]")) {
		t.Errorf("%s does not say a value was hidden:\n%s", where, text)
	}
}

// Secrets in a tool call's arguments are hidden by their value, not only
// their key: the approval event, the webhook delivery, the decision hook's
// request, the receipt, the audit export and the terminal client show none
// of them, while the receipt's SHA-256 is the real arguments' (as the
// provider reports them) and the tool runs with the real values.
func TestSecrets_HiddenByValueEverywhere(t *testing.T) {
	e := newAPI(t)
	e.askFor("delete_forecast")
	r := newReceiver(t)
	e.createHook(r, "approval.required", "decision.recorded")
	run(t, e.dispatcher("replica-a", fastRetries))
	rcv := newDecisionReceiver(t, `{"decision":"ask"}`)
	var hook decisionHookJSON
	e.must(200, "PUT", "/api/decision-hook", map[string]any{"url": rcv.URL + "/hook"}, &hook)
	rcv.setSecret(*hook.Secret)

	// A harmless first message names the conversation (webhooks quote its title).
	conv := e.send("", "hello").ok(t).conv(t)
	args := secretArgs()

	// The card's event, from the API's stream.
	s := e.send(conv, "delete_forecast "+args).ok(t)
	ap := one[approval](t, s, "approval.required")
	var shown []sseEvent // all but the person's own message, which they typed
	for _, ev := range s.events {
		if !bytes.Contains(ev.Data, []byte(`"type":"user_message"`)) {
			shown = append(shown, ev)
		}
	}
	raw, _ := json.Marshal(shown)
	assertNoLeak(t, "the approval.required stream", raw)
	want := []string{"note", "options.deploy[0].key", "options.headers[1]"}
	if strings.Join(ap.Redacted, ",") != strings.Join(want, ",") {
		t.Errorf("redacted %v, want %v", ap.Redacted, want)
	}
	if !bytes.Contains(ap.Arguments, []byte(`"note":"run curl -u me:pass https://x.example with [redacted] then report"`)) ||
		!bytes.Contains(ap.Arguments, []byte(`"Bearer [redacted]"`)) || !bytes.Contains(ap.Arguments, []byte(`"key":"[redacted]"`)) {
		t.Errorf("arguments on the card %s: want only the secrets hidden", ap.Arguments)
	}
	e.decide(conv, ap.ID, true, nil).ok(t)

	// The terminal client, answering the same request's card with y.
	out := &promptWriter{prompt: termchat.DecisionKeys, seen: make(chan struct{})}
	in, typed := io.Pipe()
	go func() {
		select { // y once the card asks (lines typed earlier are dropped)
		case <-out.seen:
			_, _ = io.WriteString(typed, "y\n")
		case <-t.Context().Done():
		}
	}()
	code := termchat.Run(t.Context(), termchat.Config{URL: e.url, Token: e.token, Conversation: conv,
		Message: "delete_forecast " + args, In: in, Out: out, Err: out})
	_ = typed.Close()
	if code != termchat.ExitOK || !strings.Contains(out.String(), "Arguments:") {
		t.Fatalf("toolgate chat exited %d:\n%s", code, out.String())
	}
	assertNoLeak(t, "the terminal client", []byte(out.String()))

	// The webhook receiver (a real HTTP server, signature checked).
	calls := r.waitFor(4, nil)
	body, _ := json.Marshal(calls)
	assertNoLeak(t, "the webhook deliveries", body)

	// The decision hook's requests.
	reqs := rcv.requests()
	if len(reqs) != 2 {
		t.Fatalf("the decision hook got %d requests, want 2", len(reqs))
	}
	body, _ = json.Marshal(reqs)
	assertNoLeak(t, "the decision hook requests", body)

	// Receipts: redacted arguments, the digest of the real ones. The real
	// arguments are what the provider reports (GET /v1/responses/{id}),
	// where a user checks the digest.
	_, rs := e.receipts()
	if len(rs) != 2 {
		t.Fatalf("%d receipts, want 2", len(rs))
	}
	for _, rc := range rs {
		b, _ := json.Marshal(rc)
		assertNoLeak(t, "the receipt", b)
		// As docs/api.md ("Receipts") tells a user: GET the provider's response, take the
		// mcp_call item's arguments as they are.
		req, _ := http.NewRequestWithContext(t.Context(), "GET", e.up.url+"/v1/responses/"+rc.ResponseID, nil)
		req.Header.Set("Authorization", "Bearer test-key")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var resp struct {
			Output []struct {
				Type      string `json:"type"`
				ID        string `json:"id"`
				Arguments string `json:"arguments"`
			} `json:"output"`
		}
		err = json.NewDecoder(res.Body).Decode(&resp)
		_ = res.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		var realArgs string
		for _, it := range resp.Output {
			if it.Type == "mcp_call" && it.ID == rc.CallID {
				realArgs = it.Arguments
			}
		}
		if realArgs == "" || !strings.Contains(realArgs, leakSK) {
			t.Fatalf("the provider's mcp_call %s has arguments %q", rc.CallID, realArgs)
		}
		if rc.ArgumentsSHA256 != sha(realArgs) || rc.ArgumentsSHA256 == sha(rc.ArgumentsText) {
			t.Errorf("receipt arguments_sha256 %s, want %s (the real arguments'), not the redacted text's", rc.ArgumentsSHA256, sha(realArgs))
		}
	}
	assertNoLeak(t, "the audit export", e.must(200, "GET", "/api/audit/export", nil, nil).body)
}

// A server URL with a secret in its query: the row holds it encrypted
// only, the API shows it masked, and the MCP server still receives it
// (discovery and the provider's calls use the real URL).
func TestSecrets_ServerURLQueryIsEncryptedAndMasked(t *testing.T) {
	e := newAPI(t)
	const key = "qk-live-" + "7Hq2mZ9pX4rT0vB3"
	var mu sync.Mutex
	var seen []string // the api_key of each request the MCP server got
	demo := demomcp.New(demomcp.Options{}).Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.URL.Query().Get("api_key"))
		mu.Unlock()
		if r.URL.Query().Get("api_key") != key {
			http.Error(w, "bad api_key", http.StatusUnauthorized)
			return
		}
		demo.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)

	var s server
	e.must(201, "POST", "/api/mcp/servers", map[string]any{"label": "keyed", "url": srv.URL + "/mcp?region=eu&api_key=" + key}, &s)
	wantURL := srv.URL + "/mcp?region=********&api_key=********" + key[len(key)-4:]
	if s.URL != wantURL || s.ToolCount == 0 {
		t.Errorf("created: url %q (want %q), %d tools (discovery with the real URL)", s.URL, wantURL, s.ToolCount)
	}
	var got server
	e.must(200, "GET", "/api/mcp/servers/keyed", nil, &got)
	list := e.must(200, "GET", "/api/mcp/servers", nil, nil).body
	if got.URL != wantURL || bytes.Contains(list, []byte(key)) {
		t.Errorf("read: url %q, list %s", got.URL, list)
	}
	var row string
	if err := e.pool.QueryRow(t.Context(), `SELECT t::text FROM mcp_servers t WHERE label = 'keyed'`).Scan(&row); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(row, key) || strings.Contains(row, key[len(key)-4:]) || !strings.Contains(row, "api_key=********") {
		t.Errorf("the database row holds the key: %s", row)
	}

	// A call through the provider reaches the server with the key.
	mu.Lock()
	seen = nil
	mu.Unlock()
	e.setPolicy("keyed", "get_forecast", "never")
	st := e.send("", `keyed.get_forecast {"city": "Oslo"}`).ok(t)
	calls := callsOf(t, st.items(t))
	if len(calls) != 1 || calls[0].Output == nil {
		t.Errorf("calls %+v, want get_forecast's output", calls)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) == 0 {
		t.Fatal("the MCP server got no request from the provider")
	}
	for _, k := range seen {
		if k != key {
			t.Errorf("the MCP server got api_key %q, want the real key", k)
		}
	}
	if b := e.must(200, "GET", "/api/audit/export", nil, nil).body; bytes.Contains(b, []byte(key)) {
		t.Error("the audit export shows the key")
	}
}

// A string whose credential was hidden inside it ("use [redacted] now"),
// sent back unchanged in a correction, keeps the model's value, as
// "[redacted]" does; changed around the marker it is refused, since the
// hidden part cannot be typed back.
func TestSecrets_CorrectionKeepsAPartlyHiddenValue(t *testing.T) {
	e := newAPI(t)
	e.askFor("send_alert")
	s := e.send("", `send_alert {"city": "Oslo", "message": "use `+leakSK+` now"}`).ok(t)
	conv, ap := s.conv(t), one[approval](t, s, "approval.required")
	if !bytes.Contains(ap.Arguments, []byte(`"message":"use [redacted] now"`)) || strings.Join(ap.Redacted, ",") != "message" {
		t.Fatalf("card %s, redacted %v", ap.Arguments, ap.Redacted)
	}
	r := e.decide(conv, ap.ID, false, map[string]any{"correction": map[string]any{"city": "Bergen", "message": "use [redacted] later"}})
	var body apiError
	if r.status != 400 || json.Unmarshal(r.body, &body) != nil || body.Error.Code != "invalid_correction" || body.Error.Fields["correction.message"] == "" {
		t.Errorf("a changed partly hidden value: %d %s, want 400 invalid_correction naming correction.message", r.status, r.body)
	}

	f := e.decide(conv, ap.ID, false, map[string]any{"correction": map[string]any{"city": "Bergen", "message": "use [redacted] now"}}).ok(t)
	reqs := e.up.sent()
	in, _ := json.Marshal(reqs[len(reqs)-1]["input"])
	if !strings.Contains(string(in), `Use these arguments instead: {\"city\":\"Bergen\"}\nKeep the values you sent for these arguments, which the user could not see: message`) {
		t.Errorf("follow-up input %s: want the message kept, not sent back with the marker", in)
	}
	again := one[approval](t, f, "approval.required")
	e.decide(conv, again.ID, true, nil).ok(t)
	if got := e.demo.State().Alerts; len(got) != 1 || got[0].City != "Bergen" || got[0].Message != "use "+leakSK+" now" {
		t.Errorf("alerts %+v; want Bergen's with the model's real message", got)
	}
}
