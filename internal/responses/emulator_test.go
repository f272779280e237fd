package responses_test

// End to end against the in-process emulator and the demo MCP server.

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/demomcp"
	"github.com/toolgate/toolgate/internal/emulator"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/responses"
)

const (
	model      = "gpt-4.1"    // no reasoning items
	reasoner   = "gpt-5-mini" // reasoning items, which are dropped
	demoToken  = "demo-secret-token"
	demoHeader = "Bearer " + demoToken
)

// startEmulator serves an emulator and returns its base URL for Config.
func startEmulator(t testing.TB) string {
	t.Helper()
	e, err := emulator.New(emulator.Config{MCPTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(e.Handler())
	t.Cleanup(srv.Close)
	return srv.URL + "/v1/"
}

// demo is the demo MCP server with a record of the MCP requests it got.
type demo struct {
	*demomcp.Demo
	URL  string
	mu   sync.Mutex
	seen []mcpRequest
}

type mcpRequest struct {
	Method, Authorization string
}

// startDemo serves the demo MCP server requiring demoToken.
func startDemo(t testing.TB) *demo {
	t.Helper()
	d := &demo{Demo: demomcp.New(demomcp.Options{Token: demoToken})}
	h := d.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			Method string `json:"method"`
		}
		_ = json.Unmarshal(body, &msg)
		d.mu.Lock()
		d.seen = append(d.seen, mcpRequest{msg.Method, r.Header.Get("Authorization")})
		d.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	d.URL = srv.URL + "/mcp"
	return d
}

// Requests are the MCP requests with the given JSON-RPC method.
func (d *demo) Requests(method string) []mcpRequest {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []mcpRequest
	for _, r := range d.seen {
		if r.Method == method {
			out = append(out, r)
		}
	}
	return out
}

// weather is the demo server as Toolgate knows it, with its token header.
func (d *demo) weather() policy.Server {
	return policy.Server{Label: "weather", URL: d.URL, Description: "Demo weather forecasts",
		Headers: map[string]string{"Authorization": demoHeader}, Enabled: true}
}

// groups is the demo server with the given tools never and always asked.
func (d *demo) groups(never, always []string, blocked ...string) []policy.ServerTools {
	return []policy.ServerTools{{Server: d.weather(), Never: tools(never...), Always: tools(always...), Blocked: blocked}}
}

func newClient(base string, layout responses.Layout, m string) *responses.Client {
	return responses.New(responses.Config{BaseURL: base, APIKey: "sk-test", Model: m, Layout: layout, MaxRetries: 2})
}

// behaviorClient sends X-Emulator-Behavior with every request.
func behaviorClient(behavior string) *http.Client {
	return &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		r.Header.Set(emulator.BehaviorHeader, behavior)
		return http.DefaultTransport.RoundTrip(r)
	})}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestEmulatorTextTurn(t *testing.T) {
	t.Parallel()
	d := startDemo(t)
	c := newClient(startEmulator(t), responses.LayoutDefault, reasoner)
	s := stream(t, c, conversation.UpstreamRequest{UserText: "hello there", Retry: true,
		Tools: d.groups([]string{"get_forecast"}, []string{"delete_forecast"}, "reset_forecasts")})
	s.mustComplete(t)

	if !strings.HasPrefix(s.ResponseID(), "resp_") {
		t.Errorf("response id %q", s.ResponseID())
	}
	if s.Text() == "" || s.Text() != s.Deltas() || !strings.Contains(s.Text(), `You said: "hello there"`) {
		t.Errorf("text %q, deltas %q", s.Text(), s.Deltas())
	}
	lists := s.Items("mcp_list_tools")
	if len(lists) != 1 || lists[0].ServerLabel != "weather" || !strings.HasPrefix(lists[0].ID, "mcpl_") {
		t.Fatalf("list items %+v (%s)", lists, s.describe())
	}
	for _, tool := range lists[0].Tools {
		if ro := tool.Annotations.ReadOnlyHint; ro == nil || *ro != (tool.Name == "get_forecast" || tool.Name == "list_forecasts") {
			t.Errorf("%s: annotations %+v", tool.Name, tool.Annotations)
		}
	}
	if len(lists[0].Tools) != 6 {
		t.Errorf("%d tools listed, want the demo's 6", len(lists[0].Tools))
	}
	// allowed_tools offers exactly the known, unblocked tools.
	if !strings.Contains(s.Text(), "Tools available: weather.delete_forecast, weather.get_forecast.") {
		t.Errorf("text %q, want exactly the allowed tools offered", s.Text())
	}
	for _, it := range s.Items() {
		if it.Type == "reasoning" {
			t.Errorf("reasoning item %s was not dropped", it.ID)
		}
	}
}

