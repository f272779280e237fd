package termchat

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeToolgate answers the routes the client uses, as docs/openapi.yaml and
// docs/sse-events.md describe them, and records what it was sent.
type fakeToolgate struct {
	t         *testing.T
	mu        sync.Mutex
	decisions []string // bodies of approval-response
	cancels   []string // conversations cancelled
	headers   []http.Header
	pending   []string // approval.required payloads of the message turn
	convState string   // GET /api/conversations/conv_1
	cancelled chan struct{}
	hang      bool          // the message turn waits for a cancel
	release   chan struct{} // when set, the message turn waits for it
}

func sseEvents(w http.ResponseWriter, events ...string) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("X-Conversation-Id", "conv_1")
	fmt.Fprint(w, ": ping\n\n")
	for i := 0; i+1 < len(events); i += 2 {
		fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", i/2+1, events[i], events[i+1])
	}
	w.(http.Flusher).Flush()
}

func (f *fakeToolgate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.headers = append(f.headers, r.Header.Clone())
	f.mu.Unlock()
	if r.Header.Get("Authorization") != "Bearer tg_good" {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"error":{"code":"unauthenticated","message":"sign in first"}}`)
		return
	}
	if r.Method == http.MethodPost && r.Header.Get("Content-Type") != "application/json" && r.ContentLength > 0 {
		w.WriteHeader(http.StatusUnsupportedMediaType)
		fmt.Fprint(w, `{"error":{"code":"unsupported_media_type","message":"send JSON"}}`)
		return
	}
	body, _ := io.ReadAll(r.Body)
	switch r.Method + " " + r.URL.Path {
	case "GET /api/auth/me":
		fmt.Fprint(w, `{"id":"usr_1","email":"ana@example.com","role":"member"}`)
	case "GET /api/conversations/conv_1":
		fmt.Fprint(w, f.convState)
	case "POST /api/conversations/conv_1/cancel":
		f.mu.Lock()
		f.cancels = append(f.cancels, "conv_1")
		f.mu.Unlock()
		close(f.cancelled)
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprint(w, `{"cancelled":true}`)
	case "POST /api/responses":
		conv := `{"conversation_id":"conv_1","turn_id":"turn_1","kind":"message","offline":true,"model":"m"}`
		if f.hang {
			sseEvents(w, "conversation", conv,
				"tool.started", `{"item_id":"mcp_9","response_id":"resp_1","server_label":"demo","upstream_label":"demo","tool_name":"slow","approval_request_id":null,"started_at":"2026-11-22T10:00:00Z"}`)
			select {
			case <-f.cancelled:
				sseEvents(w, "error", `{"code":"cancelled","message":"the turn was cancelled","retryable":false}`)
			case <-time.After(10 * time.Second):
				f.t.Error("no cancel came")
			}
			return
		}
		if f.release != nil {
			<-f.release
		}
		events := []string{"conversation", conv,
			"text.delta", `{"item_id":"msg_1","delta":"Let me "}`, "text.delta", `{"item_id":"msg_1","delta":"ask."}`,
			"item.done", `{"item":{"type":"message","id":"msg_1","text":"Let me ask."}}`}
		var ids []string
		for _, p := range f.pending {
			events = append(events, "approval.required", p)
			var a approval
			_ = json.Unmarshal([]byte(p), &a)
			ids = append(ids, `"`+a.ID+`"`)
		}
		events = append(events, "completed", fmt.Sprintf(`{"response_id":"resp_1","pending_approvals":%d,"pending_approval_ids":[%s],"sent":true}`, len(ids), strings.Join(ids, ",")))
		sseEvents(w, events...)
	case "POST /api/responses/approval-response":
		f.mu.Lock()
		f.decisions = append(f.decisions, string(body))
		f.mu.Unlock()
		if strings.Contains(string(body), `"stop":true`) {
			stopped(w) // stop_test.go
			return
		}
		sseEvents(w, "conversation", `{"conversation_id":"conv_1","turn_id":"turn_2","kind":"decisions"}`,
			"decision.recorded", `{"approval_request_id":"mcpr_1","server_label":"demo","tool_name":"t1","state":"approved","reason":null,"scope":"once","remember":false,"policy_changed":null,"pending_approval_ids":[]}`,
			"tool.started", `{"item_id":"mcp_1","response_id":"resp_2","server_label":"demo","upstream_label":"demo","tool_name":"t1","approval_request_id":"mcpr_1","started_at":"2026-11-22T10:00:00Z"}`,
			"item.done", `{"item":{"type":"mcp_call","id":"mcp_1","server_label":"demo","name":"t1","output":"ok","allowed_by":{"kind":"approval"}}}`,
			"item.done", `{"item":{"type":"message","id":"msg_2","text":"All decided\nfine."}}`,
			"completed", `{"response_id":"resp_2","pending_approvals":0,"pending_approval_ids":[],"sent":true}`)
	default:
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"error":{"code":"route_not_found","message":"no such route"}}`)
	}
}

