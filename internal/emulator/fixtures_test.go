package emulator_test

// Twin tests: each scenario recorded from the real Responses API in
// ../shared/openai-fixtures is driven through the emulator, and the two
// answers are compared by structure, never by ids or text:
//
//   - the sequence of event types, output_item events labelled with their
//     item's type, each run of response.output_text.delta collapsed into one
//     (the texts differ in length);
//   - every event and every output item as a flat map from JSON path to JSON
//     kind (fxFlat): exactly the same keys, nested ones included
//     (mcp_call.error, mcp_list_tools tools[] entries, message content
//     parts), and the same kinds; the values of "type", "status", "role" and
//     "object" must be equal too, ids only by their prefix (resp_, mcpl_,
//     mcpr_, mcp_, msg_, rs_), input_schema only as an object (it is the MCP
//     server's own schema);
//   - sequence_number from 0 rising by one, and the SSE framing: each frame
//     is "event: <type>" then "data: <json>" with that type, no [DONE];
//   - the response object (in response.* events and non-streamed bodies):
//     its output item by item as above; its other keys against the vercel
//     approval recordings of December 2025, the era the emulator models
//     (approval.1.chunks for streamed responses; approval.1.json, which adds
//     "billing", for bodies); and the JSON kinds of the keys that the
//     scenario's own recording has as well. Older recordings (dotnet, Sept
//     and Oct 2025) lack completed_at and prompt_cache_retention, and the 2026
//     recording has more keys (moderation, tool_usage, ...): neither is a
//     difference the emulator should copy.
//
// Tool names, arguments and texts are ours (the test MCP servers' tools):
// the twins compare shape, not content.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/emulator"
)

const (
	fxApproval1 = "vercel-ai_openai-mcp-tool-approval.1"
	fxApproval2 = "vercel-ai_openai-mcp-tool-approval.2"
	fxApproval3 = "vercel-ai_openai-mcp-tool-approval.3"
	fxApproval4 = "vercel-ai_openai-mcp-tool-approval.4"

	// The vercel recordings' model, a reasoning model: the emulator emits
	// reasoning items for it. The dotnet twins send the recorded request
	// bodies, with their gpt-4o-mini: no reasoning items.
	fxVercelModel = "gpt-5-mini"
)

func TestTwin_ListTools(t *testing.T) {
	t.Parallel()
	e, m := startEmulator(t, emulator.Config{}), startTestMCP(t, "")

	// Streamed: output_item.added (tools: []), mcp_list_tools.in_progress,
	// .completed, output_item.done with the full list.
	got := fxListPart(t, fxEvents(t, post(t, e, fxVercelRequest(m.URL, "always", true, fxUserMessage("hello")))))
	fxSameEvents(t, fxApproval1+".chunks.jsonl", fxListPart(t, fxRecordedStream(t, fxApproval1+".chunks.jsonl")), got, fxOpts{})
	var done struct {
		Item struct{ Tools []struct{ Name string } }
	}
	if err := json.Unmarshal(got[len(got)-1], &done); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range done.Item.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if want := []string{"add", "echo", "fail", "wipe"}; !cmp.Equal(names, want) {
		t.Errorf("listed tools %v, want %v", names, want)
	}

	// Not streamed: the same item in output.
	body := post(t, e, fxVercelRequest(m.URL, "always", false, fxUserMessage("hello"))).Body
	want := fxFind(t, fxOutput(t, fxFixture(t, fxApproval1+".json")), "mcp_list_tools")
	if d := cmp.Diff(fxFlat(want), fxFlat(fxFind(t, fxOutput(t, body), "mcp_list_tools"))); d != "" {
		t.Errorf("mcp_list_tools item differs from %s.json (-recorded +emulator):\n%s", fxApproval1, d)
	}
}