func TestEmulatorNeverToolRunsWithoutAsking(t *testing.T) {
	t.Parallel()
	d := startDemo(t)
	c := newClient(startEmulator(t), responses.LayoutDefault, model)
	s := stream(t, c, conversation.UpstreamRequest{UserText: `get_forecast {"city": "Berlin"}`,
		Tools: d.groups([]string{"get_forecast"}, []string{"delete_forecast"})})
	s.mustComplete(t)

	calls := s.Items("mcp_call")
	if len(calls) != 1 || len(s.Items("mcp_approval_request")) != 0 {
		t.Fatalf("events %s, want one call and no approval request", s.describe())
	}
	call := calls[0]
	if !strings.HasPrefix(call.ID, "mcp_") || call.Name != "get_forecast" || call.ServerLabel != "weather" ||
		call.ApprovalID != "" || call.CallError != nil || call.Output == nil ||
		*call.Output != "Forecast for Berlin: Light rain clearing by evening, 14°C." {
		t.Errorf("call %+v (output %v)", call, call.Output)
	}
	if n := d.State().Calls["get_forecast"]; n != 1 {
		t.Errorf("get_forecast ran %d times", n)
	}
	if !strings.Contains(s.Text(), "Light rain clearing by evening") {
		t.Errorf("text %q does not quote the output", s.Text())
	}
}

// approvalTurn asks for delete_forecast on Oslo and returns the response id
// and the approval request.
func approvalTurn(t *testing.T, c *responses.Client, groups []policy.ServerTools, wantLabel string) (string, *conversation.UpstreamItem) {
	t.Helper()
	s := stream(t, c, conversation.UpstreamRequest{UserText: `please delete_forecast {"city": "Oslo"}`, Retry: true, Tools: groups})
	s.mustComplete(t)
	apr := s.Items("mcp_approval_request")
	if len(apr) != 1 || len(s.Items("mcp_call")) != 0 || s.Text() != "" {
		t.Fatalf("events %s, want one approval request and nothing else", s.describe())
	}
	a := apr[0]
	if !strings.HasPrefix(a.ID, "mcpr_") || a.Name != "delete_forecast" || a.Arguments != `{"city":"Oslo"}` ||
		a.ServerLabel != "weather" || a.UpstreamLabel != wantLabel {
		t.Fatalf("approval request %+v", a)
	}
	return s.ResponseID(), a
}

func answer(a *conversation.UpstreamItem, approve bool, reason string) conversation.Answer {
	return conversation.Answer{ApprovalRequestID: a.ID, Approve: approve, Reason: reason,
		ServerLabel: a.ServerLabel, UpstreamLabel: a.UpstreamLabel, ToolName: a.Name}
}

func TestEmulatorApprovalAndFollowUp(t *testing.T) {
	t.Parallel()
	d := startDemo(t)
	c := newClient(startEmulator(t), responses.LayoutDefault, reasoner)
	groups := d.groups([]string{"get_forecast"}, []string{"delete_forecast"})
	prev, apr := approvalTurn(t, c, groups, "weather")
	if n := d.State().Calls["delete_forecast"]; n != 0 {
		t.Fatalf("delete_forecast ran %d times before the approval", n)
	}

	s := stream(t, c, conversation.UpstreamRequest{PreviousResponseID: prev, Answers: []conversation.Answer{answer(apr, true, "")}, Tools: groups})
	s.mustComplete(t)
	calls := s.Items("mcp_call")
	if len(calls) != 1 {
		t.Fatalf("events %s, want one call", s.describe())
	}
	call := calls[0]
	if call.ApprovalID != apr.ID || call.Name != "delete_forecast" || call.CallError != nil ||
		call.Output == nil || *call.Output != "Deleted the forecast for Oslo." {
		t.Errorf("call %+v (output %v, error %s)", call, call.Output, call.CallError)
	}
	if _, ok := d.State().Forecasts["oslo"]; ok {
		t.Error("Oslo's forecast is still there")
	}
	if len(s.Items("mcp_list_tools")) != 0 {
		t.Error("the follow-up listed the tools again")
	}

	// The headers reached the MCP server on the follow-up too: its
	// tools/call carried the token (the server rejects requests without).
	callsSeen := d.Requests("tools/call")
	if len(callsSeen) != 1 || callsSeen[0].Authorization != demoHeader {
		t.Errorf("tools/call requests %+v, want one with the token", callsSeen)
	}
	if lists := d.Requests("tools/list"); len(lists) == 0 || lists[0].Authorization != demoHeader {
		t.Errorf("tools/list requests %+v", lists)
	}
}