// screen collects what the client writes, and waits for text on it.
type screen struct {
	mu  sync.Mutex
	b   bytes.Buffer
	pos int
}

func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *screen) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (s *screen) expect(t *testing.T, want string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		out := s.String()
		if i := strings.Index(out[s.pos:], want); i >= 0 {
			s.pos += i + len(want)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the screen does not show %q after what was seen; it shows:\n%s", want, out)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

type harness struct {
	t    *testing.T
	srv  *fakeToolgate
	scr  *screen
	in   *io.PipeWriter
	ints chan struct{}
	exit chan int
	cfg  Config
}

func newHarness(t *testing.T) *harness {
	f := &fakeToolgate{t: t, cancelled: make(chan struct{})}
	ts := httptest.NewServer(f)
	t.Cleanup(ts.Close)
	pr, pw := io.Pipe()
	scr := &screen{}
	h := &harness{t: t, srv: f, scr: scr, in: pw, ints: make(chan struct{}, 1), exit: make(chan int, 1)}
	h.cfg = Config{URL: ts.URL, Token: "tg_good", In: pr, Out: scr, Err: scr, Interrupts: h.ints}
	t.Cleanup(func() { pw.Close() })
	return h
}

func (h *harness) start() {
	go func() { h.exit <- Run(context.Background(), h.cfg) }()
}

func (h *harness) typeLine(s string) {
	h.t.Helper()
	if _, err := io.WriteString(h.in, s+"\n"); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) exitCode() int {
	h.t.Helper()
	select {
	case c := <-h.exit:
		return c
	case <-time.After(10 * time.Second):
		h.t.Fatalf("Run did not return; screen:\n%s", h.scr)
		return -1
	}
}

func pendingJSON(id, tool string) string {
	return fmt.Sprintf(`{"approval_request_id":%q,"conversation_id":"conv_1","server_label":"demo","tool_name":%q,"arguments":{"city":"Oslo"},"redacted":["api_token"],"annotations":{"title":"T","readOnlyHint":false,"destructiveHint":true,"openWorldHint":true},"asks_because":{"policy":"always","source":"tool"},"state":"pending"}`, id, tool)
}

// TestRun_EachKeyMakesItsDecisionAndAllGoTogether: y, c, h, a, n, b, r and
// e (the web card's choices: once, this conversation, 1 hour, always, deny,
// deny and block, deny with a reason, deny with a correction) map to the
// API's decision fields; a wrong key, an over-long reason or a correction
// that is not a JSON object asks again; nothing is sent until every request
// is decided, then all in one request.
func TestRun_EachKeyMakesItsDecisionAndAllGoTogether(t *testing.T) {
	h := newHarness(t)
	for i := 1; i <= 8; i++ {
		h.srv.pending = append(h.srv.pending, pendingJSON(fmt.Sprintf("mcpr_%d", i), fmt.Sprintf("t%d", i)))
	}
	h.start()
	h.scr.expect(t, "signed in as ana@example.com")
	h.scr.expect(t, "you> ")
	h.typeLine("do things")
	h.scr.expect(t, "  Let me ask.\n")
	h.scr.expect(t, "── Approval needed (1 of 8): t1 on demo\n  T\n  Hints from the MCP server (not verified): destructive, open-world\n  Asks because this tool's policy is Ask.\n  Arguments:\n    {\n      \"city\": \"Oslo\"\n    }\n  Hidden by Toolgate (it looks secret): api_token.")
	h.scr.expect(t, "\n"+DecisionKeys+"\n> ")
	h.typeLine("yes")
	h.scr.expect(t, "Please type one of y, c, h, a, n, b, r, e or s, then Enter.\n"+DecisionKeys+"\n> ")
	h.typeLine(" Y ")
	for i, key := range []string{"c", "h", "a", "n", "b"} {
		h.scr.expect(t, fmt.Sprintf("(%d of 8)", i+2))
		h.scr.expect(t, DecisionKeys+"\n> ")
		h.typeLine(key)
	}
	h.scr.expect(t, "(7 of 8)")
	h.scr.expect(t, DecisionKeys+"\n> ")
	h.typeLine("r")
	h.scr.expect(t, "reason> ")
	h.typeLine(strings.Repeat("x", maxReason+1))
	h.scr.expect(t, "the limit is 2000")
	h.scr.expect(t, "reason> ")
	h.typeLine("  too risky  ")
	h.scr.expect(t, "(8 of 8)")
	h.scr.expect(t, DecisionKeys+"\n> ")
	h.typeLine("e")
	h.scr.expect(t, "  {\"city\":\"Oslo\"}\ncorrection> ")
	h.typeLine(`Hamburg`)
	h.scr.expect(t, "That is not a JSON object")
	h.scr.expect(t, "correction> ")
	h.typeLine(` {"city": "Hamburg"} `)
	h.scr.expect(t, "reason> ")
	h.typeLine("")
	h.scr.expect(t, "· t1 on demo: approved\n")
	h.scr.expect(t, "· running t1 on demo…\n")
	h.scr.expect(t, "· ran t1 on demo (approved)\n")
	h.scr.expect(t, "  All decided\n  fine.\n")
	h.scr.expect(t, "you> ")
	h.in.Close()
	if c := h.exitCode(); c != ExitOK {
		t.Errorf("exit %d after the end of the input", c)
	}

	h.srv.mu.Lock()
	defer h.srv.mu.Unlock()
	if len(h.srv.decisions) != 1 {
		t.Fatalf("%d approval-response requests, want 1: %q", len(h.srv.decisions), h.srv.decisions)
	}
	var got any
	_ = json.Unmarshal([]byte(h.srv.decisions[0]), &got)
	var want any
	_ = json.Unmarshal([]byte(`{"conversation_id":"conv_1","decisions":[
		{"approval_request_id":"mcpr_1","approve":true},
		{"approval_request_id":"mcpr_2","approve":true,"scope":"conversation"},
		{"approval_request_id":"mcpr_3","approve":true,"scope":"hour"},
		{"approval_request_id":"mcpr_4","approve":true,"remember":true},
		{"approval_request_id":"mcpr_5","approve":false},
		{"approval_request_id":"mcpr_6","approve":false,"remember":true},
		{"approval_request_id":"mcpr_7","approve":false,"reason":"too risky"},
		{"approval_request_id":"mcpr_8","approve":false,"correction":{"city":"Hamburg"}}]}`), &want)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("decisions sent:\n%s\nwant:\n%v", h.srv.decisions[0], want)
	}
	for _, hd := range h.srv.headers {
		if hd.Get("Authorization") != "Bearer tg_good" || hd.Get("Origin") != "" {
			t.Errorf("request headers %v", hd)
		}
	}
}

// TestRun_CtrlCWhileStreamingCancelsTheTurn: the first Ctrl-C posts the
// cancel and the client waits for the stream to say so; at the prompt
// Ctrl-C quits with 0.
func TestRun_CtrlCWhileStreamingCancelsTheTurn(t *testing.T) {
	h := newHarness(t)
	h.srv.hang = true
	h.start()
	h.scr.expect(t, "you> ")
	h.typeLine("take long")
	h.scr.expect(t, "(conversation conv_1; continue it later with --conversation conv_1)")
	h.ints <- struct{}{}
	h.scr.expect(t, "Cancelling the turn…\n")
	h.scr.expect(t, "· slow on demo may have run: the turn ended before the provider reported its result\n")
	h.scr.expect(t, "Cancelled.\n")
	h.scr.expect(t, "you> ")
	h.ints <- struct{}{}
	if c := h.exitCode(); c != ExitOK {
		t.Errorf("Ctrl-C at the prompt: exit %d", c)
	}
	h.srv.mu.Lock()
	defer h.srv.mu.Unlock()
	if len(h.srv.cancels) != 1 {
		t.Errorf("cancels posted: %v", h.srv.cancels)
	}
}

// TestRun_ContinuingAConversationAsksItsPendingRequestsFirst.
func TestRun_ContinuingAConversationAsksItsPendingRequestsFirst(t *testing.T) {
	h := newHarness(t)
	h.srv.convState = `{"conversation":{"id":"conv_1","streaming":false},"items":[],"pending_approvals":[` + pendingJSON("mcpr_9", "t9") + `]}`
	h.cfg.Conversation = "conv_1"
	h.start()
	h.scr.expect(t, "Continuing conversation conv_1.")
	h.scr.expect(t, "This conversation has 1 approval request(s) waiting:")
	h.scr.expect(t, "── Approval needed: t9 on demo")
	h.scr.expect(t, DecisionKeys+"\n> ")
	h.typeLine("n")
	h.scr.expect(t, "All decided")
	h.scr.expect(t, "you> ")
	h.in.Close()
	if c := h.exitCode(); c != ExitOK {
		t.Errorf("exit %d", c)
	}
	if strings.Contains(h.scr.String(), "(conversation conv_1;") {
		t.Errorf("announced the continued conversation as new:\n%s", h.scr)
	}
	h.srv.mu.Lock()
	defer h.srv.mu.Unlock()
	if len(h.srv.decisions) != 1 || !strings.Contains(h.srv.decisions[0], `{"approval_request_id":"mcpr_9","approve":false}`) {
		t.Errorf("decisions: %q", h.srv.decisions)
	}
}

func TestRun_OneShotExitsWithTheTurn(t *testing.T) {
	h := newHarness(t)
	h.cfg.Message = "hello"
	h.start()
	h.scr.expect(t, "Let me ask.")
	if c := h.exitCode(); c != ExitOK {
		t.Errorf("exit %d; screen:\n%s", c, h.scr)
	}
	if strings.Contains(h.scr.String(), "you> ") || strings.Contains(h.scr.String(), "signed in") {
		t.Errorf("one-shot prompted or greeted:\n%s", h.scr)
	}
}

func TestRun_ErrorsSayWhatToDo(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(*Config)
		code  int
		wants []string
	}{
		{"no token", func(c *Config) { c.Token = "" }, ExitUsage, []string{"--token or TOOLGATE_TOKEN", "toolgate token create EMAIL", "API tokens"}},
		{"bad url", func(c *Config) { c.URL = "localhost:8080" }, ExitUsage, []string{"must be an http(s) URL"}},
		{"refused token", func(c *Config) { c.Token = "tg_bad" }, ExitError, []string{"the token was refused: it is invalid, revoked or expired", "toolgate token create EMAIL"}},
		{"unreachable", func(c *Config) { c.URL = "http://127.0.0.1:1" }, ExitError, []string{"cannot reach Toolgate at http://127.0.0.1:1", "TOOLGATE_URL"}},
		{"unknown conversation", func(c *Config) { c.Conversation = "conv_nope" }, ExitError, []string{"no such route (404 route_not_found)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			tc.edit(&h.cfg)
			h.start()
			if c := h.exitCode(); c != tc.code {
				t.Errorf("exit %d, want %d", c, tc.code)
			}
			for _, w := range tc.wants {
				if !strings.Contains(h.scr.String(), w) {
					t.Errorf("output does not say %q:\n%s", w, h.scr)
				}
			}
		})
	}
}

