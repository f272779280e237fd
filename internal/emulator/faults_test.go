package emulator_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/toolgate/toolgate/internal/emulator"
)

// This file checks that every behavior of doc.go ("Behaviors: timing and
// faults") can be produced on demand, from Config.Behavior, from the
// X-Emulator-Behavior header and from an [emulator: ...] directive, and
// that each looks to a client (raw HTTP or openai-go) the way the real API's
// failure would.

const faultModel = "gpt-4.1"

// faultReq is a raw request body: one user message, streamed or not, with
// optional mcp entries.
func faultReq(text string, stream bool, tools ...map[string]any) map[string]any {
	b := map[string]any{"model": faultModel, "input": text, "stream": stream}
	if len(tools) > 0 {
		b["tools"] = tools
	}
	return b
}

// timedEvent is an SSE event and when it arrived, counted from the request.
type timedEvent struct {
	sseEvent
	At time.Duration
}

// timedStream is a streamed exchange read event by event.
type timedStream struct {
	Status    int
	Header    http.Header
	HeadersAt time.Duration // when the status line and headers arrived
	Events    []timedEvent
	ReadErr   error // error reading the body (a cut stream)
}

func (s timedStream) plain() []sseEvent {
	out := make([]sseEvent, len(s.Events))
	for i, e := range s.Events {
		out[i] = e.sseEvent
	}
	return out
}

// streamTimed posts body and reads the SSE answer frame by frame, noting
// when each frame arrived.
func streamTimed(t testing.TB, e *emu, body any, headers ...string) timedStream {
	t.Helper()
	req := newRequest(t, e, body, headers...)
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST /v1/responses: %v", err)
	}
	defer resp.Body.Close()
	ts := timedStream{Status: resp.StatusCode, Header: resp.Header, HeadersAt: time.Since(start)}
	rd := bufio.NewReader(resp.Body)
	var frame strings.Builder
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			if err != io.EOF {
				ts.ReadErr = err
			} else if line != "" || frame.Len() > 0 {
				ts.ReadErr = io.ErrUnexpectedEOF // ended inside a frame
			}
			break
		}
		if line != "\n" {
			frame.WriteString(line)
			continue
		}
		if evs := parseSSE(t, []byte(frame.String())); len(evs) == 1 {
			ts.Events = append(ts.Events, timedEvent{evs[0], time.Since(start)})
		}
		frame.Reset()
	}
	return ts
}

func eventTypes(evs []sseEvent) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Type()
	}
	return out
}

func isTerminal(typ string) bool {
	return typ == "response.completed" || typ == "response.failed" || typ == "response.incomplete"
}

func hasTerminal(evs []sseEvent) bool {
	return slices.ContainsFunc(evs, func(e sseEvent) bool { return isTerminal(e.Type()) })
}

// wireResponse is the part of a response object these tests look at.
type wireResponse struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Error  *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Output []wireItem `json:"output"`
}

// wireItem is an output item, of any type.
type wireItem struct {
	ID      string          `json:"id"`
	Type    string          `json:"type"`
	Status  string          `json:"status"`
	Name    string          `json:"name"`
	Output  *string         `json:"output"`
	Error   json.RawMessage `json:"error"`
	Tools   []any           `json:"tools"`
	Content []struct {
		Text string `json:"text"`
	} `json:"content"`
}

func (r wireResponse) items(typ string) []wireItem {
	var out []wireItem
	for _, it := range r.Output {
		if it.Type == typ {
			out = append(out, it)
		}
	}
	return out
}

// eventResponse decodes the response object of a response.* event.
func eventResponse(t testing.TB, ev sseEvent) wireResponse {
	t.Helper()
	var v struct {
		Response wireResponse `json:"response"`
	}
	decodeJSON(t, ev.Data, &v)
	return v.Response
}

// eventItem decodes the item of an output_item event.
func eventItem(t testing.TB, ev sseEvent) wireItem {
	t.Helper()
	var v struct {
		Item wireItem `json:"item"`
	}
	decodeJSON(t, ev.Data, &v)
	return v.Item
}

// streamID is the response id the stream announced in response.created.
func streamID(t testing.TB, evs []sseEvent) string {
	t.Helper()
	for _, ev := range evs {
		if ev.Type() == "response.created" {
			return eventResponse(t, ev).ID
		}
	}
	t.Fatalf("no response.created in %v", eventTypes(evs))
	return ""
}

// deltasAndText returns the output_text deltas and the output_text.done text.
func deltasAndText(t testing.TB, evs []sseEvent) ([]string, string) {
	t.Helper()
	var deltas []string
	var done string
	for _, ev := range evs {
		var v struct {
			Delta string `json:"delta"`
			Text  string `json:"text"`
		}
		switch ev.Type() {
		case "response.output_text.delta":
			decodeJSON(t, ev.Data, &v)
			deltas = append(deltas, v.Delta)
		case "response.output_text.done":
			decodeJSON(t, ev.Data, &v)
			done = v.Text
		}
	}
	return deltas, done
}

// getStored is GET /v1/responses/{id}: the HTTP status and the response.
func getStored(t testing.TB, e *emu, id string) (int, wireResponse) {
	t.Helper()
	resp, err := http.Get(e.URL + "/v1/responses/" + id)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var r wireResponse
	if resp.StatusCode == http.StatusOK {
		decodeJSON(t, body, &r)
	}
	return resp.StatusCode, r
}

// countingClient is an openai-go client for e that counts the HTTP attempts
// it makes (retries included).
func countingClient(e *emu, maxRetries int, opts ...option.RequestOption) (openai.Client, *atomic.Int32) {
	n := &atomic.Int32{}
	opts = append([]option.RequestOption{
		option.WithBaseURL(e.URL + "/v1/"), option.WithAPIKey("sk-test"), option.WithMaxRetries(maxRetries),
		option.WithMiddleware(func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
			n.Add(1)
			return next(r)
		}),
	}, opts...)
	return openai.NewClient(opts...), n
}

func sdkParams(text string, tools ...responses.ToolUnionParam) responses.ResponseNewParams {
	return responses.ResponseNewParams{
		Model: faultModel,
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(text)},
		Tools: tools,
	}
}