func TestEmulatorDenialWithReason(t *testing.T) {
	t.Parallel()
	d := startDemo(t)
	c := newClient(startEmulator(t), responses.LayoutDefault, model)
	prev, apr := approvalTurn(t, c, d.groups(nil, []string{"delete_forecast", "get_forecast"}), "weather")

	// Meanwhile the tool was blocked: the answer still offers it, so the
	// denial reaches the model.
	reason := "Oslo's forecast is needed for the ski trip"
	s := stream(t, c, conversation.UpstreamRequest{PreviousResponseID: prev,
		Answers: []conversation.Answer{answer(apr, false, reason)},
		Tools:   d.groups(nil, []string{"get_forecast"}, "delete_forecast")})
	s.mustComplete(t)
	if len(s.Items("mcp_call")) != 0 || d.State().Calls["delete_forecast"] != 0 {
		t.Fatalf("events %s: the denied tool ran", s.describe())
	}
	if want := `Reason given: "` + reason + `"`; !strings.Contains(s.Text(), want) {
		t.Errorf("text %q does not quote the reason", s.Text())
	}
}

func TestEmulatorSplitLayout(t *testing.T) {
	t.Parallel()
	d := startDemo(t)
	c := newClient(startEmulator(t), responses.LayoutSplit, model)

	s := stream(t, c, conversation.UpstreamRequest{
		UserText: `get_forecast {"city": "Lisbon"} then delete_forecast {"city": "Oslo"}`,
		Tools:    d.groups([]string{"get_forecast"}, []string{"delete_forecast"})})
	s.mustComplete(t)
	calls, aprs := s.Items("mcp_call"), s.Items("mcp_approval_request")
	if len(calls) != 1 || len(aprs) != 1 {
		t.Fatalf("events %s, want a call and an approval request", s.describe())
	}
	if c := calls[0]; c.Name != "get_forecast" || c.ServerLabel != "weather" || c.UpstreamLabel != "weather__never" || c.Output == nil {
		t.Errorf("call %+v", c)
	}
	apr := aprs[0]
	if apr.Name != "delete_forecast" || apr.ServerLabel != "weather" || apr.UpstreamLabel != "weather__always" {
		t.Fatalf("approval request %+v", apr)
	}
	for _, l := range s.Items("mcp_list_tools") {
		if l.ServerLabel != "weather" {
			t.Errorf("list %s: server %q", l.UpstreamLabel, l.ServerLabel)
		}
	}

	// "Remember: never ask": the tool moved to the never group, so nothing
	// is labelled weather__always any more except for the answer's sake.
	s = stream(t, c, conversation.UpstreamRequest{PreviousResponseID: s.ResponseID(),
		Answers: []conversation.Answer{answer(apr, true, "")},
		Tools:   d.groups([]string{"delete_forecast", "get_forecast"}, nil)})
	s.mustComplete(t)
	calls = s.Items("mcp_call")
	if len(calls) != 1 {
		t.Fatalf("events %s, want one call", s.describe())
	}
	if c := calls[0]; c.ApprovalID != apr.ID || c.ServerLabel != "weather" || c.UpstreamLabel != "weather__always" ||
		c.Output == nil || *c.Output != "Deleted the forecast for Oslo." {
		t.Errorf("call %+v (output %v, error %s)", c, c.Output, c.CallError)
	}
}

func TestEmulatorRateLimitRetriesOnlyWhenAllowed(t *testing.T) {
	t.Parallel()
	d := startDemo(t)
	req := conversation.UpstreamRequest{UserText: "hello", Tools: d.groups([]string{"get_forecast"}, nil)}
	client := func() *responses.Client {
		return responses.New(responses.Config{BaseURL: startEmulator(t), APIKey: "sk-test", Model: model,
			MaxRetries: 2, HTTPClient: behaviorClient("status=429,times=1")})
	}

	retrying := req
	retrying.Retry = true
	stream(t, client(), retrying).mustComplete(t)

	_, err := client().Stream(t.Context(), req)
	var ue *conversation.UpstreamError
	if !errors.As(err, &ue) || ue.Status != http.StatusTooManyRequests || ue.Code != "rate_limit_exceeded" || ue.Message == "" || !ue.Retryable() {
		t.Fatalf("err = %#v, want UpstreamError 429 rate_limit_exceeded", err)
	}
}