// TestRun_LinesTypedBeforeTheCardAreNotDecisions: a "y" typed while the
// answer was still coming is not taken as the approval of a request shown
// after it.
func TestRun_LinesTypedBeforeTheCardAreNotDecisions(t *testing.T) {
	h := newHarness(t)
	h.srv.pending = []string{pendingJSON("mcpr_1", "t1")}
	h.srv.release = make(chan struct{})
	h.start()
	h.scr.expect(t, "you> ")
	h.typeLine("do things")
	h.typeLine("y") // typed ahead, before any request was shown
	time.Sleep(50 * time.Millisecond)
	close(h.srv.release)
	h.scr.expect(t, DecisionKeys+"\n> ")
	time.Sleep(200 * time.Millisecond)
	h.srv.mu.Lock()
	sent := len(h.srv.decisions)
	h.srv.mu.Unlock()
	if sent != 0 {
		t.Fatalf("a line typed before the card was taken as a decision:\n%s", h.scr)
	}
	h.typeLine("n")
	h.scr.expect(t, "All decided")
	h.srv.mu.Lock()
	defer h.srv.mu.Unlock()
	if len(h.srv.decisions) != 1 || !strings.Contains(h.srv.decisions[0], `"approve":false`) {
		t.Errorf("decisions: %q", h.srv.decisions)
	}
}