// TestTwin_NeverTwoCalls: require_approval "never" and two tools named; a
// reasoning model puts reasoning before each call and the answer, gpt-4o-mini
// does not.
func TestTwin_NeverTwoCalls(t *testing.T) {
	t.Parallel()
	const text = `echo {"text": "hi"} then add {"a": 1, "b": 2}`
	for _, tc := range []struct {
		rec  string
		body func(t *testing.T, url string) map[string]any
		o    fxOpts
	}{
		{"vercel-ai_openai-mcp-tool.1.chunks.jsonl", func(_ *testing.T, url string) map[string]any {
			return fxVercelRequest(url, "never", true, fxUserMessage(text))
		}, fxOpts{}},
		{"dotnet-extensions_mcp-never-approval_streaming.sse", func(t *testing.T, url string) map[string]any {
			return fxRecordedRequest(t, fxFixture(t, "dotnet-extensions_mcp-never-approval_streaming.request.json"), url, text)
		}, fxOpts{callWithoutStatus: true}},
	} {
		t.Run(tc.rec, func(t *testing.T) {
			t.Parallel()
			e, m := startEmulator(t, emulator.Config{}), startTestMCP(t, "")
			fxTwin(t, tc.rec, post(t, e, tc.body(t, m.URL)), tc.o)
		})
	}
}

// TestTwin_ApprovalAlways: turn 1 of the vercel approval recordings.
func TestTwin_ApprovalAlways(t *testing.T) {
	t.Parallel()
	for _, rec := range []string{fxApproval1 + ".chunks.jsonl", fxApproval1 + ".json"} {
		t.Run(rec, func(t *testing.T) {
			t.Parallel()
			e, m := startEmulator(t, emulator.Config{}), startTestMCP(t, "")
			body := fxVercelRequest(m.URL, "always", fxIsStream(rec), fxUserMessage(`echo {"text": "https://ai-sdk.dev/"}`))
			fxTwin(t, rec, post(t, e, body), fxOpts{})
			if m.Calls("echo") != 0 {
				t.Error("echo ran before it was approved")
			}
		})
	}
}

// The vercel follow-ups were not previous_response_id based: @ai-sdk/openai
// re-sent the conversation (user message, the mcp_approval_request as
// returned, the mcp_approval_response), so the API listed the tools again.

// TestTwin_ApprovalDeny: approve false gives list, reasoning, message.
func TestTwin_ApprovalDeny(t *testing.T) {
	t.Parallel()
	for _, rec := range []string{fxApproval2 + ".chunks.jsonl", fxApproval2 + ".json"} {
		t.Run(rec, func(t *testing.T) {
			t.Parallel()
			e, m := startEmulator(t, emulator.Config{}), startTestMCP(t, "")
			conv, req := fxApprovalRequested(t, e, m.URL)
			conv = append(conv, fxApprovalResponse(req, false))
			fxTwin(t, rec, post(t, e, fxVercelRequest(m.URL, "always", fxIsStream(rec), conv...)), fxOpts{})
			if m.Calls("echo") != 0 {
				t.Error("echo ran although it was denied")
			}
		})
	}
}

// TestTwin_ApprovalTryAgain: after the denial and its answer, a new user
// message asks again: a new approval request.
func TestTwin_ApprovalTryAgain(t *testing.T) {
	t.Parallel()
	for _, rec := range []string{fxApproval3 + ".chunks.jsonl", fxApproval3 + ".json"} {
		t.Run(rec, func(t *testing.T) {
			t.Parallel()
			e, m := startEmulator(t, emulator.Config{}), startTestMCP(t, "")
			conv, req := fxApprovalRequested(t, e, m.URL)
			conv = append(conv, fxApprovalResponse(req, false))
			denied := post(t, e, fxVercelRequest(m.URL, "always", false, conv...))
			conv = append(conv, fxFind(t, fxOutput(t, denied.Body), "message"),
				fxUserMessage(`Try again: echo {"text": "https://ai-sdk.dev/"}`))
			fxTwin(t, rec, post(t, e, fxVercelRequest(m.URL, "always", fxIsStream(rec), conv...)), fxOpts{})
		})
	}
}

