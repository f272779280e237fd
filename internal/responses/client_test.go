package responses_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3/responses"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/policy"
	tgresponses "github.com/toolgate/toolgate/internal/responses"
)

// minimalStream is a well-formed stream that completes at once.
const minimalStream = "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"status\":\"in_progress\",\"output\":[]}}\n\n" +
	"event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":1,\"response\":{\"id\":\"resp_1\",\"status\":\"completed\",\"output\":[]}}\n\n"

func TestRequestOnTheWire(t *testing.T) {
	api := serveSSE(t, []byte(minimalStream))
	c := tgresponses.New(tgresponses.Config{BaseURL: api.URL, APIKey: "sk-test", Model: "gpt-4.1"})
	crm := srv("crm")
	crm.Headers = map[string]string{"X-Api-Key": "secret"}
	stream(t, c, conversation.UpstreamRequest{
		PreviousResponseID: "resp_prev",
		UserText:           "and now the weather",
		Answers: []conversation.Answer{
			{ApprovalRequestID: "mcpr_1", Approve: true, ServerLabel: "crm", UpstreamLabel: "crm", ToolName: "update"},
			{ApprovalRequestID: "mcpr_2", Approve: false, Reason: "not today", ServerLabel: "crm", UpstreamLabel: "crm", ToolName: "delete"},
		},
		Tools: []policy.ServerTools{{Server: crm, Never: tools("search"), Always: tools("update")}},
	}).mustComplete(t)

	body := api.Requests()[0]
	want := `{"model":"gpt-4.1","store":true,"stream":true,"previous_response_id":"resp_prev",
		"input":[
			{"type":"mcp_approval_response","approval_request_id":"mcpr_1","approve":true},
			{"type":"mcp_approval_response","approval_request_id":"mcpr_2","approve":false,"reason":"not today"},
			{"type":"message","role":"user","content":"and now the weather"}],
		"tools":[{"type":"mcp","server_label":"crm","server_url":"https://crm.example.com/mcp","headers":{"X-Api-Key":"secret"},
			"allowed_tools":["delete","search","update"],
			"require_approval":{"always":{"tool_names":["update"]},"never":{"tool_names":["search"]}}}]}`
	if d := jsonDiff(t, body, []byte(want)); d != "" {
		t.Errorf("request body (-want +got):\n%s", d)
	}
	if strings.Contains(string(body), "item_reference") {
		t.Error("the request holds an item_reference")
	}
}

func TestRequestWithoutPreviousResponseOrAnswers(t *testing.T) {
	api := serveSSE(t, []byte(minimalStream))
	c := tgresponses.New(tgresponses.Config{BaseURL: api.URL, APIKey: "sk-test", Model: "gpt-4.1"})
	stream(t, c, conversation.UpstreamRequest{UserText: "hi"}).mustComplete(t)
	want := `{"model":"gpt-4.1","store":true,"stream":true,"input":[{"type":"message","role":"user","content":"hi"}]}`
	if d := jsonDiff(t, api.Requests()[0], []byte(want)); d != "" {
		t.Errorf("request body (-want +got):\n%s", d)
	}
}

func TestRetriesOnlyWhenAllowed(t *testing.T) {
	for _, tc := range []struct {
		retry bool
		want  int32
	}{{false, 1}, {true, 3}} {
		var n atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n.Add(1)
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Retry-After-Ms", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"error":{"message":"overloaded","type":"server_error","param":null,"code":null}}`))
		}))
		c := tgresponses.New(tgresponses.Config{BaseURL: srv.URL + "/v1/", APIKey: "sk-test", Model: "m", MaxRetries: 2})
		_, err := c.Stream(t.Context(), conversation.UpstreamRequest{UserText: "hi", Retry: tc.retry})
		srv.Close()
		var ue *conversation.UpstreamError
		if !errors.As(err, &ue) || *ue != (conversation.UpstreamError{Status: 503, Code: "server_error", Message: "overloaded"}) {
			t.Errorf("retry=%v: err = %#v", tc.retry, err)
		}
		if got := n.Load(); got != tc.want {
			t.Errorf("retry=%v: %d requests, want %d", tc.retry, got, tc.want)
		}
	}
}