func sdkMCP(label, url, approval string) responses.ToolUnionParam {
	return responses.ToolUnionParam{OfMcp: &responses.ToolMcpParam{
		ServerLabel:     label,
		ServerURL:       openai.String(url),
		RequireApproval: responses.ToolMcpRequireApprovalUnionParam{OfMcpToolApprovalSetting: openai.String(approval)},
	}}
}

// sdkStream is everything an openai-go stream yielded, and how it ended.
type sdkStream struct {
	Events []responses.ResponseStreamEventUnion
	Err    error
}

func (s sdkStream) types() []string {
	out := make([]string, len(s.Events))
	for i, e := range s.Events {
		out[i] = e.Type
	}
	return out
}

func (s sdkStream) terminal() bool {
	return slices.ContainsFunc(s.Events, func(e responses.ResponseStreamEventUnion) bool { return isTerminal(e.Type) })
}

func streamSDK(ctx context.Context, c openai.Client, p responses.ResponseNewParams, opts ...option.RequestOption) sdkStream {
	st := c.Responses.NewStreaming(ctx, p, opts...)
	defer st.Close()
	var out sdkStream
	for st.Next() {
		out.Events = append(out.Events, st.Current())
	}
	out.Err = st.Err()
	return out
}

// ---------------------------------------------------------------------------
// ParseBehavior

// exportedFields makes Behaviors comparable without their unexported spec.
func exportedFields(b emulator.Behavior) map[string]any {
	v := reflect.ValueOf(b)
	out := map[string]any{}
	for i := range v.NumField() {
		if f := v.Type().Field(i); f.IsExported() {
			out[f.Name] = v.Field(i).Interface()
		}
	}
	return out
}

func TestParseBehaviorReadsEveryKey(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want emulator.Behavior
	}{
		{"", emulator.Behavior{At: -1}},
		{"event-delay=20ms; deltas=3; status=503; times=2", emulator.Behavior{EventDelay: 20 * time.Millisecond, Deltas: 3, Status: 503, Times: 2, At: -1}},
		{" TTFB = 5ms , first-event-delay=7ms ", emulator.Behavior{FirstEventDelay: 7 * time.Millisecond, At: -1}}, // alias, case, spaces, ',' and last one wins
		{"delta-size=4", emulator.Behavior{DeltaSize: 4, At: -1}},
		{"status=429", emulator.Behavior{Status: 429, RetryAfter: "1", At: -1}},
		{"status=429; retry-after=0", emulator.Behavior{Status: 429, RetryAfter: "0", At: -1}},
		{"quota", emulator.Behavior{Status: 429, Quota: true, At: -1}},
		{"stall=300ms", emulator.Behavior{Stall: 300 * time.Millisecond, At: 0}},
		{"stall=1s; at=4", emulator.Behavior{Stall: time.Second, At: 4}},
		{"cut", emulator.Behavior{Cut: true, At: -1}},
		{"cut; at=2", emulator.Behavior{Cut: true, At: 2}},
		{"error-event", emulator.Behavior{ErrorEv: "server_error", At: -1}},
		{"error-event=rate_limit_exceeded", emulator.Behavior{ErrorEv: "rate_limit_exceeded", At: -1}},
		{"failed", emulator.Behavior{Failed: "server_error", At: -1}},
		{"failed=vector_store_timeout; at=3", emulator.Behavior{Failed: "vector_store_timeout", At: 3}},
		{"incomplete", emulator.Behavior{Incomp: "max_output_tokens", At: -1}},
		{"incomplete=content_filter", emulator.Behavior{Incomp: "content_filter", At: -1}},
		{"mcp-error=list", emulator.Behavior{MCPError: "list", At: -1}},
		{"mcp-error=list-in-stream", emulator.Behavior{MCPError: "list-in-stream", At: -1}},
		{"mcp-error=call", emulator.Behavior{MCPError: "call", At: -1}},
	} {
		got, err := emulator.ParseBehavior(tc.spec)
		if err != nil {
			t.Errorf("ParseBehavior(%q): %v", tc.spec, err)
			continue
		}
		if g, w := exportedFields(got), exportedFields(tc.want); !reflect.DeepEqual(g, w) {
			t.Errorf("ParseBehavior(%q) =\n %v\nwant\n %v", tc.spec, g, w)
		}
	}
}

func TestParseBehaviorRejectsUnknownKeysAndBadValues(t *testing.T) {
	for _, tc := range []struct{ spec, wantErr string }{
		{"bogus=1", `unknown behavior "bogus"`},
		{"event-delay=20ms; evnt-delay=5ms", `unknown behavior "evnt-delay"`},
		{"status=200", "400-599"},
		{"status=abc", `"status=abc"`},
		{"deltas=0", `"deltas=0"`},
		{"delta-size=-1", `"delta-size=-1"`},
		{"event-delay=fast", "duration"},
		{"first-event-delay=-5ms", "duration"},
		{"stall=forever", "duration"},
		{"cut=yes", "takes no value"},
		{"quota=yes", "takes no value"},
		{"quota; status=503", "cannot go with status=503"},
		{"mcp-error=tools", "list, list-in-stream or call"},
		{"at=-1", ">= 0"},
		{"retry-after=-1", `"retry-after=-1"`},
		{"times=0", `"times=0"`},
	} {
		_, err := emulator.ParseBehavior(tc.spec)
		if err == nil {
			t.Errorf("ParseBehavior(%q) = nil error, want one mentioning %s", tc.spec, tc.wantErr)
			continue
		}
		if !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("ParseBehavior(%q) = %q, want it to mention %s", tc.spec, err, tc.wantErr)
		}
	}
	if _, err := emulator.New(emulator.Config{Behavior: "stauts=503"}); err == nil || !strings.Contains(err.Error(), "stauts") {
		t.Errorf("New with a misspelt Config.Behavior: err = %v, want an error naming the key", err)
	}
}

// ---------------------------------------------------------------------------
// HTTP status faults