// TestTwin_ApprovalApprove: approve true runs the tool (mcp_call with
// approval_request_id, mcp_call.in_progress twice when streamed), then text.
func TestTwin_ApprovalApprove(t *testing.T) {
	t.Parallel()
	for _, rec := range []string{fxApproval4 + ".chunks.jsonl", fxApproval4 + ".json"} {
		t.Run(rec, func(t *testing.T) {
			t.Parallel()
			e, m := startEmulator(t, emulator.Config{}), startTestMCP(t, "")
			conv, req := fxApprovalRequested(t, e, m.URL)
			conv = append(conv, fxApprovalResponse(req, true))
			fxTwin(t, rec, post(t, e, fxVercelRequest(m.URL, "always", fxIsStream(rec), conv...)), fxOpts{})
			if m.Calls("echo") != 1 {
				t.Errorf("echo ran %d times, want 1", m.Calls("echo"))
			}
		})
	}
}

// TestTwin_ApprovalApprovePreviousResponse replays the dotnet two-turn
// recording with its own request bodies: turn 2 answers with
// previous_response_id, so there is no new mcp_list_tools.
func TestTwin_ApprovalApprovePreviousResponse(t *testing.T) {
	t.Parallel()
	const rec = "dotnet-extensions_mcp-approval-required_nonstreaming_two-turns.txt"
	e, m := startEmulator(t, emulator.Config{}), startTestMCP(t, "")
	// require_approval is omitted, as recorded: it defaults to "always".
	turn1 := post(t, e, fxRecordedRequest(t, fxSection(t, rec, "TURN 1 REQUEST"), m.URL, `echo {"text": "README.md"}`))
	// The recorded turn-1 output was trimmed by the test's author to the
	// mcp_approval_request: compare the items it kept.
	fxSameBody(t, rec+" turn 1", fxSection(t, rec, "TURN 1 RESPONSE"), turn1, fxOpts{trimmedOutput: true})

	var first struct{ ID string }
	if err := json.Unmarshal(turn1.Body, &first); err != nil {
		t.Fatal(err)
	}
	body := fxRecordedRequest(t, fxSection(t, rec, "TURN 2 REQUEST"), m.URL, "")
	body["previous_response_id"] = first.ID
	body["input"].([]any)[0].(map[string]any)["approval_request_id"] = fxFind(t, fxOutput(t, turn1.Body), "mcp_approval_request")["id"]
	fxSameBody(t, rec+" turn 2", fxSection(t, rec, "TURN 2 RESPONSE"), post(t, e, body), fxOpts{})
	if m.Calls("echo") != 1 {
		t.Errorf("echo ran %d times, want 1", m.Calls("echo"))
	}
}

// TestTwin_CallToolExecutionError: a tool that reports an error gives an
// mcp_call whose error is {"type":"mcp_tool_execution_error","content":[...]}.
func TestTwin_CallToolExecutionError(t *testing.T) {
	t.Parallel()
	const rec = "dotnet-extensions_mcp-call-error_nonstreaming.txt"
	e, url := startEmulator(t, emulator.Config{}), fxStartErrorMCP(t)
	got := post(t, e, fxRecordedRequest(t, fxSection(t, rec, "REQUEST"), url, "test_error"))
	fxSameBody(t, rec, fxSection(t, rec, "RESPONSE"), got, fxOpts{callWithoutStatus: true})
}

// TestTwin_CallProtocolError: the openai-node issue shows mcp_call.error as
// {"type":"mcp_protocol_error","code":..,"message":..}; we get one from a
// tool whose tools/call answers with a JSON-RPC error. (Arguments of the
// wrong type do not do it with go-sdk servers: they validate the input and
// report a tool execution error.) http_error (the MCP server answered with an
// HTTP error) has the same keys per the protocol notes; it is checked against
// the same recording with only the type changed.
func TestTwin_CallProtocolError(t *testing.T) {
	t.Parallel()
	want := fxFlat(fxJSObject(t, fxFixture(t, "openai-node-issue-1568_mcp_call-with-error-object.txt")))
	for _, tc := range []struct {
		errType, behavior string
	}{
		{"mcp_protocol_error", ""},
		{"http_error", "mcp-error=call"},
	} {
		t.Run(tc.errType, func(t *testing.T) {
			t.Parallel()
			e, url := startEmulator(t, emulator.Config{}), fxStartErrorMCP(t)
			body := map[string]any{"model": "gpt-4o", "tools": []any{mcpEntry("test", url, "never")},
				"input": "test_protocol_error"}
			var hdr []string
			if tc.behavior != "" {
				hdr = []string{emulator.BehaviorHeader, tc.behavior}
			}
			got := post(t, e, body, hdr...)
			if got.Status != 200 {
				t.Fatalf("status %d: %s", got.Status, got.Body)
			}
			w := maps.Clone(want)
			w["error.type"] = "=" + tc.errType
			g := fxFlat(fxFind(t, fxOutput(t, got.Body), "mcp_call"))
			delete(g, "status") // the recording (June 2025) predates mcp_call.status
			if d := cmp.Diff(w, g); d != "" {
				t.Errorf("mcp_call differs from the openai-node recording (-recorded +emulator):\n%s", d)
			}
		})
	}
}