// TestRun_CardSaysWhyCountsDownAndHonoursALock: the card gives the reason
// when "ask for everything" or argument rules apply (with what the rules
// made of it) and counts down to the expiry as the web card does; a request
// that expires while asked is said to have expired and is not sent; a tool
// an admin locked at Ask offers only approve once and deny.
func TestRun_CardSaysWhyCountsDownAndHonoursALock(t *testing.T) {
	h := newHarness(t)
	soon := time.Now().Add(1500 * time.Millisecond).UTC().Format(time.RFC3339Nano)
	later := time.Now().Add(90 * time.Minute).UTC().Format(time.RFC3339Nano)
	h.srv.pending = []string{
		strings.Replace(pendingJSON("mcpr_1", "t1"), `"asks_because":{"policy":"always","source":"tool"}`,
			`"asks_because":{"policy":"always","source":"ask_everything","reason":"ask_everything"},"expires_at":"`+soon+`"`, 1),
		strings.Replace(pendingJSON("mcpr_2", "t2"), `"asks_because":{"policy":"always","source":"tool"}`,
			`"asks_because":{"policy":"always","source":"tool","reason":"rules"},"rules":{"checked":2,"decision":"ask","rule":{"scope":"tool","index":1,"when":"args.city == \"Oslo\"","decision":"ask"}},"expires_at":"`+later+`","ask_lock":"server"`, 1),
	}
	h.start()
	h.scr.expect(t, "you> ")
	h.typeLine("do things")
	h.scr.expect(t, "── Approval needed (1 of 2): t1 on demo")
	h.scr.expect(t, "  Asks because an admin turned on “ask for everything”.\n  Expires in 0:0")
	h.scr.expect(t, "\n"+DecisionKeys+"\n> ")
	h.scr.expect(t, "Expired: nobody decided in time. t1 on demo was not run; it is left out of your decisions.")
	h.scr.expect(t, "── Approval needed (2 of 2): t2 on demo")
	h.scr.expect(t, "  Asks because argument rules apply and none decided.\n  Rule 2 of this tool's rules says ask: args.city == \"Oslo\"\n  Expires in 1:29:5")
	h.scr.expect(t, "An admin locked this tool at Ask (server): approve once or deny")
	h.scr.expect(t, "\n"+LockedKeys+"\n> ")
	h.typeLine("h")
	h.scr.expect(t, "An admin locked this tool at Ask: it can only be approved once or denied.")
	h.scr.expect(t, "Please type one of y, n, r, e or s, then Enter.\n"+LockedKeys+"\n> ")
	h.typeLine("y")
	h.scr.expect(t, "All decided")
	h.scr.expect(t, "you> ")
	h.in.Close()
	h.exitCode()

	h.srv.mu.Lock()
	defer h.srv.mu.Unlock()
	if len(h.srv.decisions) != 1 || !strings.Contains(h.srv.decisions[0], `[{"approval_request_id":"mcpr_2","approve":true}]`) {
		t.Errorf("decisions sent: %q; want only approve once of mcpr_2 (mcpr_1 expired)", h.srv.decisions)
	}
}