func TestFaultStatus429HasRetryAfterAndRateLimitBody(t *testing.T) {
	t.Parallel()
	e := startEmulator(t, emulator.Config{})
	for _, tc := range []struct{ behavior, retryAfter string }{
		{"status=429", "1"},
		{"status=429; retry-after=7", "7"},
	} {
		r := post(t, e, faultReq("hello", false), emulator.BehaviorHeader, tc.behavior)
		if r.Status != http.StatusTooManyRequests {
			t.Fatalf("%s: status %d, want 429; body %s", tc.behavior, r.Status, r.Body)
		}
		if got := r.Header.Get("Retry-After"); got != tc.retryAfter {
			t.Errorf("%s: Retry-After %q, want %q", tc.behavior, got, tc.retryAfter)
		}
		w := errorBody(t, r.Body)
		if w.Error.Code == nil || *w.Error.Code != "rate_limit_exceeded" {
			t.Errorf("%s: error.code %v, want rate_limit_exceeded; body %s", tc.behavior, w.Error.Code, r.Body)
		}
	}
}

func TestFaultStatus429RetriedByOpenAIClientSucceedsOnThirdAttempt(t *testing.T) {
	t.Parallel()
	e := startEmulator(t, emulator.Config{})
	c, attempts := countingClient(e, 2)
	// retry-after=0 lets the client retry at once.
	resp, err := c.Responses.New(t.Context(), sdkParams("hello"), option.WithHeader(emulator.BehaviorHeader, "status=429; retry-after=0; times=2"))
	if err != nil {
		t.Fatalf("with 2 retries and times=2 the third attempt should succeed: %v", err)
	}
	if resp.Status != responses.ResponseStatusCompleted || resp.OutputText() == "" {
		t.Errorf("status %q, text %q: want a completed answer", resp.Status, resp.OutputText())
	}
	if n := attempts.Load(); n != 3 {
		t.Errorf("the client made %d attempts, want 3 (two 429s, then success)", n)
	}

	// One more 429 than the client retries: it gives up with the 429.
	c, attempts = countingClient(e, 2)
	_, err = c.Responses.New(t.Context(), sdkParams("hello"), option.WithHeader(emulator.BehaviorHeader, "status=429; retry-after=0; times=3"))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusTooManyRequests || apiErr.Code != "rate_limit_exceeded" {
		t.Fatalf("times=3 with 2 retries: err = %v, want *openai.Error 429 rate_limit_exceeded", err)
	}
	if n := attempts.Load(); n != 3 {
		t.Errorf("the client made %d attempts, want 3", n)
	}
}

func TestFaultStatus5xxFromConfigHeaderAndDirective(t *testing.T) {
	t.Parallel()
	// Config.Behavior, as the binary's -behavior flag sets it.
	e := startEmulator(t, emulator.Config{Behavior: "status=503"})
	_, err := e.Client.Responses.New(t.Context(), sdkParams("hello"))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("Config status=503: err = %v, want *openai.Error 503", err)
	}
	if apiErr.Type != "server_error" {
		t.Errorf("error.type %q, want server_error", apiErr.Type)
	}

	healthy := startEmulator(t, emulator.Config{})
	r := post(t, healthy, faultReq("hello", true), emulator.BehaviorHeader, "status=500")
	if r.Status != http.StatusInternalServerError || len(r.Events) != 0 {
		t.Fatalf("header status=500: status %d with %d events, want a plain 500", r.Status, len(r.Events))
	}
	if w := errorBody(t, r.Body); w.Error.Type != "server_error" {
		t.Errorf("error.type %q, want server_error", w.Error.Type)
	}

	r = post(t, healthy, faultReq("[emulator: status=503] hello", false))
	if r.Status != http.StatusServiceUnavailable {
		t.Fatalf("directive status=503: status %d, want 503; body %s", r.Status, r.Body)
	}
	errorBody(t, r.Body)

	// The faults came from the request, not from the server.
	if r := post(t, healthy, faultReq("hello", false)); r.Status != http.StatusOK {
		t.Errorf("a request without a behavior: status %d, want 200", r.Status)
	}
}

func TestFaultTimesLimitsFaultsToFirstNRequests(t *testing.T) {
	t.Parallel()
	e := startEmulator(t, emulator.Config{Behavior: "status=503; times=2"})
	var got []int
	for range 4 {
		got = append(got, post(t, e, faultReq("hello", false)).Status)
	}
	if want := []int{503, 503, 200, 200}; !slices.Equal(got, want) {
		t.Errorf("statuses %v, want %v", got, want)
	}

	// Timing keeps applying after the faults ran out.
	e = startEmulator(t, emulator.Config{})
	h := "cut; deltas=2; times=1"
	if r := post(t, e, faultReq("hello", true), emulator.BehaviorHeader, h); r.ReadErr == nil {
		t.Errorf("first request with %q was not cut", h)
	}
	r := post(t, e, faultReq("hello", true), emulator.BehaviorHeader, h)
	if r.ReadErr != nil || !hasTerminal(r.Events) {
		t.Fatalf("second request with %q: read error %v, events %v: want a whole stream", h, r.ReadErr, eventTypes(r.Events))
	}
	if d, _ := deltasAndText(t, r.Events); len(d) != 2 {
		t.Errorf("second request: %d deltas, want 2 (deltas still applies)", len(d))
	}
}

func TestFaultInvalidBehaviorIs400WithClearMessage(t *testing.T) {
	t.Parallel()
	e := startEmulator(t, emulator.Config{})
	for _, tc := range []struct{ header, text, want string }{
		{"evnt-delay=20ms", "hello", `unknown behavior "evnt-delay"`},
		{"status=200", "hello", "status=200"},
		{"deltas=many", "hello", "deltas=many"},
		{"", "[emulator: cutt] hello", `unknown behavior "cutt"`},
	} {
		var hdr []string
		if tc.header != "" {
			hdr = []string{emulator.BehaviorHeader, tc.header}
		}
		r := post(t, e, faultReq(tc.text, true), hdr...)
		if r.Status != http.StatusBadRequest {
			t.Errorf("header %q text %q: status %d, want 400", tc.header, tc.text, r.Status)
			continue
		}
		w := errorBody(t, r.Body)
		if w.Error.Type != "invalid_request_error" || !strings.Contains(w.Error.Message, tc.want) {
			t.Errorf("header %q text %q: error %+v, want invalid_request_error mentioning %s", tc.header, tc.text, w.Error, tc.want)
		}
		where := emulator.BehaviorHeader
		if tc.header == "" {
			where = "directive"
		}
		if !strings.Contains(w.Error.Message, where) {
			t.Errorf("message %q does not say the fault is in the %s", w.Error.Message, where)
		}
	}
}