func TestHTTPErrors(t *testing.T) {
	for _, tc := range []struct {
		name        string
		status      int
		contentType string
		body        string
		want        conversation.UpstreamError
	}{
		{"code from the body", 401, "application/json",
			`{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`,
			conversation.UpstreamError{Status: 401, Code: "invalid_api_key", Message: "Incorrect API key provided."}},
		{"type when there is no code", 400, "application/json",
			`{"error":{"message":"Duplicate item found with id mcpr_1.","type":"invalid_request_error","param":"input","code":null}}`,
			conversation.UpstreamError{Status: 400, Code: "invalid_request_error", Message: "Duplicate item found with id mcpr_1."}},
		{"MCP server failure", 424, "application/json",
			`{"error":{"message":"Error retrieving tool list from MCP server: 'crm'.","type":"external_connector_error","param":"tools","code":"http_error"}}`,
			conversation.UpstreamError{Status: 424, Code: "http_error", Message: "Error retrieving tool list from MCP server: 'crm'."}},
		{"not JSON", 502, "text/html", "<html>Bad gateway</html>",
			conversation.UpstreamError{Status: 502, Code: "http_502", Message: "Bad Gateway"}},
		{"empty", 404, "text/plain", "",
			conversation.UpstreamError{Status: 404, Code: "http_404", Message: "Not Found"}},
		{"JSON without an error key", 400, "application/json", `{"detail":"bad"}`,
			conversation.UpstreamError{Status: 400, Code: "http_400", Message: "Bad Request"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := startFakeAPI(t, tc.status, tc.contentType, []byte(tc.body))
			c := tgresponses.New(tgresponses.Config{BaseURL: api.URL, APIKey: "sk-test", Model: "m"})
			es, err := c.Stream(t.Context(), conversation.UpstreamRequest{UserText: "hi", Retry: true})
			var ue *conversation.UpstreamError
			if es != nil || !errors.As(err, &ue) {
				t.Fatalf("Stream = %v, %#v; want an UpstreamError", es, err)
			}
			if d := cmp.Diff(tc.want, *ue); d != "" {
				t.Errorf("error (-want +got):\n%s", d)
			}
		})
	}
}

func TestStreamShapes(t *testing.T) {
	created := `{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","status":"in_progress","output":[]}}`
	completed := `{"type":"response.completed","sequence_number":9,"response":{"id":"resp_1","status":"completed","output":[]}}`
	delta := `{"type":"response.output_text.delta","sequence_number":1,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hi","obfuscation":"x1","logprobs":[]}`
	for _, tc := range []struct {
		name string
		body string
		want string // describe() of the events
	}{
		{"ends without a terminal event", frame(t, created) + frame(t, delta), "created delta"},
		{"empty body", "", ""},
		{"unknown events, keys and item types are skipped",
			frame(t, created) +
				frame(t, `{"type":"response.brand_new_event","sequence_number":1,"whatever":{"a":[1,2]}}`) +
				frame(t, `{"type":"response.output_item.done","sequence_number":2,"output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[]}}`) +
				frame(t, `{"type":"response.output_item.done","sequence_number":3,"output_index":1,"item":{"id":"x_1","type":"teleport_call","future":true}}`) +
				frame(t, `{"type":"response.output_item.done","sequence_number":4,"output_index":2,"item":{"id":"mcpr_1","type":"mcp_approval_request","name":"t","arguments":"{}","server_label":"s","new_key":{"deep":null}}}`) +
				frame(t, completed),
			"created item:mcp_approval_request completed"},
		{"[DONE] after the terminal event", frame(t, created) + frame(t, completed) + "data: [DONE]\n\n", "created completed"},
		{"error event with an error object, first",
			frame(t, `{"type":"error","sequence_number":0,"error":{"type":"invalid_request_error","code":"context_length_exceeded","message":"Too long.","param":"input"}}`),
			"error:context_length_exceeded:Too long."},
		{"error event with an error object, later",
			frame(t, created) + frame(t, `{"type":"error","sequence_number":1,"error":{"type":"server_error","code":null,"message":"Oops."}}`) + frame(t, completed),
			"created error:server_error:Oops."},
		{"error event with top-level fields",
			frame(t, created) + frame(t, `{"type":"error","sequence_number":1,"code":"rate_limit_exceeded","message":"Slow down.","param":null}`),
			"created error:rate_limit_exceeded:Slow down."},
		{"failed without an error code",
			frame(t, created) + frame(t, `{"type":"response.failed","sequence_number":1,"response":{"id":"resp_1","status":"failed","error":null}}`),
			"created failed:response_failed:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := serveSSE(t, []byte(tc.body))
			c := tgresponses.New(tgresponses.Config{BaseURL: api.URL, APIKey: "sk-test", Model: "m"})
			s := stream(t, c, conversation.UpstreamRequest{UserText: "hi"})
			if s.Err != nil {
				t.Errorf("Err = %v, want nil", s.Err)
			}
			if got := s.describe(); got != tc.want {
				t.Errorf("events %q, want %q", got, tc.want)
			}
		})
	}
}