// TestRun_CardShowsTheToolsWordsAndOnlyItsChoices: a tool an admin gave
// words and limited to approve once and deny shows the words (control
// characters stripped, as all server text) above the arguments and offers
// only [y] and [n]/[r]/[s]: a key for another choice is refused on the spot and
// nothing is sent until an offered one is typed.
func TestRun_CardShowsTheToolsWordsAndOnlyItsChoices(t *testing.T) {
	h := newHarness(t)
	h.srv.pending = []string{
		strings.Replace(pendingJSON("mcpr_1", "shell"), `"asks_because":{"policy":"always","source":"tool"}`,
			`"asks_because":{"policy":"always","source":"tool"},"approval_text":"Run shell command: rm -rf /tmp/x <b>\u001b[2J","choices":["approve_once","deny"]`, 1),
	}
	h.start()
	h.scr.expect(t, "you> ")
	h.typeLine("do things")
	h.scr.expect(t, "── Approval needed: shell on demo")
	h.scr.expect(t, "  Run shell command: rm -rf /tmp/x <b>")
	h.scr.expect(t, "  An admin limited the choices for this tool.\n  Arguments:")
	h.scr.expect(t, "\n[y] approve once  [n] deny  [r] deny with reason  [s] stop\n> ")
	h.typeLine("c")
	h.scr.expect(t, "An admin limited the choices for this tool: c is not one of them.")
	h.scr.expect(t, "Please type one of y, n, r or s, then Enter.\n[y] approve once  [n] deny  [r] deny with reason  [s] stop\n> ")
	h.typeLine("e")
	h.scr.expect(t, "e is not one of them.")
	h.typeLine("y")
	h.scr.expect(t, "All decided")
	h.scr.expect(t, "you> ")
	h.in.Close()
	h.exitCode()

	h.srv.mu.Lock()
	defer h.srv.mu.Unlock()
	if len(h.srv.decisions) != 1 || !strings.Contains(h.srv.decisions[0], `[{"approval_request_id":"mcpr_1","approve":true}]`) {
		t.Errorf("decisions sent: %q; want only approve once of mcpr_1", h.srv.decisions)
	}
	if strings.Contains(h.scr.String(), "\x1b[2J") {
		t.Error("the approval text's escape sequence reached the terminal")
	}
}