// ---------------------------------------------------------------------------
// Timing

func TestBehaviorFirstEventDelayAndEventDelay(t *testing.T) {
	t.Parallel()
	const delay = 80 * time.Millisecond
	e := startEmulator(t, emulator.Config{})

	// Header, streamed: no headers before the delay.
	s := streamTimed(t, e, faultReq("hello", true), emulator.BehaviorHeader, "first-event-delay=80ms")
	if s.Status != http.StatusOK || !hasTerminal(s.plain()) {
		t.Fatalf("status %d, events %v", s.Status, eventTypes(s.plain()))
	}
	if s.HeadersAt < delay {
		t.Errorf("first-event-delay=80ms: headers after %v", s.HeadersAt)
	}

	// Directive, not streamed.
	start := time.Now()
	if r := post(t, e, faultReq("[emulator: first-event-delay=80ms] hello", false)); r.Status != http.StatusOK {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	if d := time.Since(start); d < delay {
		t.Errorf("non-streamed first-event-delay=80ms answered after %v", d)
	}

	// Not streamed, a stall adds to first-event-delay.
	start = time.Now()
	if r := post(t, e, faultReq("hello", false), emulator.BehaviorHeader, "first-event-delay=50ms; stall=50ms"); r.Status != http.StatusOK {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Errorf("non-streamed first-event-delay=50ms; stall=50ms answered after %v, want at least 100ms", d)
	}

	// Config: a pause between every two events.
	const gap = 15 * time.Millisecond
	slow := startEmulator(t, emulator.Config{Behavior: "event-delay=15ms"})
	s = streamTimed(t, slow, faultReq("hello", true))
	if n := len(s.Events); n < 5 || !hasTerminal(s.plain()) {
		t.Fatalf("events %v", eventTypes(s.plain()))
	}
	// Arrival times jitter, so only the whole stream is bounded: n events
	// have n-1 pauses.
	if n, last := len(s.Events), s.Events[len(s.Events)-1].At; last < time.Duration(n-1)*gap {
		t.Errorf("event-delay=15ms: %d events arrived within %v, want at least %v", n, last, time.Duration(n-1)*gap)
	}
}

func TestBehaviorDeltasGivesExactlyNDeltas(t *testing.T) {
	t.Parallel()
	plain := startEmulator(t, emulator.Config{})
	twoByConfig := startEmulator(t, emulator.Config{Behavior: "deltas=2"})
	for _, tc := range []struct {
		name   string
		e      *emu
		header string
		text   string
		want   int
	}{
		{"header 1", plain, "deltas=1", "hello", 1},
		{"header 3", plain, "deltas=3", "hello", 3},
		{"header 6", plain, "deltas=6", "hello there", 6},
		{"header 7", plain, "deltas=7", "hi", 7},
		{"header 40", plain, "deltas=40", "hello", 40},
		{"config", twoByConfig, "", "hello", 2},
		{"header refines config", twoByConfig, "deltas=5", "hello", 5},
		{"directive refines config", twoByConfig, "", "[emulator: deltas=4] hello", 4},
		{"directive refines header", twoByConfig, "deltas=5", "[emulator: deltas=4] hello", 4},
	} {
		var hdr []string
		if tc.header != "" {
			hdr = []string{emulator.BehaviorHeader, tc.header}
		}
		r := post(t, tc.e, faultReq(tc.text, true), hdr...)
		deltas, done := deltasAndText(t, r.Events)
		if len(deltas) != tc.want {
			t.Errorf("%s: %d output_text.delta events, want %d", tc.name, len(deltas), tc.want)
		}
		if done == "" || strings.Join(deltas, "") != done {
			t.Errorf("%s: deltas %q do not join to the text %q", tc.name, deltas, done)
		}
	}
}

func TestBehaviorDeltaSizeSplitsByRunes(t *testing.T) {
	t.Parallel()
	e := startEmulator(t, emulator.Config{})
	const k = 7
	r := post(t, e, faultReq("Grüße aus Köln ☃☃☃", true), emulator.BehaviorHeader, "delta-size=7")
	deltas, done := deltasAndText(t, r.Events)
	if len(deltas) < 2 || strings.Join(deltas, "") != done {
		t.Fatalf("deltas %q do not join to the text %q", deltas, done)
	}
	wider := false
	for i, d := range deltas {
		n := utf8.RuneCountInString(d)
		if !utf8.ValidString(d) || n > k || (i < len(deltas)-1 && n != k) {
			t.Errorf("delta %d %q: %d runes, want %d (at most %d for the last), valid UTF-8", i, d, n, k, k)
		}
		wider = wider || len(d) > k
	}
	if !wider {
		t.Errorf("no delta is longer than %d bytes: the split is not by characters (deltas %q)", k, deltas)
	}
}

// ---------------------------------------------------------------------------
// Stall

func TestFaultStallBeforeFirstByteClientTimesOutWithoutHeaders(t *testing.T) {
	t.Parallel()
	e := startEmulator(t, emulator.Config{})
	b, _ := json.Marshal(faultReq("hello", true))

	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.URL+"/v1/responses", bytes.NewReader(b))
	req.Header.Set(emulator.BehaviorHeader, "stall=300ms")
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("stall=300ms with a 100ms client timeout: got headers (status %d)", resp.StatusCode)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want the client's deadline", err)
	}

	// openai-go sees the same: no event, the deadline as the error.
	ctx2, cancel2 := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel2()
	st := streamSDK(ctx2, e.Client, sdkParams("[emulator: stall=300ms] hello"))
	if len(st.Events) != 0 || !errors.Is(st.Err, context.DeadlineExceeded) {
		t.Errorf("openai-go: %d events, err %v; want none and the deadline", len(st.Events), st.Err)
	}

	// A patient client gets the whole answer, late.
	s := streamTimed(t, e, faultReq("hello", true), emulator.BehaviorHeader, "stall=300ms")
	if s.HeadersAt < 300*time.Millisecond || !hasTerminal(s.plain()) {
		t.Errorf("headers after %v, events %v: want headers after the stall and a whole stream", s.HeadersAt, eventTypes(s.plain()))
	}
}