func TestConvertReadsRawJSON(t *testing.T) {
	labels := tgresponses.Labels{"crm__always": "crm"}
	conv := func(event string) conversation.Event {
		t.Helper()
		var ev responses.ResponseStreamEventUnion
		if err := json.Unmarshal([]byte(event), &ev); err != nil {
			t.Fatal(err)
		}
		got, ok := labels.Convert(ev)
		if !ok {
			t.Fatalf("not converted: %s", event)
		}
		return got
	}
	list := conv(`{"type":"response.output_item.done","item":{"id":"mcpl_1","type":"mcp_list_tools","server_label":"crm__always",
		"error":{"type":"http_error","code":401,"message":"Unauthorized"},
		"tools":[{"name":"wipe","title":"Wipe","description":null,"input_schema":{"type":"object"},
			"annotations":{"title":"Wipe all","readOnlyHint":false,"destructiveHint":true,"idempotentHint":"yes","openWorldHint":null}}]}}`).Item
	tr, fa := true, false
	want := []policy.DiscoveredTool{{Name: "wipe", Title: "Wipe", InputSchema: json.RawMessage(`{"type":"object"}`),
		Annotations: policy.Annotations{Title: "Wipe all", ReadOnlyHint: &fa, DestructiveHint: &tr}}}
	if d := cmp.Diff(want, list.Tools); d != "" {
		t.Errorf("tools (-want +got):\n%s", d)
	}
	if string(list.ListError) != `{"type":"http_error","code":401,"message":"Unauthorized"}` || list.ServerLabel != "crm" || list.UpstreamLabel != "crm__always" {
		t.Errorf("list %+v, error %s", list, list.ListError)
	}

	// Arguments and output of unexpected types are kept as JSON text.
	call := conv(`{"type":"response.output_item.done","item":{"id":"mcp_1","type":"mcp_call","server_label":"other",
		"name":"n","arguments":{"a":1},"output":[{"type":"text","text":"x"}],"error":null,"approval_request_id":null}}`).Item
	if call.Arguments != `{"a":1}` || call.Output == nil || *call.Output != `[{"type":"text","text":"x"}]` ||
		call.CallError != nil || call.ServerLabel != "other" || call.UpstreamLabel != "other" {
		t.Errorf("call %+v", call)
	}
	// A string error stays valid JSON.
	if e := conv(`{"type":"response.output_item.done","item":{"id":"mcp_2","type":"mcp_call","server_label":"s","name":"n","arguments":"{}","output":null,"error":"boom"}}`).Item; string(e.CallError) != `"boom"` || e.Output != nil {
		t.Errorf("call %+v, error %s", e, e.CallError)
	}
	msg := conv(`{"type":"response.output_item.done","item":{"id":"msg_1","type":"message","role":"assistant",
		"content":[{"type":"output_text","text":"Hello, "},{"type":"refusal","refusal":"no"},{"type":"output_text","text":"world"}]}}`).Item
	if msg.Text != "Hello, world" {
		t.Errorf("message text %q", msg.Text)
	}
	inc := conv(`{"type":"response.incomplete","response":{"id":"resp_1","status":"incomplete","incomplete_details":{"reason":"content_filter"}}}`)
	if inc.Kind != conversation.EventIncomplete || inc.ResponseID != "resp_1" || *inc.Error != (conversation.UpstreamError{Code: "incomplete", Message: "content_filter"}) {
		t.Errorf("incomplete %+v %+v", inc, inc.Error)
	}
}

func TestCanceledContext(t *testing.T) {
	api := serveSSE(t, []byte(minimalStream))
	c := tgresponses.New(tgresponses.Config{BaseURL: api.URL, APIKey: "sk-test", Model: "m"})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := c.Stream(ctx, conversation.UpstreamRequest{UserText: "hi", Retry: true})
	var ue *conversation.UpstreamError
	if !errors.Is(err, context.Canceled) || errors.As(err, &ue) {
		t.Fatalf("err = %#v, want context.Canceled", err)
	}
}

// TestCloseEndsTheConnection closes the stream from another goroutine while
// Next waits for an event that does not come.
func TestCloseEndsTheConnection(t *testing.T) {
	gone := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte(strings.SplitAfter(minimalStream, "\n\n")[0]))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		close(gone)
	}))
	defer srv.Close()
	c := tgresponses.New(tgresponses.Config{BaseURL: srv.URL + "/v1/", APIKey: "sk-test", Model: "m"})
	es, err := c.Stream(t.Context(), conversation.UpstreamRequest{UserText: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if !es.Next() || es.Event().Kind != conversation.EventCreated {
		t.Fatalf("first event %+v", es.Event())
	}
	next := make(chan bool)
	go func() { next <- es.Next() }()
	time.Sleep(50 * time.Millisecond)
	if err := es.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	select {
	case ok := <-next:
		if ok || es.Err() != nil {
			t.Errorf("Next after Close = %v, Err %v; want false, nil", ok, es.Err())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Next still waits after Close")
	}
	select {
	case <-gone:
	case <-time.After(5 * time.Second):
		t.Fatal("the server still holds the connection after Close")
	}
}

// TestCutBeforeTheFirstEvent: the answer began (200) but broke before its
// first event: nothing was streamed, and it is no provider error.
func TestCutBeforeTheFirstEvent(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Content-Length", "1000") // more than is sent: the body ends early
		_, _ = w.Write([]byte("event: response.created\ndata: {\"type\":"))
	}))
	defer srv.Close()
	c := tgresponses.New(tgresponses.Config{BaseURL: srv.URL + "/v1/", APIKey: "sk-test", Model: "m"})
	es, err := c.Stream(t.Context(), conversation.UpstreamRequest{UserText: "hi"})
	var ue *conversation.UpstreamError
	if es != nil || !errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &ue) {
		t.Fatalf("Stream = %v, %#v; want an error wrapping io.ErrUnexpectedEOF", es, err)
	}
}