// TestTwin_DuplicateItem: previous_response_id plus an item_reference to the
// mcpr_ item repeats that item: 400 with the recorded body.
func TestTwin_DuplicateItem(t *testing.T) {
	t.Parallel()
	e, m := startEmulator(t, emulator.Config{}), startTestMCP(t, "")
	turn1 := post(t, e, fxVercelRequest(m.URL, "always", false, fxUserMessage(`echo {"text": "x"}`)))
	var first struct{ ID string }
	if err := json.Unmarshal(turn1.Body, &first); err != nil {
		t.Fatal(err)
	}
	req := fxFind(t, fxOutput(t, turn1.Body), "mcp_approval_request")
	body := fxVercelRequest(m.URL, "always", false,
		map[string]any{"type": "item_reference", "id": req["id"]}, fxApprovalResponse(req, true))
	body["previous_response_id"] = first.ID
	body["store"] = true
	got := post(t, e, body)

	want := fxDecode(t, fxFixture(t, "vercel-ai_error-duplicate-item-previous_response_id-plus-item_reference.json"))
	if got.Status != 400 {
		t.Fatalf("status %d, want 400: %s", got.Status, got.Body)
	}
	g := fxDecode(t, got.Body)
	if d := cmp.Diff(fxFlat(want), fxFlat(g)); d != "" {
		t.Errorf("error body shape differs (-recorded +emulator):\n%s", d)
	}
	ids := regexp.MustCompile(`mcpr_[0-9a-zA-Z]+`)
	msg := func(v map[string]any) string {
		return ids.ReplaceAllString(v["error"].(map[string]any)["message"].(string), "mcpr_*")
	}
	if msg(g) != msg(want) || !strings.Contains(msg(g), "mcpr_*") {
		t.Errorf("message %q, want %q", msg(g), msg(want))
	}
	if p := g["error"].(map[string]any)["param"]; p != "input" {
		t.Errorf("param %v, want input", p)
	}
	if m.Calls("echo") != 0 {
		t.Error("echo ran")
	}
}

// ---- driving the emulator ----

func fxUserMessage(text string) map[string]any {
	return map[string]any{"type": "message", "role": "user",
		"content": []any{map[string]any{"type": "input_text", "text": text}}}
}

// fxVercelRequest is a request like those of the vercel recordings: a
// reasoning model and one mcp entry with a server_description.
func fxVercelRequest(url, approval string, stream bool, input ...any) map[string]any {
	entry := mcpEntry("test", url, approval)
	entry["server_description"] = "Test tools"
	return map[string]any{"model": fxVercelModel, "stream": stream, "tools": []any{entry}, "input": input}
}

// fxApprovalRequested runs turn 1 of the vercel approval recordings
// (not streamed) and returns the conversation as a stateless client re-sends
// it (the user message and the mcp_approval_request as returned) and that
// request.
func fxApprovalRequested(t *testing.T, e *emu, url string) ([]any, map[string]any) {
	t.Helper()
	user := fxUserMessage(`echo {"text": "https://ai-sdk.dev/"}`)
	got := post(t, e, fxVercelRequest(url, "always", false, user))
	req := fxFind(t, fxOutput(t, got.Body), "mcp_approval_request")
	return []any{user, req}, req
}

func fxApprovalResponse(req map[string]any, approve bool) map[string]any {
	return map[string]any{"type": "mcp_approval_response", "approval_request_id": req["id"], "approve": approve}
}