func TestFaultStallMidStreamPausesAfterNEvents(t *testing.T) {
	t.Parallel()
	const stall = 250 * time.Millisecond
	e := startEmulator(t, emulator.Config{})
	s := streamTimed(t, e, faultReq("hello", true), emulator.BehaviorHeader, "stall=250ms; at=3")
	if s.ReadErr != nil || !hasTerminal(s.plain()) || len(s.Events) < 5 {
		t.Fatalf("read error %v, events %v: a stall should not end the stream", s.ReadErr, eventTypes(s.plain()))
	}
	// Lower bounds only, loose for arrival jitter: event 3 is late, and the
	// pause sits between events 2 and 3 (elsewhere that gap is ~0).
	if s.Events[3].At < stall {
		t.Errorf("event 3 arrived after %v, want after the %v stall", s.Events[3].At, stall)
	}
	if gap := s.Events[3].At - s.Events[2].At; gap < stall/2 {
		t.Errorf("event 3 came %v after event 2, want the %v pause there", gap, stall)
	}
}

// ---------------------------------------------------------------------------
// Cut

func TestFaultCutStreamEndsWithoutTerminalEvent(t *testing.T) {
	t.Parallel()
	e := startEmulator(t, emulator.Config{})
	healthy := eventTypes(post(t, e, faultReq("hello", true)).Events)
	if len(healthy) < 6 || healthy[len(healthy)-1] != "response.completed" {
		t.Fatalf("healthy stream: %v", healthy)
	}

	r := post(t, e, faultReq("hello", true), emulator.BehaviorHeader, "cut")
	if r.ReadErr == nil {
		t.Errorf("cut: the body ended cleanly, want a dropped connection")
	}
	if got, want := eventTypes(r.Events), healthy[:len(healthy)-1]; !slices.Equal(got, want) {
		t.Errorf("cut: events %v, want everything but the terminal event %v", got, want)
	}
	// The turn still completed and was stored.
	if code, stored := getStored(t, e, streamID(t, r.Events)); code != http.StatusOK || stored.Status != "completed" {
		t.Errorf("GET after a cut: %d, status %q; want the stored completed response", code, stored.Status)
	}

	r = post(t, e, faultReq("[emulator: cut; at=3] hello", true))
	if r.ReadErr == nil {
		t.Errorf("cut at=3: the body ended cleanly")
	}
	if got, want := eventTypes(r.Events), healthy[:3]; !slices.Equal(got, want) {
		t.Errorf("cut at=3: events %v, want %v", got, want)
	}

	// openai-go: the stream ends with an error (the connection dropped
	// inside the chunked body), after the events before the cut and without
	// a terminal event.
	st := streamSDK(t.Context(), e.Client, sdkParams("hello"), option.WithHeader(emulator.BehaviorHeader, "cut; at=4"))
	t.Logf("openai-go on a cut stream: %d events %v, Err() = %v", len(st.Events), st.types(), st.Err)
	if st.terminal() || len(st.Events) != 4 {
		t.Errorf("openai-go: events %v, want the first 4 and no terminal event", st.types())
	}
	if !errors.Is(st.Err, io.ErrUnexpectedEOF) {
		t.Errorf("openai-go: Err() = %v, want unexpected EOF", st.Err)
	}
}

func TestFaultCutNonStreamingBodyIsTruncated(t *testing.T) {
	t.Parallel()
	e := startEmulator(t, emulator.Config{Behavior: "cut"})
	r := post(t, e, faultReq("hello", false))
	if r.ReadErr == nil {
		t.Errorf("the body ended cleanly (%d bytes), want a dropped connection", len(r.Body))
	}
	if r.Status != http.StatusOK || len(r.Body) == 0 || json.Valid(r.Body) {
		t.Errorf("status %d, body %q: want 200 and a part of the JSON", r.Status, r.Body)
	}
	if _, err := e.Client.Responses.New(t.Context(), sdkParams("hello")); err == nil {
		t.Errorf("openai-go: no error for a cut body")
	}
}

// ---------------------------------------------------------------------------
// Error event, failed, incomplete

func TestFaultErrorEventEndsStreamWithoutTerminalEvent(t *testing.T) {
	t.Parallel()
	e := startEmulator(t, emulator.Config{})
	healthy := eventTypes(post(t, e, faultReq("hello", true)).Events)

	for _, tc := range []struct {
		name, header, text, code string
		before                   []string
	}{
		{"header default", "error-event", "hello", "server_error", healthy[:len(healthy)-1]},
		{"directive at=2", "", "[emulator: error-event=rate_limit_exceeded; at=2] hello", "rate_limit_exceeded", healthy[:2]},
	} {
		var hdr []string
		if tc.header != "" {
			hdr = []string{emulator.BehaviorHeader, tc.header}
		}
		r := post(t, e, faultReq(tc.text, true), hdr...)
		if r.ReadErr != nil || r.Status != http.StatusOK {
			t.Fatalf("%s: status %d, read error %v: want a clean stream", tc.name, r.Status, r.ReadErr)
		}
		types := eventTypes(r.Events)
		if len(types) == 0 || types[len(types)-1] != "error" || !slices.Equal(types[:len(types)-1], tc.before) {
			t.Fatalf("%s: events %v, want %v then error", tc.name, types, tc.before)
		}
		last := r.Events[len(r.Events)-1]
		var ev map[string]any
		decodeJSON(t, last.Data, &ev)
		if ev["code"] != tc.code || ev["message"] == "" || ev["message"] == nil {
			t.Errorf("%s: error event %s, want code %s and a message", tc.name, last.Data, tc.code)
		}
		if _, ok := ev["param"]; !ok {
			t.Errorf("%s: error event %s has no param key", tc.name, last.Data)
		}
		if last.Event != "error" {
			t.Errorf("%s: SSE event name %q, want error", tc.name, last.Event)
		}
	}

	// openai-go yields it as a ResponseErrorEvent and then ends without error.
	st := streamSDK(t.Context(), e.Client, sdkParams("hello"), option.WithHeader(emulator.BehaviorHeader, "error-event=server_busy"))
	t.Logf("openai-go on an error event: %v, Err() = %v", st.types(), st.Err)
	if len(st.Events) == 0 || st.terminal() {
		t.Fatalf("openai-go: events %v", st.types())
	}
	ev, ok := st.Events[len(st.Events)-1].AsAny().(responses.ResponseErrorEvent)
	if !ok || ev.Code != "server_busy" || ev.Message == "" {
		t.Errorf("openai-go: last event %T %+v, want ResponseErrorEvent with code server_busy", st.Events[len(st.Events)-1].AsAny(), ev)
	}
	if st.Err != nil {
		t.Errorf("openai-go: Err() = %v after a well-formed error event", st.Err)
	}
}