func TestEmulatorCutStream(t *testing.T) {
	t.Parallel()
	c := responses.New(responses.Config{BaseURL: startEmulator(t), APIKey: "sk-test", Model: model, HTTPClient: behaviorClient("cut")})
	s := stream(t, c, conversation.UpstreamRequest{UserText: "hello"})
	if !errors.Is(s.Err, io.ErrUnexpectedEOF) {
		t.Fatalf("Err = %v, want io.ErrUnexpectedEOF", s.Err)
	}
	if len(s.Events) == 0 || s.Events[0].Kind != conversation.EventCreated {
		t.Errorf("events %s", s.describe())
	}
	if k := s.Last().Kind; k == conversation.EventCompleted || k == conversation.EventFailed || k == conversation.EventIncomplete {
		t.Errorf("a cut stream ended with %s", kindName(k))
	}
}

// TestEmulatorCutBeforeTheAnswer: the connection drops before any HTTP
// answer, which Stream reports like an unreachable provider (although the
// request may have reached it).
func TestEmulatorCutBeforeTheAnswer(t *testing.T) {
	t.Parallel()
	c := responses.New(responses.Config{BaseURL: startEmulator(t), APIKey: "sk-test", Model: model, HTTPClient: behaviorClient("cut; at=0")})
	es, err := c.Stream(t.Context(), conversation.UpstreamRequest{UserText: "hello"})
	var ue *conversation.UpstreamError
	if es != nil || !errors.As(err, &ue) || ue.Code != conversation.CodeUnreachable || !strings.Contains(ue.Message, "EOF") {
		t.Fatalf("Stream = %v, %#v; want UpstreamError %s", es, err, conversation.CodeUnreachable)
	}
}

func TestEmulatorTerminalErrors(t *testing.T) {
	t.Parallel()
	base := startEmulator(t)
	for _, tc := range []struct {
		behavior string
		kind     conversation.EventKind
		code     string
	}{
		{"error-event=server_busy", conversation.EventError, "server_busy"},
		{"failed=server_error", conversation.EventFailed, "server_error"},
		{"incomplete=max_output_tokens", conversation.EventIncomplete, "incomplete"},
	} {
		c := responses.New(responses.Config{BaseURL: base, APIKey: "sk-test", Model: model, HTTPClient: behaviorClient(tc.behavior)})
		s := stream(t, c, conversation.UpstreamRequest{UserText: "hello"})
		if s.Err != nil {
			t.Errorf("%s: Err = %v", tc.behavior, s.Err)
		}
		last := s.Last()
		if last.Kind != tc.kind || last.Error == nil || last.Error.Code != tc.code || last.Error.Message == "" {
			t.Errorf("%s: last event %+v (error %+v), want %s with code %s", tc.behavior, last, last.Error, kindName(tc.kind), tc.code)
		}
		if tc.kind != conversation.EventError && last.ResponseID != s.ResponseID() {
			t.Errorf("%s: response id %q, want %q", tc.behavior, last.ResponseID, s.ResponseID())
		}
		if tc.kind == conversation.EventIncomplete && last.Error.Message != "max_output_tokens" {
			t.Errorf("%s: message %q, want the reason", tc.behavior, last.Error.Message)
		}
	}
}

func TestEmulatorUnknownPreviousResponse(t *testing.T) {
	t.Parallel()
	c := newClient(startEmulator(t), responses.LayoutDefault, model)
	_, err := c.Stream(t.Context(), conversation.UpstreamRequest{PreviousResponseID: "resp_doesnotexist", UserText: "hello", Retry: true})
	var ue *conversation.UpstreamError
	if !errors.As(err, &ue) || ue.Status != http.StatusBadRequest || ue.Code != "previous_response_not_found" || ue.Retryable() {
		t.Fatalf("err = %#v, want UpstreamError 400 previous_response_not_found", err)
	}
}

func TestUnreachableProvider(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := newClient("http://"+addr+"/v1/", responses.LayoutDefault, model)
	_, err = c.Stream(t.Context(), conversation.UpstreamRequest{UserText: "hello"})
	var ue *conversation.UpstreamError
	if !errors.As(err, &ue) || ue.Code != conversation.CodeUnreachable || ue.Status != 0 || ue.Message == "" || !ue.Retryable() {
		t.Fatalf("err = %#v, want UpstreamError %s", err, conversation.CodeUnreachable)
	}
}