// fxRecordedRequest is a recorded request body with every mcp entry pointed
// at url and, unless text is "", the user's text replaced.
func fxRecordedRequest(t *testing.T, raw []byte, url, text string) map[string]any {
	t.Helper()
	body := fxDecode(t, raw)
	for _, tool := range body["tools"].([]any) {
		tool.(map[string]any)["server_url"] = url
	}
	if text == "" {
		return body
	}
	for _, it := range body["input"].([]any) {
		if m := it.(map[string]any); m["role"] == "user" {
			m["content"] = []any{map[string]any{"type": "input_text", "text": text}}
		}
	}
	return body
}

// fxStartErrorMCP serves two failing tools: test_error, like the dotnet
// call-error recording's, reports a tool execution error (isError);
// test_protocol_error answers tools/call with a JSON-RPC error, as the server
// of the openai-node issue did ("Session terminated").
func fxStartErrorMCP(t *testing.T) string {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "error-mcp", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "test_error", Description: "A tool that always errors"},
		func(_ context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "An error occurred invoking 'test_error'."}}}, nil, nil
		})
	srv.AddTool(&mcp.Tool{Name: "test_protocol_error", Description: "A tool whose calls fail in MCP itself",
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{}}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, &jsonrpc.Error{Code: -32600, Message: "Session terminated"}
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

// ---- comparing ----

// fxOpts are the known, deliberate differences from a recording.
type fxOpts struct {
	// callWithoutStatus: the recording predates mcp_call.status (Sept 2025);
	// the emulator models the December 2025 items, which have it.
	callWithoutStatus bool
	// trimmedOutput: the recording's output was cut down by its author;
	// compare only the item types it kept.
	trimmedOutput bool
}

// fxTwin compares the emulator's answer with a recording: a stream for
// .chunks.jsonl and .sse, a response body for .json.
func fxTwin(t *testing.T, rec string, got rawResult, o fxOpts) {
	t.Helper()
	if !fxIsStream(rec) {
		fxSameBody(t, rec, fxFixture(t, rec), got, o)
		return
	}
	fxSameEvents(t, rec, fxRecordedStream(t, rec), fxEvents(t, got), o)
}

func fxIsStream(rec string) bool {
	return strings.HasSuffix(rec, ".chunks.jsonl") || strings.HasSuffix(rec, ".sse")
}

// fxEvents checks a streamed answer's status, framing and numbering, and
// returns its events' data.
func fxEvents(t *testing.T, got rawResult) []json.RawMessage {
	t.Helper()
	if got.Status != 200 || got.Events == nil {
		t.Fatalf("status %d, %s, want a 200 stream: %.300s", got.Status, got.Header.Get("Content-Type"), got.Body)
	}
	fxCheckFraming(t, "emulator", got.Body)
	var out []json.RawMessage
	for _, ev := range got.Events {
		out = append(out, ev.Data)
	}
	fxCheckSequence(t, "emulator", out)
	return out
}

// fxCheckFraming checks the SSE framing of a whole stream: frames of exactly
// "event: <type>" and "data: <json of that type>", and no [DONE].
func fxCheckFraming(t *testing.T, who string, body []byte) {
	t.Helper()
	s := string(body)
	if strings.Contains(s, "[DONE]") {
		t.Errorf("%s: the stream has a [DONE]", who)
	}
	if !strings.HasSuffix(s, "\n\n") {
		t.Errorf("%s: the stream does not end with a blank line", who)
	}
	for i, frame := range strings.Split(strings.TrimRight(s, "\n"), "\n\n") {
		lines := strings.Split(frame, "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[0], "event: ") || !strings.HasPrefix(lines[1], "data: ") {
			t.Errorf("%s: frame %d is not event: + data: lines: %.200q", who, i, frame)
			continue
		}
		var data struct{ Type string }
		if err := json.Unmarshal([]byte(strings.TrimPrefix(lines[1], "data: ")), &data); err != nil {
			t.Errorf("%s: frame %d data: %v", who, i, err)
		}
		if ev := strings.TrimPrefix(lines[0], "event: "); ev != data.Type {
			t.Errorf("%s: frame %d is event %q with data of type %q", who, i, ev, data.Type)
		}
	}
}

func fxCheckSequence(t *testing.T, who string, events []json.RawMessage) {
	t.Helper()
	for i, raw := range events {
		var ev struct {
			Seq *int `json:"sequence_number"`
		}
		if err := json.Unmarshal(raw, &ev); err != nil || ev.Seq == nil || *ev.Seq != i {
			t.Fatalf("%s: event %d has sequence_number %s (%v), want %d", who, i, fxJSON(ev.Seq), err, i)
		}
	}
}

// fxStep is one event reduced to its structure.
type fxStep struct {
	label    string            // type, and the item's type for output_item events
	shape    map[string]string // fxFlat of the event without its response
	response map[string]any    // the response object of response.* events
}

func fxSteps(t *testing.T, events []json.RawMessage, o fxOpts) []fxStep {
	t.Helper()
	var out []fxStep
	for _, raw := range events {
		ev := fxDecode(t, raw)
		s := fxStep{label: ev["type"].(string)}
		if item, ok := ev["item"].(map[string]any); ok {
			s.label += " " + item["type"].(string)
		}
		if r, ok := ev["response"].(map[string]any); ok {
			s.response = r
			delete(ev, "response")
		}
		s.shape = fxFlat(ev)
		if o.callWithoutStatus && s.shape["item.type"] == "=mcp_call" {
			delete(s.shape, "item.status")
		}
		if n := len(out); n > 0 && s.label == "response.output_text.delta" && out[n-1].label == s.label && cmp.Equal(out[n-1].shape, s.shape) {
			continue
		}
		out = append(out, s)
	}
	return out
}

// fxSameEvents compares two streams event by event.
func fxSameEvents(t *testing.T, rec string, recorded, got []json.RawMessage, o fxOpts) {
	t.Helper()
	want, have := fxSteps(t, recorded, fxOpts{}), fxSteps(t, got, o)
	label := func(s []fxStep) []string {
		var out []string
		for _, x := range s {
			out = append(out, x.label)
		}
		return out
	}
	if d := cmp.Diff(label(want), label(have)); d != "" {
		t.Fatalf("event sequence differs from %s (-recorded +emulator):\n%s", rec, d)
	}
	ref := map[string]map[string]any{}
	for _, s := range fxSteps(t, fxRecordedStream(t, fxApproval1+".chunks.jsonl"), fxOpts{}) {
		if s.response != nil {
			ref[s.label] = s.response
		}
	}
	for i := range want {
		what := fmt.Sprintf("event %d (%s)", i, want[i].label)
		if d := cmp.Diff(want[i].shape, have[i].shape); d != "" {
			t.Errorf("%s differs from %s (-recorded +emulator):\n%s", what, rec, d)
		}
		if want[i].response != nil {
			fxSameResponse(t, rec+" "+what, want[i].response, ref[want[i].label], have[i].response, o)
		}
	}
}

// fxSameBody compares a non-streamed answer with a recorded body.
func fxSameBody(t *testing.T, rec string, recorded []byte, got rawResult, o fxOpts) {
	t.Helper()
	if got.Status != 200 || got.Events != nil {
		t.Fatalf("status %d, %s, want a 200 JSON body: %.300s", got.Status, got.Header.Get("Content-Type"), got.Body)
	}
	ref := fxDecode(t, fxFixture(t, fxApproval1+".json"))
	fxSameResponse(t, rec, fxDecode(t, recorded), ref, fxDecode(t, got.Body), o)
}

// fxSameResponse compares response objects: output items exactly; the other
// keys as a set against ref (a vercel approval recording), and by kind
// against want where want has them too.
func fxSameResponse(t *testing.T, what string, want, ref, got map[string]any, o fxOpts) {
	t.Helper()
	items := func(r map[string]any, adjust bool) []map[string]string {
		var out []map[string]string
		for _, it := range r["output"].([]any) {
			f := fxFlat(it)
			if adjust && o.callWithoutStatus && f["type"] == "=mcp_call" {
				delete(f, "status")
			}
			out = append(out, f)
		}
		return out
	}
	wi, gi := items(want, false), items(got, true)
	if o.trimmedOutput {
		kept := map[string]bool{}
		for _, f := range wi {
			kept[f["type"]] = true
		}
		gi = slices.DeleteFunc(gi, func(f map[string]string) bool { return !kept[f["type"]] })
	}
	if d := cmp.Diff(wi, gi); d != "" {
		t.Errorf("%s: response output differs (-recorded +emulator):\n%s", what, d)
	}

	rest := func(r map[string]any) map[string]string {
		c := maps.Clone(r)
		delete(c, "output")
		return fxFlat(c)
	}
	wf, rf, gf := rest(want), rest(ref), rest(got)
	if d := cmp.Diff(slices.Sorted(maps.Keys(rf)), slices.Sorted(maps.Keys(gf))); d != "" {
		t.Errorf("%s: response keys differ from the vercel approval recording (-recorded +emulator):\n%s", what, d)
	}
	wk, gk := map[string]string{}, map[string]string{}
	for k, v := range wf {
		if g, ok := gf[k]; ok {
			wk[k], gk[k] = v, g
		}
	}
	if d := cmp.Diff(wk, gk); d != "" {
		t.Errorf("%s: response key kinds differ (-recorded +emulator):\n%s", what, d)
	}
}

// fxListPart is the mcp_list_tools part of a stream: from the item's
// output_item.added to its output_item.done.
func fxListPart(t *testing.T, events []json.RawMessage) []json.RawMessage {
	t.Helper()
	start := -1
	for i, raw := range events {
		var ev struct {
			Type string
			Item struct{ Type string }
		}
		_ = json.Unmarshal(raw, &ev)
		switch {
		case ev.Type == "response.output_item.added" && ev.Item.Type == "mcp_list_tools":
			start = i
		case ev.Type == "response.output_item.done" && ev.Item.Type == "mcp_list_tools" && start >= 0:
			return events[start : i+1]
		}
	}
	t.Fatal("no mcp_list_tools part in the stream")
	return nil
}

// Kinds of fxFlat's values. Values of these keys are kept ("=value"):
// they name types and states. Ids keep their prefix ("id:mcpl_").
var (
	fxKeepValue = map[string]bool{"type": true, "status": true, "role": true, "object": true}
	fxIDKeys    = map[string]bool{"id": true, "item_id": true, "approval_request_id": true, "previous_response_id": true}
	fxOpaque    = map[string]bool{"input_schema": true} // the MCP server's schema, not the API's
)

// fxFlat maps every JSON path in v to its kind: "null", "bool", "number",
// "string", "object", "array" or "[]" (empty). Array elements are merged
// under "path[]": kinds joined by "|", "absent" where an element lacks the
// path. (Response output is compared item by item, not through this.)
func fxFlat(v any) map[string]string {
	m := map[string]string{}
	fxFlatInto(m, "", "", v)
	return m
}

func fxFlatInto(m map[string]string, path, key string, v any) {
	set := func(kind string) {
		if path != "" {
			m[path] = kind
		}
	}
	switch x := v.(type) {
	case nil:
		set("null")
	case bool:
		set("bool")
	case float64:
		set("number")
	case string:
		switch {
		case fxKeepValue[key]:
			set("=" + x)
		case fxIDKeys[key]:
			prefix, _, _ := strings.Cut(x, "_")
			set("id:" + prefix + "_")
		default:
			set("string")
		}
	case map[string]any:
		set("object")
		if fxOpaque[key] {
			return
		}
		for k, e := range x {
			p := k
			if path != "" {
				p = path + "." + k
			}
			fxFlatInto(m, p, k, e)
		}
	case []any:
		if len(x) == 0 {
			set("[]")
			return
		}
		set("array")
		elems := make([]map[string]string, len(x))
		all := map[string]bool{}
		for i, e := range x {
			elems[i] = map[string]string{}
			fxFlatInto(elems[i], path+"[]", "", e)
			for p := range elems[i] {
				all[p] = true
			}
		}
		for p := range all {
			kinds := map[string]bool{}
			for _, el := range elems {
				if k, ok := el[p]; ok {
					kinds[k] = true
				} else {
					kinds["absent"] = true
				}
			}
			m[p] = strings.Join(slices.Sorted(maps.Keys(kinds)), "|")
		}
	default:
		panic(fmt.Sprintf("fxFlat: unexpected %T", v))
	}
}

// ---- loading recordings ----

// fxDir is the recordings' directory: a verbatim copy of
// ../shared/openai-fixtures kept in testdata, so that the twins run in any
// checkout (TestTwin_RecordingsMatchShared notices when the copy drifts).
func fxDir(t *testing.T) string {
	t.Helper()
	return filepath.Join("testdata", "openai-fixtures")
}

// TestTwin_RecordingsMatchShared checks that testdata holds the same
// recordings as the shared folder, where that folder is present.
func TestTwin_RecordingsMatchShared(t *testing.T) {
	shared := filepath.Join("..", "..", "..", "shared", "openai-fixtures")
	entries, err := os.ReadDir(shared)
	if err != nil {
		t.Logf("no shared recordings at %s to compare with (%v); using testdata only", shared, err)
		return
	}
	for _, e := range entries {
		want, err := os.ReadFile(filepath.Join(shared, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(fxDir(t), e.Name()))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("testdata/openai-fixtures/%s differs from %s (copy it again): %v", e.Name(), shared, err)
		}
	}
}

// fxFixture reads a recording without its leading "# " header lines.
func fxFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fxDir(t), name))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	i := 0
	for i < len(lines) && strings.HasPrefix(lines[i], "# ") {
		i++
	}
	return []byte(strings.Join(lines[i:], ""))
}