func TestFaultErrorEventNonStreamingIsHTTP500(t *testing.T) {
	t.Parallel()
	e := startEmulator(t, emulator.Config{})
	r := post(t, e, faultReq("hello", false), emulator.BehaviorHeader, "error-event")
	if r.Status != http.StatusInternalServerError {
		t.Fatalf("status %d, want 500; body %s", r.Status, r.Body)
	}
	if w := errorBody(t, r.Body); w.Error.Type != "server_error" {
		t.Errorf("error.type %q, want server_error", w.Error.Type)
	}
	_, err := e.Client.Responses.New(t.Context(), sdkParams("[emulator: error-event] hello"))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusInternalServerError {
		t.Errorf("openai-go: err = %v, want *openai.Error 500", err)
	}
}

func TestFaultFailedEndsWithResponseFailedAndStoresIt(t *testing.T) {
	t.Parallel()
	e := startEmulator(t, emulator.Config{})
	r := post(t, e, faultReq("hello", true), emulator.BehaviorHeader, "failed=vector_store_timeout")
	types := eventTypes(r.Events)
	if r.ReadErr != nil || len(types) == 0 || types[len(types)-1] != "response.failed" || slices.Contains(types, "response.completed") {
		t.Fatalf("read error %v, events %v: want a clean stream ending in response.failed", r.ReadErr, types)
	}
	last := eventResponse(t, r.Events[len(r.Events)-1])
	if last.Status != "failed" || last.Error == nil || last.Error.Code != "vector_store_timeout" || last.Error.Message == "" {
		t.Errorf("response.failed carries %+v", last)
	}
	code, stored := getStored(t, e, streamID(t, r.Events))
	if code != http.StatusOK || stored.Status != "failed" || stored.Error == nil || stored.Error.Code != "vector_store_timeout" {
		t.Errorf("GET: %d %+v, want the stored failed response with its error", code, stored)
	}

	// at=N: response.failed is event N.
	r = post(t, e, faultReq("[emulator: failed; at=2] hello", true))
	if types := eventTypes(r.Events); len(types) != 3 || types[2] != "response.failed" {
		t.Errorf("failed at=2: events %v", types)
	}

	// openai-go: a ResponseFailedEvent, then the end.
	st := streamSDK(t.Context(), e.Client, sdkParams("[emulator: failed] hello"))
	if st.Err != nil || len(st.Events) == 0 {
		t.Fatalf("openai-go: %v, %v", st.types(), st.Err)
	}
	fe, ok := st.Events[len(st.Events)-1].AsAny().(responses.ResponseFailedEvent)
	if !ok || fe.Response.Status != responses.ResponseStatusFailed || fe.Response.Error.Code != "server_error" {
		t.Errorf("openai-go: last event %+v, want ResponseFailedEvent with error code server_error", st.Events[len(st.Events)-1].AsAny())
	}

	// Not streamed: a 200 with a failed response.
	resp, err := e.Client.Responses.New(t.Context(), sdkParams("hello"), option.WithHeader(emulator.BehaviorHeader, "failed"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != responses.ResponseStatusFailed || resp.Error.Code != "server_error" {
		t.Errorf("non-streamed failed: status %q, error %+v", resp.Status, resp.Error)
	}
	if code, stored := getStored(t, e, resp.ID); code != http.StatusOK || stored.Status != "failed" {
		t.Errorf("GET non-streamed failed: %d %q", code, stored.Status)
	}
}

func TestFaultIncompleteCutsTheAnswerInHalf(t *testing.T) {
	t.Parallel()
	e := startEmulator(t, emulator.Config{})
	_, full := deltasAndText(t, post(t, e, faultReq("hello", true)).Events)

	r := post(t, e, faultReq("hello", true), emulator.BehaviorHeader, "incomplete")
	types := eventTypes(r.Events)
	if r.ReadErr != nil || len(types) == 0 || types[len(types)-1] != "response.incomplete" || slices.Contains(types, "response.completed") {
		t.Fatalf("read error %v, events %v: want a stream ending in response.incomplete", r.ReadErr, types)
	}
	_, text := deltasAndText(t, r.Events)
	if text == "" || !strings.HasPrefix(full, text) || utf8.RuneCountInString(text) != utf8.RuneCountInString(full)/2 {
		t.Errorf("incomplete text %q, want the first half of %q", text, full)
	}
	final := eventResponse(t, r.Events[len(r.Events)-1])
	if final.Status != "incomplete" || final.IncompleteDetails == nil || final.IncompleteDetails.Reason != "max_output_tokens" {
		t.Errorf("response.incomplete carries status %q, incomplete_details %+v", final.Status, final.IncompleteDetails)
	}
	msgs := final.items("message")
	if len(msgs) != 1 || msgs[0].Status != "incomplete" || len(msgs[0].Content) != 1 || msgs[0].Content[0].Text != text {
		t.Errorf("final message items %+v, want one incomplete message with the cut text", msgs)
	}
	for _, ev := range r.Events {
		if ev.Type() == "response.output_item.done" {
			if it := eventItem(t, ev); it.Type == "message" && it.Status != "incomplete" {
				t.Errorf("output_item.done message has status %q, want incomplete", it.Status)
			}
		}
	}

	// Not streamed, via Config, with another reason.
	e2 := startEmulator(t, emulator.Config{Behavior: "incomplete=content_filter"})
	resp, err := e2.Client.Responses.New(t.Context(), sdkParams("hello"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != responses.ResponseStatusIncomplete || resp.IncompleteDetails.Reason != "content_filter" {
		t.Errorf("non-streamed: status %q, reason %q", resp.Status, resp.IncompleteDetails.Reason)
	}
	if got := resp.OutputText(); got != text {
		t.Errorf("non-streamed text %q, want %q", got, text)
	}
}

// ---------------------------------------------------------------------------
// MCP errors

func TestFaultMCPErrorListIsHTTP424(t *testing.T) {
	t.Parallel()
	e := startEmulator(t, emulator.Config{})
	m := startTestMCP(t, "")
	r := post(t, e, faultReq("echo {\"text\": \"hi\"}", true, mcpEntry("tests", m.URL, "never")), emulator.BehaviorHeader, "mcp-error=list")
	if r.Status != http.StatusFailedDependency || len(r.Events) != 0 {
		t.Fatalf("status %d with %d events, want a plain 424; body %s", r.Status, len(r.Events), r.Body)
	}
	w := errorBody(t, r.Body)
	if w.Error.Code == nil || *w.Error.Code != "http_error" || !strings.Contains(w.Error.Message, "tests") {
		t.Errorf("424 body %s: want code http_error and the server label in the message", r.Body)
	}
	_, err := e.Client.Responses.New(t.Context(), sdkParams("[emulator: mcp-error=list] hello", sdkMCP("tests", m.URL, "never")))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusFailedDependency {
		t.Errorf("openai-go: err = %v, want *openai.Error 424", err)
	}
	if n := m.Calls("echo"); n != 0 {
		t.Errorf("echo ran %d times", n)
	}
}

func TestFaultMCPErrorListInStreamFailsTheListItem(t *testing.T) {
	t.Parallel()
	e := startEmulator(t, emulator.Config{})
	m := startTestMCP(t, "")
	r := post(t, e, faultReq("echo {\"text\": \"hi\"}", true, mcpEntry("tests", m.URL, "never")), emulator.BehaviorHeader, "mcp-error=list-in-stream")
	types := eventTypes(r.Events)
	if r.Status != http.StatusOK || !slices.Contains(types, "response.mcp_list_tools.failed") || slices.Contains(types, "response.mcp_list_tools.completed") {
		t.Fatalf("status %d, events %v: want response.mcp_list_tools.failed", r.Status, types)
	}
	if slices.ContainsFunc(types, func(s string) bool { return strings.HasPrefix(s, "response.mcp_call") }) {
		t.Errorf("a tool was called although listing failed: %v", types)
	}
	if types[len(types)-1] != "response.completed" {
		t.Errorf("last event %s, want response.completed", types[len(types)-1])
	}
	var listDone *wireItem
	for _, ev := range r.Events {
		if ev.Type() == "response.output_item.done" {
			if it := eventItem(t, ev); it.Type == "mcp_list_tools" {
				listDone = &it
			}
		}
	}
	var errStr string
	if listDone == nil || json.Unmarshal(listDone.Error, &errStr) != nil || errStr == "" || len(listDone.Tools) != 0 {
		t.Fatalf("mcp_list_tools item %+v: want an error string and no tools", listDone)
	}
	final := eventResponse(t, r.Events[len(r.Events)-1])
	if len(final.items("mcp_call")) != 0 {
		t.Errorf("final output has mcp_call items: %+v", final.Output)
	}
	if n := m.Calls("echo"); n != 0 {
		t.Errorf("echo ran %d times", n)
	}
}

func TestFaultMCPErrorCallFailsWithHTTPErrorAndToolDoesNotRun(t *testing.T) {
	t.Parallel()
	e := startEmulator(t, emulator.Config{})
	m := startTestMCP(t, "")
	body := faultReq("echo {\"text\": \"hi\"}", true, mcpEntry("tests", m.URL, "never"))
	r := post(t, e, body, emulator.BehaviorHeader, "mcp-error=call")
	types := eventTypes(r.Events)
	if !slices.Contains(types, "response.mcp_call.failed") || slices.Contains(types, "response.mcp_call.completed") {
		t.Fatalf("events %v: want response.mcp_call.failed", types)
	}
	if types[len(types)-1] != "response.completed" {
		t.Errorf("last event %s, want response.completed", types[len(types)-1])
	}
	final := eventResponse(t, r.Events[len(r.Events)-1])
	calls := final.items("mcp_call")
	if len(calls) != 1 || calls[0].Status != "failed" {
		t.Fatalf("mcp_call items %+v, want one failed call", calls)
	}
	var ce struct {
		Type    string `json:"type"`
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(calls[0].Error, &ce); err != nil || ce.Type != "http_error" || ce.Code < 400 || ce.Message == "" {
		t.Errorf("mcp_call.error %s, want an http_error with a code and message", calls[0].Error)
	}
	if n := m.Calls("echo"); n != 0 {
		t.Errorf("echo ran %d times on the MCP server, want 0", n)
	}

	// Control: without the fault the same request runs the tool.
	if r := post(t, e, body); !slices.Contains(eventTypes(r.Events), "response.mcp_call.completed") || m.Calls("echo") != 1 {
		t.Errorf("healthy request: events %v, echo ran %d times", eventTypes(r.Events), m.Calls("echo"))
	}

	// openai-go sees the error object on the item.
	resp, err := e.Client.Responses.New(t.Context(), sdkParams("[emulator: mcp-error=call] echo {\"text\": \"hi\"}", sdkMCP("tests", m.URL, "never")))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, it := range resp.Output {
		if c, ok := it.AsAny().(responses.ResponseOutputItemMcpCall); ok {
			found = true
			if c.Error.Type != "http_error" || c.Status != "failed" {
				t.Errorf("openai-go mcp_call: status %q, error %+v", c.Status, c.Error)
			}
		}
	}
	if !found || m.Calls("echo") != 1 {
		t.Errorf("openai-go: mcp_call found %v, echo ran %d times (want 1, from the control)", found, m.Calls("echo"))
	}
}

// ---------------------------------------------------------------------------
// A client that leaves

func TestDisconnectMidStreamStillRunsToolAndStoresResponse(t *testing.T) {
	t.Parallel()
	e := startEmulator(t, emulator.Config{})
	m := startTestMCP(t, "")
	b, _ := json.Marshal(faultReq("echo {\"text\": \"still here\"}", true, mcpEntry("tests", m.URL, "never")))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.URL+"/v1/responses", bytes.NewReader(b))
	// The turn is slow (event-delay) and stalls at event 5, before its tool
	// call, until the client leaves: however late this client reads, the
	// tool cannot run before it disconnects.
	req.Header.Set(emulator.BehaviorHeader, "event-delay=20ms; stall=10s; at=5")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	rd := bufio.NewReader(resp.Body)
	var frame strings.Builder
	var got []sseEvent
	for len(got) < 3 {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the stream: %v after %d events", err, len(got))
		}
		if line != "\n" {
			frame.WriteString(line)
			continue
		}
		got = append(got, parseSSE(t, []byte(frame.String()))...)
		frame.Reset()
	}
	id := streamID(t, got)
	// Checked before the client leaves: once it has, the stall ends and the
	// turn goes on at once (it used to be checked after, and lost that race
	// now and then).
	if n := m.Calls("echo"); n != 0 {
		t.Fatalf("echo already ran before the client left (%d): the test does not test a disconnect", n)
	}
	cancel() // the client goes away after 3 of ~20 events
	resp.Body.Close()

	deadline := time.Now().Add(5 * time.Second)
	var stored wireResponse
	for {
		code, r := getStored(t, e, id)
		if code == http.StatusOK {
			stored = r
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("response %s was not stored within 5s of the client leaving (last GET: %d): the turn stopped, or its stall outlived the client", id, code)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := m.Calls("echo"); n != 1 {
		t.Errorf("echo ran %d times, want 1: the turn should outlive its client", n)
	}
	calls := stored.items("mcp_call")
	if stored.Status != "completed" || len(calls) != 1 || calls[0].Output == nil || *calls[0].Output != "echo: still here" {
		t.Errorf("stored response: status %q, mcp_call %+v; want completed with the tool's output", stored.Status, calls)
	}
}

// ---------------------------------------------------------------------------
// The demo MCP server: a destructive tool waits for approval

func TestDemoDestructiveToolRunsOnlyAfterApproval(t *testing.T) {
	t.Parallel()
	d := startDemo(t)
	e := startEmulator(t, emulator.Config{})
	c := e.Client
	ctx := t.Context()
	params := sdkParams(`delete_forecast {"city": "Oslo"}`, sdkMCP("weather", d.URL, "always"))

	// askApproval sends turn 1 and returns its id and its one approval request.
	askApproval := func() (string, responses.ResponseOutputItemMcpApprovalRequest) {
		t.Helper()
		resp, err := c.Responses.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		var reqs []responses.ResponseOutputItemMcpApprovalRequest
		for _, it := range resp.Output {
			if r, ok := it.AsAny().(responses.ResponseOutputItemMcpApprovalRequest); ok {
				reqs = append(reqs, r)
			}
			if _, ok := it.AsAny().(responses.ResponseOutputItemMcpCall); ok {
				t.Errorf("turn 1 called a tool without approval")
			}
		}
		if len(reqs) != 1 || reqs[0].Name != "delete_forecast" || reqs[0].ServerLabel != "weather" || !strings.Contains(reqs[0].Arguments, "Oslo") {
			t.Fatalf("turn 1 approval requests %+v, want one for delete_forecast on Oslo", reqs)
		}
		return resp.ID, reqs[0]
	}
	answer := func(req responses.ResponseOutputItemMcpApprovalRequest, prevID string, approve bool, reason string) *responses.Response {
		t.Helper()
		item := responses.ResponseInputItemParamOfMcpApprovalResponse(req.ID, approve)
		if reason != "" {
			item.OfMcpApprovalResponse.Reason = openai.String(reason)
		}
		p := params
		p.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{item}}
		p.PreviousResponseID = openai.String(prevID)
		resp, err := c.Responses.New(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	osloThere := func(when string, wantCalls int) {
		t.Helper()
		st := d.State(t)
		if _, ok := st.Forecasts["Oslo"]; !ok {
			t.Errorf("%s: Oslo is gone", when)
		}
		if n := st.Calls["delete_forecast"]; n != wantCalls {
			t.Errorf("%s: delete_forecast called %d times, want %d", when, n, wantCalls)
		}
	}

	// Turn 1 asks; nothing has happened yet.
	id1, req1 := askApproval()
	osloThere("after turn 1", 0)

	// Deny: nothing happens; the answer quotes the reason.
	denied := answer(req1, id1, false, "not today")
	if txt := denied.OutputText(); !strings.Contains(txt, "not today") {
		t.Errorf("denial answer %q does not quote the reason", txt)
	}
	for _, it := range denied.Output {
		if _, ok := it.AsAny().(responses.ResponseOutputItemMcpCall); ok {
			t.Errorf("a denied request produced an mcp_call")
		}
	}
	osloThere("after the denial", 0)

	// A new request, approved: now the forecast is deleted, once.
	id2, req2 := askApproval()
	osloThere("after the second request", 0)
	approved := answer(req2, id2, true, "")
	var call *responses.ResponseOutputItemMcpCall
	for _, it := range approved.Output {
		if cl, ok := it.AsAny().(responses.ResponseOutputItemMcpCall); ok {
			call = &cl
		}
	}
	if call == nil || call.Status != "completed" || call.ApprovalRequestID != req2.ID || !strings.Contains(call.Output, "Deleted the forecast for Oslo") {
		t.Fatalf("approved follow-up mcp_call %+v", call)
	}
	st := d.State(t)
	if _, ok := st.Forecasts["Oslo"]; ok {
		t.Errorf("after approval Oslo still exists")
	}
	if n := st.Calls["delete_forecast"]; n != 1 {
		t.Errorf("after approval delete_forecast called %d times, want 1", n)
	}
}