// fxRecordedStream returns a recorded stream's event payloads: one per line
// in .chunks.jsonl; .sse keeps the wire framing, which is checked too.
func fxRecordedStream(t *testing.T, name string) []json.RawMessage {
	t.Helper()
	b := fxFixture(t, name)
	var out []json.RawMessage
	if strings.HasSuffix(name, ".sse") {
		fxCheckFraming(t, name, b)
		for _, ev := range parseSSE(t, b) {
			out = append(out, ev.Data)
		}
		fxCheckSequence(t, name, out)
		return out
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(line) != "" {
			out = append(out, json.RawMessage(line))
		}
	}
	fxCheckSequence(t, name, out)
	return out
}

// fxSection returns the JSON document under the "===== <title>..." line of
// a .txt recording.
func fxSection(t *testing.T, name, title string) []byte {
	t.Helper()
	for _, sec := range strings.Split("\n"+string(fxFixture(t, name)), "\n===== ")[1:] {
		if head, body, _ := strings.Cut(sec, "\n"); strings.HasPrefix(head, title) {
			return []byte(body)
		}
	}
	t.Fatalf("%s has no section %q", name, title)
	return nil
}

// fxJSObject turns the JavaScript object literal of the openai-node issue
// (unquoted keys, single-quoted strings) into a JSON value.
func fxJSObject(t *testing.T, b []byte) map[string]any {
	t.Helper()
	s := string(b[bytes.IndexByte(b, '{'):])
	var out strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'') + i + 1
			q, _ := json.Marshal(s[i+1 : j])
			out.Write(q)
			i = j
		case c == '_' || c >= 'a' && c <= 'z':
			j := i
			for j < len(s) && (s[j] == '_' || s[j] >= 'a' && s[j] <= 'z') {
				j++
			}
			if word := s[i:j]; word == "null" || word == "true" || word == "false" {
				out.WriteString(word)
			} else {
				out.WriteString(`"` + word + `"`)
			}
			i = j - 1
		default:
			out.WriteByte(c)
		}
	}
	return fxDecode(t, []byte(out.String()))
}

func fxDecode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("decode: %v: %.300s", err, b)
	}
	return v
}

// fxOutput is the output array of a response body.
func fxOutput(t *testing.T, body []byte) []any {
	t.Helper()
	out, ok := fxDecode(t, body)["output"].([]any)
	if !ok {
		t.Fatalf("no output in %.300s", body)
	}
	return out
}

// fxFind is the first output item of a type.
func fxFind(t *testing.T, output []any, typ string) map[string]any {
	t.Helper()
	for _, it := range output {
		if m := it.(map[string]any); m["type"] == typ {
			return m
		}
	}
	t.Fatalf("no %s item in the output", typ)
	return nil
}

func fxJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
