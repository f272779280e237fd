package emulator_test

// Tests through the official openai-go client: requests are built with the
// SDK's param types, answers are read with AsAny() into the SDK's typed
// events and items, and errors arrive as *openai.Error. If the emulator
// drifts from what the SDK can parse, these tests fail.

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"

	"github.com/toolgate/toolgate/internal/emulator"
)

const clModel = "gpt-4.1" // a non-reasoning model: no reasoning items

// clTool is an mcp entry with a string require_approval ("" leaves it out).
func clTool(label, url, approval string) responses.ToolUnionParam {
	m := &responses.ToolMcpParam{ServerLabel: label, ServerURL: openai.String(url)}
	if approval != "" {
		m.RequireApproval = responses.ToolMcpRequireApprovalUnionParam{OfMcpToolApprovalSetting: openai.String(approval)}
	}
	return responses.ToolUnionParam{OfMcp: m}
}

// clParams is a request with a user message and tools.
func clParams(text string, tools ...responses.ToolUnionParam) responses.ResponseNewParams {
	return responses.ResponseNewParams{
		Model: clModel,
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(text)},
		Tools: tools,
	}
}

// clFollowUp answers approval requests of prev with the same tools.
func clFollowUp(prev string, tools []responses.ToolUnionParam, answers ...responses.ResponseInputItemUnionParam) responses.ResponseNewParams {
	return responses.ResponseNewParams{
		Model:              clModel,
		PreviousResponseID: openai.String(prev),
		Input:              responses.ResponseNewParamsInputUnion{OfInputItemList: answers},
		Tools:              tools,
	}
}

func clApprove(id string) responses.ResponseInputItemUnionParam {
	return responses.ResponseInputItemParamOfMcpApprovalResponse(id, true)
}

func clDeny(id, reason string) responses.ResponseInputItemUnionParam {
	a := responses.ResponseInputItemParamOfMcpApprovalResponse(id, false)
	if reason != "" {
		a.OfMcpApprovalResponse.Reason = openai.String(reason)
	}
	return a
}

// clOutput is a response's output sorted into the SDK's typed items.
type clOutput struct {
	Kinds     []string // item types in order
	Lists     []responses.ResponseOutputItemMcpListTools
	Calls     []responses.ResponseOutputItemMcpCall
	Approvals []responses.ResponseOutputItemMcpApprovalRequest
	Messages  []responses.ResponseOutputMessage
}

func clItems(t *testing.T, resp *responses.Response) clOutput {
	t.Helper()
	var o clOutput
	for i, it := range resp.Output {
		switch v := it.AsAny().(type) {
		case responses.ResponseOutputItemMcpListTools:
			o.Kinds = append(o.Kinds, "mcp_list_tools")
			o.Lists = append(o.Lists, v)
		case responses.ResponseOutputItemMcpCall:
			o.Kinds = append(o.Kinds, "mcp_call")
			o.Calls = append(o.Calls, v)
		case responses.ResponseOutputItemMcpApprovalRequest:
			o.Kinds = append(o.Kinds, "mcp_approval_request")
			o.Approvals = append(o.Approvals, v)
		case responses.ResponseOutputMessage:
			o.Kinds = append(o.Kinds, "message")
			o.Messages = append(o.Messages, v)
		case responses.ResponseReasoningItem:
			o.Kinds = append(o.Kinds, "reasoning")
		default:
			t.Fatalf("output[%d]: AsAny() gave %T for type %q", i, v, it.Type)
		}
	}
	return o
}

// clMessageText is the text of a message's output_text parts.
func clMessageText(t *testing.T, m responses.ResponseOutputMessage) string {
	t.Helper()
	var b strings.Builder
	for _, c := range m.Content {
		ot, ok := c.AsAny().(responses.ResponseOutputText)
		if !ok {
			t.Fatalf("message content %q is not output_text", c.Type)
		}
		b.WriteString(ot.Text)
	}
	return b.String()
}

func clNew(t *testing.T, e *emu, p responses.ResponseNewParams, opts ...option.RequestOption) *responses.Response {
	t.Helper()
	resp, err := e.Client.Responses.New(context.Background(), p, opts...)
	if err != nil {
		t.Fatalf("Responses.New: %v", err)
	}
	if resp.Status != responses.ResponseStatusCompleted {
		t.Fatalf("status = %q, want completed", resp.Status)
	}
	return resp
}

// clAPIError sends p and expects an *openai.Error with the given status.
func clAPIError(t *testing.T, e *emu, status int, p responses.ResponseNewParams, opts ...option.RequestOption) *openai.Error {
	t.Helper()
	resp, err := e.Client.Responses.New(context.Background(), p, opts...)
	if err == nil {
		t.Fatalf("Responses.New succeeded (response %s, status %s), want HTTP %d", resp.ID, resp.Status, status)
	}
	return clAsAPIError(t, err, status)
}

func clAsAPIError(t *testing.T, err error, status int) *openai.Error {
	t.Helper()
	var ae *openai.Error
	if !errors.As(err, &ae) {
		t.Fatalf("error %T %v is not *openai.Error", err, err)
	}
	if ae.StatusCode != status {
		t.Fatalf("StatusCode = %d, want %d (%s)", ae.StatusCode, status, ae.Message)
	}
	if ae.Type == "" || ae.Message == "" {
		t.Errorf("error without type or message: %s", ae.RawJSON())
	}
	return ae
}

func clCheckError(t *testing.T, ae *openai.Error, code, param string, msgParts ...string) {
	t.Helper()
	if ae.Code != code {
		t.Errorf("Code = %q, want %q (%s)", ae.Code, code, ae.Message)
	}
	if ae.Param != param {
		t.Errorf("Param = %q, want %q (%s)", ae.Param, param, ae.Message)
	}
	for _, p := range msgParts {
		if !strings.Contains(ae.Message, p) {
			t.Errorf("Message %q does not contain %q", ae.Message, p)
		}
	}
}

// clApprovalPending runs a turn that names the tools in text with
// require_approval "always" and returns it with its approval requests.
func clApprovalPending(t *testing.T, e *emu, m *testMCP, text string, want int) (*responses.Response, []responses.ResponseOutputItemMcpApprovalRequest, []responses.ToolUnionParam) {
	t.Helper()
	tools := []responses.ToolUnionParam{clTool("test", m.URL, "always")}
	resp := clNew(t, e, clParams(text, tools...))
	o := clItems(t, resp)
	if len(o.Approvals) != want {
		t.Fatalf("got %d approval requests (%v), want %d", len(o.Approvals), o.Kinds, want)
	}
	return resp, o.Approvals, tools
}

func TestClient_StreamingNeverCallRunsToolAndStreamsItsOutput(t *testing.T) {
	t.Parallel()
	m := startTestMCP(t, "")
	e := startEmulator(t, emulator.Config{})

	stream := e.Client.Responses.NewStreaming(context.Background(),
		clParams(`please echo {"text": "hello stream"}`, clTool("test", m.URL, "never")))
	defer stream.Close()

	var (
		kinds           []string // event types, runs of text deltas collapsed
		seq             int64
		deltas          strings.Builder
		textDone        string
		created         *responses.Response
		completed       *responses.Response
		listDone        *responses.ResponseOutputItemMcpListTools
		callAdded       *responses.ResponseOutputItemMcpCall
		callDone        *responses.ResponseOutputItemMcpCall
		msgDone         *responses.ResponseOutputMessage
		argsDelta       string
		argsDone        string
		completedCallID string
	)
	for stream.Next() {
		ev := stream.Current()
		if ev.SequenceNumber != seq {
			t.Errorf("event %d (%s) has sequence_number %d", seq, ev.Type, ev.SequenceNumber)
		}
		seq++
		if ev.Type != "response.output_text.delta" || len(kinds) == 0 || kinds[len(kinds)-1] != ev.Type {
			kinds = append(kinds, ev.Type)
		}
		switch v := ev.AsAny().(type) {
		case responses.ResponseCreatedEvent:
			r := v.Response
			created = &r
		case responses.ResponseInProgressEvent:
		case responses.ResponseOutputItemAddedEvent:
			switch it := v.Item.AsAny().(type) {
			case responses.ResponseOutputItemMcpListTools:
				if len(it.Tools) != 0 {
					t.Errorf("output_item.added mcp_list_tools carries %d tools, want an empty list", len(it.Tools))
				}
			case responses.ResponseOutputItemMcpCall:
				callAdded = &it
			case responses.ResponseOutputMessage:
				if it.Status != responses.ResponseOutputMessageStatusInProgress {
					t.Errorf("added message status %q", it.Status)
				}
			default:
				t.Errorf("output_item.added: unexpected item %T (%s)", it, v.Item.Type)
			}
		case responses.ResponseOutputItemDoneEvent:
			switch it := v.Item.AsAny().(type) {
			case responses.ResponseOutputItemMcpListTools:
				listDone = &it
			case responses.ResponseOutputItemMcpCall:
				callDone = &it
			case responses.ResponseOutputMessage:
				msgDone = &it
			default:
				t.Errorf("output_item.done: unexpected item %T (%s)", it, v.Item.Type)
			}
		case responses.ResponseMcpListToolsInProgressEvent, responses.ResponseMcpListToolsCompletedEvent,
			responses.ResponseMcpCallInProgressEvent, responses.ResponseContentPartAddedEvent, responses.ResponseContentPartDoneEvent:
		case responses.ResponseMcpCallArgumentsDeltaEvent:
			argsDelta += v.Delta
		case responses.ResponseMcpCallArgumentsDoneEvent:
			argsDone = v.Arguments
		case responses.ResponseMcpCallCompletedEvent:
			completedCallID = v.ItemID
		case responses.ResponseTextDeltaEvent:
			deltas.WriteString(v.Delta)
		case responses.ResponseTextDoneEvent:
			textDone = v.Text
		case responses.ResponseCompletedEvent:
			r := v.Response
			completed = &r
		default:
			t.Errorf("event %q: AsAny() gave %T", ev.Type, v)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream.Err() = %v", err)
	}

	wantKinds := []string{
		"response.created", "response.in_progress",
		"response.output_item.added", "response.mcp_list_tools.in_progress", "response.mcp_list_tools.completed", "response.output_item.done",
		"response.output_item.added", "response.mcp_call.in_progress", "response.mcp_call_arguments.delta", "response.mcp_call_arguments.done", "response.mcp_call.completed", "response.output_item.done",
		"response.output_item.added", "response.content_part.added", "response.output_text.delta", "response.output_text.done", "response.content_part.done", "response.output_item.done",
		"response.completed",
	}
	if !slices.Equal(kinds, wantKinds) {
		t.Errorf("event order:\n got %v\nwant %v", kinds, wantKinds)
	}
	if created == nil || !strings.HasPrefix(created.ID, "resp_") || created.Status != responses.ResponseStatusInProgress {
		t.Fatalf("response.created: %+v", created)
	}
	if completed == nil || completed.ID != created.ID || completed.Status != responses.ResponseStatusCompleted {
		t.Fatalf("response.completed: %+v", completed)
	}
	if listDone == nil || !strings.HasPrefix(listDone.ID, "mcpl_") || listDone.ServerLabel != "test" {
		t.Fatalf("mcp_list_tools done: %+v", listDone)
	}
	var names []string
	for _, tl := range listDone.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"add", "echo", "fail", "wipe"}) {
		t.Errorf("listed tools = %v", names)
	}
	if callAdded == nil || callAdded.Arguments != "" || callAdded.JSON.Output.Valid() {
		t.Errorf("mcp_call added: %+v (want empty arguments, no output yet)", callAdded)
	}
	if callDone == nil {
		t.Fatal("no mcp_call output_item.done")
	}
	if !strings.HasPrefix(callDone.ID, "mcp_") || callDone.Name != "echo" || callDone.ServerLabel != "test" {
		t.Errorf("mcp_call: %+v", callDone)
	}
	if callDone.Output != "echo: hello stream" {
		t.Errorf("mcp_call output = %q, want the tool's real output %q", callDone.Output, "echo: hello stream")
	}
	if callDone.JSON.Error.Valid() || callDone.ApprovalRequestID != "" || callDone.Status != "completed" {
		t.Errorf("mcp_call error/approval/status: %s", callDone.RawJSON())
	}
	var args map[string]string
	if err := json.Unmarshal([]byte(callDone.Arguments), &args); err != nil || args["text"] != "hello stream" {
		t.Errorf("mcp_call arguments = %q", callDone.Arguments)
	}
	if argsDelta != callDone.Arguments || argsDone != callDone.Arguments {
		t.Errorf("arguments delta %q / done %q, item %q", argsDelta, argsDone, callDone.Arguments)
	}
	if completedCallID != callDone.ID {
		t.Errorf("mcp_call.completed item_id %q, call %q", completedCallID, callDone.ID)
	}
	if got := m.Calls("echo"); got != 1 {
		t.Errorf("echo ran %d times, want 1", got)
	}
	text := deltas.String()
	if text == "" || text != textDone {
		t.Errorf("deltas %q != output_text.done %q", text, textDone)
	}
	if !strings.Contains(text, "echo: hello stream") {
		t.Errorf("answer %q does not quote the tool output", text)
	}
	if msgDone == nil || clMessageText(t, *msgDone) != text || msgDone.Status != responses.ResponseOutputMessageStatusCompleted {
		t.Errorf("message done: %+v", msgDone)
	}
	if completed.OutputText() != text {
		t.Errorf("completed response OutputText() = %q, want %q", completed.OutputText(), text)
	}
	if o := clItems(t, completed); !slices.Equal(o.Kinds, []string{"mcp_list_tools", "mcp_call", "message"}) {
		t.Errorf("completed output = %v", o.Kinds)
	} else if o.Calls[0].Output != callDone.Output || o.Calls[0].ID != callDone.ID {
		t.Errorf("completed response's call %+v differs from the streamed one", o.Calls[0])
	}
}

func TestClient_NonStreamingNeverCallReturnsTypedItems(t *testing.T) {
	t.Parallel()
	m := startTestMCP(t, "")
	e := startEmulator(t, emulator.Config{})

	resp := clNew(t, e, clParams(`add {"a": 2, "b": 40}`, clTool("calc", m.URL, "never")))
	if !strings.HasPrefix(resp.ID, "resp_") || resp.Model != clModel {
		t.Errorf("id %q model %q", resp.ID, resp.Model)
	}
	o := clItems(t, resp)
	if !slices.Equal(o.Kinds, []string{"mcp_list_tools", "mcp_call", "message"}) {
		t.Fatalf("output = %v", o.Kinds)
	}
	c := o.Calls[0]
	if c.Name != "add" || c.ServerLabel != "calc" || c.Output != "42" || c.Status != "completed" {
		t.Errorf("mcp_call = %s", c.RawJSON())
	}
	if c.JSON.Error.Raw() != "null" || c.JSON.ApprovalRequestID.Raw() != "null" {
		t.Errorf("error %q approval_request_id %q, want null", c.JSON.Error.Raw(), c.JSON.ApprovalRequestID.Raw())
	}
	text := clMessageText(t, o.Messages[0])
	if !strings.Contains(text, "42") || text != resp.OutputText() {
		t.Errorf("answer %q (OutputText %q) does not quote the output 42", text, resp.OutputText())
	}
	if got := m.Calls("add"); got != 1 {
		t.Errorf("add ran %d times, want 1", got)
	}
}

func TestClient_PlainTextWithoutToolNameCallsNothing(t *testing.T) {
	t.Parallel()
	m := startTestMCP(t, "")
	e := startEmulator(t, emulator.Config{})

	resp := clNew(t, e, clParams("hello there", clTool("test", m.URL, "never")))
	o := clItems(t, resp)
	if !slices.Equal(o.Kinds, []string{"mcp_list_tools", "message"}) {
		t.Fatalf("output = %v", o.Kinds)
	}
	if text := resp.OutputText(); !strings.Contains(text, "test.echo") || !strings.Contains(text, "hello there") {
		t.Errorf("answer %q does not list the tools or quote the message", text)
	}
	for _, n := range []string{"echo", "add", "fail", "wipe"} {
		if m.Calls(n) != 0 {
			t.Errorf("%s ran", n)
		}
	}
}

func TestClient_StreamingApprovalRequestCompletesWithoutRunningTool(t *testing.T) {
	t.Parallel()
	m := startTestMCP(t, "")
	e := startEmulator(t, emulator.Config{})

	stream := e.Client.Responses.NewStreaming(context.Background(),
		clParams(`echo {"text": "later"}`, clTool("test", m.URL, "always")))
	defer stream.Close()
	var kinds []string
	var added, done *responses.ResponseOutputItemMcpApprovalRequest
	var final *responses.Response
	for stream.Next() {
		ev := stream.Current()
		kinds = append(kinds, ev.Type)
		switch v := ev.AsAny().(type) {
		case responses.ResponseOutputItemAddedEvent:
			if a, ok := v.Item.AsAny().(responses.ResponseOutputItemMcpApprovalRequest); ok {
				added = &a
			}
		case responses.ResponseOutputItemDoneEvent:
			if a, ok := v.Item.AsAny().(responses.ResponseOutputItemMcpApprovalRequest); ok {
				done = &a
			}
		case responses.ResponseCompletedEvent:
			final = &v.Response
		case nil:
			t.Errorf("event %q unknown to the SDK", ev.Type)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream.Err() = %v", err)
	}
	want := []string{
		"response.created", "response.in_progress",
		"response.output_item.added", "response.mcp_list_tools.in_progress", "response.mcp_list_tools.completed", "response.output_item.done",
		"response.output_item.added", "response.output_item.done",
		"response.completed",
	}
	if !slices.Equal(kinds, want) {
		t.Errorf("events:\n got %v\nwant %v", kinds, want)
	}
	if added == nil || done == nil || added.ID != done.ID || !strings.HasPrefix(done.ID, "mcpr_") {
		t.Fatalf("approval request added %+v done %+v", added, done)
	}
	if done.Name != "echo" || done.ServerLabel != "test" || done.Arguments != `{"text":"later"}` {
		t.Errorf("approval request = %s", done.RawJSON())
	}
	if final == nil || final.Status != responses.ResponseStatusCompleted {
		t.Fatalf("final response %+v", final)
	}
	if o := clItems(t, final); !slices.Equal(o.Kinds, []string{"mcp_list_tools", "mcp_approval_request"}) {
		t.Errorf("final output %v", o.Kinds)
	}
	if m.Calls("echo") != 0 {
		t.Errorf("echo ran before approval")
	}
}

func TestClient_ApprovedToolRunsOnceInFollowUpWithoutRelisting(t *testing.T) {
	t.Parallel()
	m := startTestMCP(t, "")
	e := startEmulator(t, emulator.Config{})

	first, reqs, tools := clApprovalPending(t, e, m, `echo {"text": "approved"}`, 1)
	o1 := clItems(t, first)
	if !slices.Equal(o1.Kinds, []string{"mcp_list_tools", "mcp_approval_request"}) {
		t.Fatalf("first output = %v", o1.Kinds)
	}
	ar := reqs[0]
	if !strings.HasPrefix(ar.ID, "mcpr_") || ar.Name != "echo" || ar.ServerLabel != "test" || ar.Arguments != `{"text":"approved"}` {
		t.Errorf("approval request = %s", ar.RawJSON())
	}
	if m.Calls("echo") != 0 {
		t.Fatal("echo ran before approval")
	}

	second := clNew(t, e, clFollowUp(first.ID, tools, clApprove(ar.ID)))
	if second.PreviousResponseID != first.ID {
		t.Errorf("previous_response_id = %q, want %q", second.PreviousResponseID, first.ID)
	}
	o2 := clItems(t, second)
	if !slices.Equal(o2.Kinds, []string{"mcp_call", "message"}) {
		t.Fatalf("follow-up output = %v (no mcp_list_tools expected: the list is in context)", o2.Kinds)
	}
	c := o2.Calls[0]
	if c.ApprovalRequestID != ar.ID {
		t.Errorf("approval_request_id = %q, want %q", c.ApprovalRequestID, ar.ID)
	}
	if c.Name != "echo" || c.Arguments != ar.Arguments || c.Output != "echo: approved" {
		t.Errorf("mcp_call = %s", c.RawJSON())
	}
	if got := m.Calls("echo"); got != 1 {
		t.Errorf("echo ran %d times, want 1", got)
	}
	if !strings.Contains(second.OutputText(), "echo: approved") {
		t.Errorf("answer %q does not quote the output", second.OutputText())
	}
}

func TestClient_DeniedToolDoesNotRunAndAnswerQuotesReason(t *testing.T) {
	t.Parallel()
	m := startTestMCP(t, "")
	e := startEmulator(t, emulator.Config{})

	first, reqs, tools := clApprovalPending(t, e, m, "wipe", 1)
	reason := "not on a Friday afternoon"
	second := clNew(t, e, clFollowUp(first.ID, tools, clDeny(reqs[0].ID, reason)))
	o := clItems(t, second)
	if !slices.Equal(o.Kinds, []string{"message"}) {
		t.Fatalf("output = %v, want only a message", o.Kinds)
	}
	text := second.OutputText()
	if !strings.Contains(text, reason) || !strings.Contains(text, "wipe") {
		t.Errorf("answer %q does not name the tool and quote the reason %q", text, reason)
	}
	if m.Calls("wipe") != 0 {
		t.Error("wipe ran although denied")
	}
}

func TestClient_TwoApprovalRequestsAnsweredTogetherRunOnlyTheApprovedOne(t *testing.T) {
	t.Parallel()
	m := startTestMCP(t, "")
	e := startEmulator(t, emulator.Config{})

	first, reqs, tools := clApprovalPending(t, e, m, `echo {"text": "one"} and then add {"a": 1, "b": 2}`, 2)
	if reqs[0].Name != "echo" || reqs[1].Name != "add" || reqs[0].ID == reqs[1].ID {
		t.Fatalf("approval requests %s / %s", reqs[0].RawJSON(), reqs[1].RawJSON())
	}
	if o := clItems(t, first); len(o.Messages) != 0 || len(o.Calls) != 0 {
		t.Errorf("first output = %v, want no call and no message", o.Kinds)
	}
	second := clNew(t, e, clFollowUp(first.ID, tools, clDeny(reqs[1].ID, "no maths today"), clApprove(reqs[0].ID)))
	o := clItems(t, second)
	if !slices.Equal(o.Kinds, []string{"mcp_call", "message"}) {
		t.Fatalf("output = %v", o.Kinds)
	}
	if o.Calls[0].Name != "echo" || o.Calls[0].ApprovalRequestID != reqs[0].ID || o.Calls[0].Output != "echo: one" {
		t.Errorf("call = %s", o.Calls[0].RawJSON())
	}
	if m.Calls("echo") != 1 || m.Calls("add") != 0 {
		t.Errorf("echo ran %d times, add %d times; want 1 and 0", m.Calls("echo"), m.Calls("add"))
	}
	text := second.OutputText()
	if !strings.Contains(text, "echo: one") || !strings.Contains(text, "no maths today") {
		t.Errorf("answer %q does not quote the output and the denial", text)
	}
}

func TestClient_GetReturnsStoredResponseAndUnknownIDIs404(t *testing.T) {
	t.Parallel()
	m := startTestMCP(t, "")
	e := startEmulator(t, emulator.Config{})

	created := clNew(t, e, clParams(`echo {"text": "keep me"}`, clTool("test", m.URL, "never")))
	got, err := e.Client.Responses.Get(context.Background(), created.ID, responses.ResponseGetParams{})
	if err != nil {
		t.Fatalf("Responses.Get: %v", err)
	}
	if got.ID != created.ID || got.Status != responses.ResponseStatusCompleted || got.OutputText() != created.OutputText() {
		t.Errorf("GET gave %s %s %q, want %s completed %q", got.ID, got.Status, got.OutputText(), created.ID, created.OutputText())
	}
	og, oc := clItems(t, got), clItems(t, created)
	if !slices.Equal(og.Kinds, oc.Kinds) || len(og.Calls) != 1 || og.Calls[0].ID != oc.Calls[0].ID || og.Calls[0].Output != "echo: keep me" {
		t.Errorf("GET output %v differs from the created response's %v", og.Kinds, oc.Kinds)
	}
	if m.Calls("echo") != 1 {
		t.Errorf("GET ran the tool again: %d calls", m.Calls("echo"))
	}

	_, err = e.Client.Responses.Get(context.Background(), "resp_unknown", responses.ResponseGetParams{})
	if err == nil {
		t.Fatal("GET of an unknown id succeeded")
	}
	ae := clAsAPIError(t, err, http.StatusNotFound)
	if !strings.Contains(ae.Message, "resp_unknown") {
		t.Errorf("404 message %q does not name the id", ae.Message)
	}
}

func TestClient_StoreFalseIsNeitherRetrievableNorChainable(t *testing.T) {
	t.Parallel()
	e := startEmulator(t, emulator.Config{})

	p := clParams("hello")
	p.Store = openai.Bool(false)
	resp := clNew(t, e, p)
	if !strings.Contains(resp.RawJSON(), `"store":false`) {
		t.Error("store not echoed as false")
	}
	_, err := e.Client.Responses.Get(context.Background(), resp.ID, responses.ResponseGetParams{})
	clAsAPIError(t, err, http.StatusNotFound)
	f := clParams("again")
	f.PreviousResponseID = openai.String(resp.ID)
	clCheckError(t, clAPIError(t, e, http.StatusBadRequest, f), "previous_response_not_found", "previous_response_id", resp.ID)
}

func TestClient_UnknownPreviousResponseIs400NotFound(t *testing.T) {
	t.Parallel()
	e := startEmulator(t, emulator.Config{})
	p := clParams("hi")
	p.PreviousResponseID = openai.String("resp_doesnotexist")
	ae := clAPIError(t, e, http.StatusBadRequest, p)
	clCheckError(t, ae, "previous_response_not_found", "previous_response_id", "resp_doesnotexist", "not found")
}

func TestClient_UnknownApprovalRequestIDIs400(t *testing.T) {
	t.Parallel()
	m := startTestMCP(t, "")
	e := startEmulator(t, emulator.Config{})

	first, _, tools := clApprovalPending(t, e, m, "echo", 1)
	ae := clAPIError(t, e, http.StatusBadRequest, clFollowUp(first.ID, tools, clApprove("mcpr_bogus")))
	clCheckError(t, ae, "", "input[0].approval_request_id", "mcpr_bogus")

	// Without previous_response_id there is nothing to answer at all.
	p := clFollowUp(first.ID, tools, clApprove("mcpr_bogus"))
	p.PreviousResponseID = param.Opt[string]{}
	clCheckError(t, clAPIError(t, e, http.StatusBadRequest, p), "", "input[0].approval_request_id", "mcpr_bogus")
	if m.Calls("echo") != 0 {
		t.Error("echo ran")
	}
}

func TestClient_MissingApprovalAnswerIs400(t *testing.T) {
	t.Parallel()
	m := startTestMCP(t, "")
	e := startEmulator(t, emulator.Config{})

	first, reqs, tools := clApprovalPending(t, e, m, "echo add", 2)
	// Only one of two answered.
	ae := clAPIError(t, e, http.StatusBadRequest, clFollowUp(first.ID, tools, clApprove(reqs[0].ID)))
	clCheckError(t, ae, "", "input", "The following MCP approval requests do not have an approval", reqs[1].ID)
	if strings.Contains(ae.Message, reqs[0].ID) {
		t.Errorf("message %q names the answered request", ae.Message)
	}
	// A new user message instead of answers.
	p := clFollowUp(first.ID, tools)
	p.Input = responses.ResponseNewParamsInputUnion{OfString: openai.String("never mind")}
	ae = clAPIError(t, e, http.StatusBadRequest, p)
	clCheckError(t, ae, "", "input", "The following MCP approval requests do not have an approval", reqs[0].ID, reqs[1].ID)
	if m.Calls("echo")+m.Calls("add") != 0 {
		t.Error("a tool ran although the follow-up was rejected")
	}
}

func TestClient_ItemReferenceToRequestWithPreviousResponseIs400Duplicate(t *testing.T) {
	t.Parallel()
	m := startTestMCP(t, "")
	e := startEmulator(t, emulator.Config{})

	first, reqs, tools := clApprovalPending(t, e, m, `echo {"text": "r"}`, 1)
	id := reqs[0].ID
	for _, ref := range []struct {
		name string
		item responses.ResponseInputItemUnionParam
	}{
		{"with type", responses.ResponseInputItemUnionParam{OfItemReference: &responses.ResponseInputItemItemReferenceParam{ID: id, Type: "item_reference"}}},
		{"SDK helper, type omitted", responses.ResponseInputItemParamOfItemReference(id)},
	} {
		t.Run(ref.name, func(t *testing.T) {
			ae := clAPIError(t, e, http.StatusBadRequest, clFollowUp(first.ID, tools, ref.item, clApprove(id)))
			clCheckError(t, ae, "", "input", "Duplicate item found with id "+id)
		})
	}
	if m.Calls("echo") != 0 {
		t.Error("echo ran although the follow-up was rejected")
	}
	// The request is still open: a proper answer works.
	second := clNew(t, e, clFollowUp(first.ID, tools, clApprove(id)))
	if o := clItems(t, second); len(o.Calls) != 1 || o.Calls[0].Output != "echo: r" {
		t.Errorf("follow-up output %v", o.Kinds)
	}
}

func TestClient_ApprovalAnsweredInEarlierTurnCannotBeAnsweredAgain(t *testing.T) {
	t.Parallel()
	m := startTestMCP(t, "")
	e := startEmulator(t, emulator.Config{})

	first, reqs, tools := clApprovalPending(t, e, m, `echo {"text": "x"}`, 1)
	id := reqs[0].ID
	a := clNew(t, e, clFollowUp(first.ID, tools, clApprove(id)))
	// A second branch off the same response may answer it again.
	b := clNew(t, e, clFollowUp(first.ID, tools, clApprove(id)))
	for _, r := range []*responses.Response{a, b} {
		if o := clItems(t, r); len(o.Calls) != 1 || o.Calls[0].ApprovalRequestID != id {
			t.Errorf("%s: output %v", r.ID, o.Kinds)
		}
	}
	if got := m.Calls("echo"); got != 2 {
		t.Errorf("echo ran %d times, want 2 (one per branch)", got)
	}
	// Answering it in a later turn of the chain is a 400.
	ae := clAPIError(t, e, http.StatusBadRequest, clFollowUp(a.ID, tools, clApprove(id)))
	clCheckError(t, ae, "", "input[0].approval_request_id", id, "already has an approval")
	// So is answering it twice in one input.
	ae = clAPIError(t, e, http.StatusBadRequest, clFollowUp(first.ID, tools, clApprove(id), clDeny(id, "")))
	clCheckError(t, ae, "", "input[1].approval_request_id", id, "already has an approval")
	if got := m.Calls("echo"); got != 2 {
		t.Errorf("echo ran %d times after the rejected follow-ups, want 2", got)
	}
}

func TestClient_MalformedRequestsAre400(t *testing.T) {
	t.Parallel()
	m := startTestMCP(t, "")
	e := startEmulator(t, emulator.Config{})

	withTools := func(tools ...responses.ToolUnionParam) responses.ResponseNewParams { return clParams("echo", tools...) }
	cases := []struct {
		name   string
		params responses.ResponseNewParams
		opts   []option.RequestOption
		code   string
		param  string
		msg    []string
	}{
		{
			name: "duplicate server_label", params: withTools(clTool("dup", m.URL, "never"), clTool("dup", m.URL, "always")),
			code: "", param: "tools[1].server_label", msg: []string{"Duplicate", "'dup'"},
		},
		{
			name: "unknown top-level parameter", params: clParams("hi"), opts: []option.RequestOption{option.WithJSONSet("frobnicate", true)},
			code: "unknown_parameter", param: "frobnicate", msg: []string{"Unknown parameter: 'frobnicate'."},
		},
		{
			name:   "missing model",
			params: responses.ResponseNewParams{Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}},
			code:   "missing_required_parameter", param: "model", msg: []string{"Missing required parameter: 'model'."},
		},
		{
			name: "require_approval sometimes", params: withTools(clTool("test", m.URL, "sometimes")),
			code: "invalid_value", param: "tools[0].require_approval", msg: []string{"'sometimes'"},
		},
		{
			name: "function tool",
			params: withTools(responses.ToolUnionParam{OfFunction: &responses.FunctionToolParam{
				Name: "f", Parameters: map[string]any{"type": "object"}, Strict: openai.Bool(false)}}),
			code: "", param: "tools[0].type", msg: []string{"'function'"},
		},
		{
			name:   "server_url missing",
			params: withTools(responses.ToolUnionParam{OfMcp: &responses.ToolMcpParam{ServerLabel: "nourl"}}),
			code:   "missing_required_parameter", param: "tools[0].server_url", msg: []string{"server_url"},
		},
		{
			name: "bad approval_request_id type", params: clParams("hi"),
			opts: []option.RequestOption{option.WithJSONSet("input", []any{map[string]any{"type": "mcp_approval_response", "approval_request_id": 7, "approve": true}})},
			code: "invalid_type", param: "input[0].approval_request_id",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ae := clAPIError(t, e, http.StatusBadRequest, tc.params, tc.opts...)
			if ae.Type != "invalid_request_error" {
				t.Errorf("type = %q", ae.Type)
			}
			clCheckError(t, ae, tc.code, tc.param, tc.msg...)
		})
	}
	t.Run("bad JSON body", func(t *testing.T) {
		r := post(t, e, `{"model": "gpt-4.1", "input": `)
		if r.Status != http.StatusBadRequest {
			t.Fatalf("status %d: %s", r.Status, r.Body)
		}
		body := errorBody(t, r.Body)
		if body.Error.Type != "invalid_request_error" || !strings.Contains(body.Error.Message, "We could not parse the JSON body of your request") || body.Error.Param != nil || body.Error.Code != nil {
			t.Errorf("error = %+v", body.Error)
		}
	})
	if n := m.Calls("echo"); n != 0 {
		t.Errorf("echo ran %d times for rejected requests", n)
	}
}

// clClosedURL is an MCP URL on a loopback port nobody listens on.
func clClosedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return "http://" + addr + "/mcp"
}

func TestClient_UnreachableMCPServerIs424(t *testing.T) {
	t.Parallel()
	e := startEmulator(t, emulator.Config{})
	p := clParams("echo", clTool("gone", clClosedURL(t), "never"))

	ae := clAPIError(t, e, http.StatusFailedDependency, p)
	clCheckError(t, ae, "http_error", "tools", "Error retrieving tool list from MCP server: 'gone'")
	if ae.Type != "external_connector_error" {
		t.Errorf("type = %q", ae.Type)
	}

	// Streaming: the 424 comes before any event.
	stream := e.Client.Responses.NewStreaming(context.Background(), p)
	defer stream.Close()
	for stream.Next() {
		t.Errorf("unexpected event %q", stream.Current().Type)
	}
	ae = clAsAPIError(t, stream.Err(), http.StatusFailedDependency)
	clCheckError(t, ae, "http_error", "tools", "Error retrieving tool list from MCP server: 'gone'")
}

func TestClient_HeadersAndAuthorizationReachMCPServerAndAreNotEchoed(t *testing.T) {
	t.Parallel()
	const token = "tok-5f1e9c"
	m := startTestMCP(t, token)
	e := startEmulator(t, emulator.Config{})

	cases := []struct {
		name string
		mcp  responses.ToolMcpParam
	}{
		{"authorization field", responses.ToolMcpParam{Authorization: openai.String(token), Headers: map[string]string{"X-Tenant": "hdr-7a3b"}}},
		{"Authorization in headers", responses.ToolMcpParam{Headers: map[string]string{"Authorization": "Bearer " + token, "X-Tenant": "hdr-7a3b"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			entry := tc.mcp
			entry.ServerLabel, entry.ServerURL = "secure", openai.String(m.URL)
			entry.RequireApproval = responses.ToolMcpRequireApprovalUnionParam{OfMcpToolApprovalSetting: openai.String("never")}
			before := m.Calls("echo")
			resp := clNew(t, e, clParams(`echo {"text": "secret"}`, responses.ToolUnionParam{OfMcp: &entry}))
			if o := clItems(t, resp); len(o.Calls) != 1 || o.Calls[0].Output != "echo: secret" {
				t.Fatalf("output %v", o.Kinds)
			}
			if m.Calls("echo") != before+1 {
				t.Error("echo did not run")
			}
			h := m.LastHeaders()
			if h.Get("Authorization") != "Bearer "+token || h.Get("X-Tenant") != "hdr-7a3b" {
				t.Errorf("MCP server got Authorization %q X-Tenant %q", h.Get("Authorization"), h.Get("X-Tenant"))
			}
			if len(resp.Tools) != 1 {
				t.Fatalf("tools echo has %d entries", len(resp.Tools))
			}
			echoed := resp.Tools[0].AsMcp()
			if echoed.ServerLabel != "secure" || echoed.JSON.Headers.Raw() != "null" || echoed.Authorization != "" {
				t.Errorf("echoed tool %s: want headers null and no authorization", resp.Tools[0].RawJSON())
			}
			got, err := e.Client.Responses.Get(context.Background(), resp.ID, responses.ResponseGetParams{})
			if err != nil {
				t.Fatal(err)
			}
			for _, raw := range []string{resp.RawJSON(), got.RawJSON()} {
				if strings.Contains(raw, token) || strings.Contains(raw, "hdr-7a3b") {
					t.Errorf("a secret is echoed in the response: %s", raw)
				}
			}
		})
	}
	t.Run("missing token is 424 with the server's 401", func(t *testing.T) {
		ae := clAPIError(t, e, http.StatusFailedDependency, clParams("echo", clTool("secure", m.URL, "never")))
		clCheckError(t, ae, "http_error", "tools", "'secure'", "401")
	})
}

func TestClient_AllowedToolsLimitTheToolsOffered(t *testing.T) {
	t.Parallel()
	e := startEmulator(t, emulator.Config{})

	text := `wipe, then add {"a": 1, "b": 2}, then echo {"text": "hi"}`
	cases := []struct {
		name    string
		allowed responses.ToolMcpAllowedToolsUnionParam
		want    []string // calls made, in order
		rawEcho string   // allowed_tools as echoed
	}{
		{"array", responses.ToolMcpAllowedToolsUnionParam{OfMcpAllowedTools: []string{"echo"}}, []string{"echo"}, `["echo"]`},
		{"tool_names filter", responses.ToolMcpAllowedToolsUnionParam{OfMcpToolFilter: &responses.ToolMcpAllowedToolsMcpToolFilterParam{ToolNames: []string{"add"}}}, []string{"add"}, `{"tool_names":["add"]}`},
		{"read_only filter", responses.ToolMcpAllowedToolsUnionParam{OfMcpToolFilter: &responses.ToolMcpAllowedToolsMcpToolFilterParam{ReadOnly: openai.Bool(true)}}, []string{"add", "echo"}, `{"read_only":true}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Each subtest has its own server, so the call counts are its own.
			m := startTestMCP(t, "")
			entry := &responses.ToolMcpParam{ServerLabel: "test", ServerURL: openai.String(m.URL), AllowedTools: tc.allowed,
				RequireApproval: responses.ToolMcpRequireApprovalUnionParam{OfMcpToolApprovalSetting: openai.String("never")}}
			resp := clNew(t, e, clParams(text, responses.ToolUnionParam{OfMcp: entry}))
			o := clItems(t, resp)
			var called []string
			for _, c := range o.Calls {
				called = append(called, c.Name)
			}
			if !slices.Equal(called, tc.want) || len(o.Approvals) != 0 {
				t.Errorf("calls %v approvals %d, want calls %v", called, len(o.Approvals), tc.want)
			}
			for _, n := range []string{"echo", "add", "wipe", "fail"} {
				want := 0
				if slices.Contains(tc.want, n) {
					want = 1
				}
				if got := m.Calls(n); got != want {
					t.Errorf("%s ran %d times, want %d", n, got, want)
				}
			}
			if got := resp.Tools[0].AsMcp().JSON.AllowedTools.Raw(); got != tc.rawEcho {
				t.Errorf("allowed_tools echoed as %s, want %s", got, tc.rawEcho)
			}
		})
	}
}

func TestClient_RequireApprovalObjectFormDecidesPerTool(t *testing.T) {
	t.Parallel()
	e := startEmulator(t, emulator.Config{})

	type filter = responses.ToolMcpRequireApprovalMcpToolApprovalFilterParam
	cases := []struct {
		name   string
		policy filter
		ran    []string
		asked  []string
	}{
		{
			name: "never runs, always and neither ask",
			policy: filter{
				Always: responses.ToolMcpRequireApprovalMcpToolApprovalFilterAlwaysParam{ToolNames: []string{"wipe"}},
				Never:  responses.ToolMcpRequireApprovalMcpToolApprovalFilterNeverParam{ToolNames: []string{"echo"}},
			},
			ran: []string{"echo"}, asked: []string{"wipe", "add"},
		},
		{
			name:   "never read_only lets read-only tools run",
			policy: filter{Never: responses.ToolMcpRequireApprovalMcpToolApprovalFilterNeverParam{ReadOnly: openai.Bool(true)}},
			ran:    []string{"echo", "add"}, asked: []string{"wipe"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := startTestMCP(t, "")
			p := tc.policy
			entry := &responses.ToolMcpParam{ServerLabel: "test", ServerURL: openai.String(m.URL),
				RequireApproval: responses.ToolMcpRequireApprovalUnionParam{OfMcpToolApprovalFilter: &p}}
			resp := clNew(t, e, clParams(`echo {"text": "a"} wipe add {"a": 1, "b": 1}`, responses.ToolUnionParam{OfMcp: entry}))
			o := clItems(t, resp)
			var ran, asked []string
			for _, c := range o.Calls {
				ran = append(ran, c.Name)
			}
			for _, a := range o.Approvals {
				asked = append(asked, a.Name)
			}
			if !slices.Equal(ran, tc.ran) || !slices.Equal(asked, tc.asked) {
				t.Errorf("ran %v asked %v, want ran %v asked %v", ran, asked, tc.ran, tc.asked)
			}
			if len(o.Messages) != 0 {
				t.Errorf("a message with pending approvals: %v", o.Kinds)
			}
			for _, n := range []string{"echo", "add", "wipe"} {
				want := 0
				if slices.Contains(tc.ran, n) {
					want = 1
				}
				if got := m.Calls(n); got != want {
					t.Errorf("%s ran %d times, want %d", n, got, want)
				}
			}
		})
	}
}

func TestClient_ToolExecutionErrorIsTypedCallError(t *testing.T) {
	t.Parallel()
	m := startTestMCP(t, "")
	e := startEmulator(t, emulator.Config{})

	stream := e.Client.Responses.NewStreaming(context.Background(), clParams("fail", clTool("test", m.URL, "never")))
	defer stream.Close()
	var failedEvents int
	var final *responses.Response
	for stream.Next() {
		switch v := stream.Current().AsAny().(type) {
		case responses.ResponseMcpCallFailedEvent:
			failedEvents++
		case responses.ResponseMcpCallCompletedEvent:
			t.Error("mcp_call.completed for a failing tool")
		case responses.ResponseCompletedEvent:
			final = &v.Response
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if failedEvents != 1 || final == nil {
		t.Fatalf("%d mcp_call.failed events, final %v", failedEvents, final != nil)
	}
	o := clItems(t, final)
	if len(o.Calls) != 1 {
		t.Fatalf("output %v", o.Kinds)
	}
	c := o.Calls[0]
	if c.Status != "failed" || c.JSON.Output.Valid() {
		t.Errorf("call status %q output %s", c.Status, c.JSON.Output.Raw())
	}
	xe, ok := c.Error.AsAny().(responses.McpToolCallErrorMcpToolExecutionError)
	if !ok || c.Error.Type != "mcp_tool_execution_error" {
		t.Fatalf("error %s is not an mcp_tool_execution_error", c.Error.RawJSON())
	}
	content, _ := json.Marshal(xe.Content)
	if !strings.Contains(string(content), "An error occurred invoking 'fail'.") {
		t.Errorf("error content %s does not carry the tool's message", content)
	}
	if !strings.Contains(final.OutputText(), "An error occurred invoking 'fail'.") {
		t.Errorf("answer %q does not quote the error", final.OutputText())
	}
	if m.Calls("fail") != 1 {
		t.Errorf("fail ran %d times", m.Calls("fail"))
	}
}

// A wrong argument type reaches the MCP server, which decides how to report
// it; the go-sdk server (MCP 2025-11-25) answers with an isError result, so
// the API relays an mcp_tool_execution_error, and the tool body never runs.
func TestClient_WrongArgumentTypeRelaysTheServersValidationError(t *testing.T) {
	t.Parallel()
	m := startTestMCP(t, "")
	e := startEmulator(t, emulator.Config{})

	resp := clNew(t, e, clParams(`add {"a": "one", "b": 2}`, clTool("test", m.URL, "never")))
	o := clItems(t, resp)
	if len(o.Calls) != 1 {
		t.Fatalf("output %v", o.Kinds)
	}
	c := o.Calls[0]
	if c.Arguments != `{"a":"one","b":2}` || c.Status != "failed" || c.JSON.Output.Valid() {
		t.Errorf("call %s", c.RawJSON())
	}
	xe, ok := c.Error.AsAny().(responses.McpToolCallErrorMcpToolExecutionError)
	if !ok {
		t.Fatalf("error %s is not the server's tool execution error", c.Error.RawJSON())
	}
	content, _ := json.Marshal(xe.Content)
	if !strings.Contains(string(content), "validating") || !strings.Contains(string(content), "/properties/a") {
		t.Errorf("error content %s does not carry the server's validation message", content)
	}
	if !strings.Contains(resp.OutputText(), "/properties/a") {
		t.Errorf("answer %q does not quote the error", resp.OutputText())
	}
	if m.Calls("add") != 0 {
		t.Errorf("add ran with bad arguments")
	}
}

// JSON-RPC errors (an unknown tool) and arguments that are not a JSON
// object become mcp_protocol_error. The model only calls listed tools with
// object arguments, so the calls come from approval requests carried in
// the input and approved in the same request.
func TestClient_ProtocolErrorsAreTypedCallErrors(t *testing.T) {
	t.Parallel()
	m := startTestMCP(t, "")
	e := startEmulator(t, emulator.Config{})

	cases := []struct {
		name, tool, args, msg string
		code                  int64
	}{
		{"unknown tool", "nosuch", "{}", "nosuch", 0},
		{"arguments not an object", "echo", `["x"]`, "Invalid arguments", -32602},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id := "mcpr_manual_" + strings.ReplaceAll(tc.name, " ", "_")
			p := responses.ResponseNewParams{
				Model: clModel,
				Tools: []responses.ToolUnionParam{clTool("test", m.URL, "always")},
				Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
					{OfMcpApprovalRequest: &responses.ResponseInputItemMcpApprovalRequestParam{ID: id, Name: tc.tool, ServerLabel: "test", Arguments: tc.args}},
					clApprove(id),
				}},
			}
			resp := clNew(t, e, p)
			o := clItems(t, resp)
			if len(o.Calls) != 1 || o.Calls[0].ApprovalRequestID != id || o.Calls[0].Name != tc.tool {
				t.Fatalf("output %v", o.Kinds)
			}
			pe, ok := o.Calls[0].Error.AsAny().(responses.McpToolCallErrorMcpProtocolError)
			if !ok {
				t.Fatalf("error %s is not an mcp_protocol_error", o.Calls[0].Error.RawJSON())
			}
			if pe.Code == 0 || (tc.code != 0 && pe.Code != tc.code) || !strings.Contains(pe.Message, tc.msg) {
				t.Errorf("protocol error code %d message %q, want code %d and %q", pe.Code, pe.Message, tc.code, tc.msg)
			}
			if !strings.Contains(resp.OutputText(), pe.Message) {
				t.Errorf("answer %q does not quote %q", resp.OutputText(), pe.Message)
			}
		})
	}
	if m.Calls("echo") != 0 {
		t.Error("echo ran with arguments that are not an object")
	}
}

func TestClient_ReasoningModelPutsTypedReasoningItemsBeforeCallAndAnswer(t *testing.T) {
	t.Parallel()
	m := startTestMCP(t, "")
	e := startEmulator(t, emulator.Config{})

	p := clParams(`echo {"text": "think"}`, clTool("test", m.URL, "never"))
	p.Model = "gpt-5"
	resp := clNew(t, e, p)
	o := clItems(t, resp)
	if want := []string{"mcp_list_tools", "reasoning", "mcp_call", "reasoning", "message"}; !slices.Equal(o.Kinds, want) {
		t.Errorf("output %v, want %v", o.Kinds, want)
	}
	for _, it := range resp.Output {
		if r, ok := it.AsAny().(responses.ResponseReasoningItem); ok && (!strings.HasPrefix(r.ID, "rs_") || len(r.Summary) != 0) {
			t.Errorf("reasoning item %s", r.RawJSON())
		}
	}
	if resp.Reasoning.Effort != "medium" {
		t.Errorf("reasoning effort %q", resp.Reasoning.Effort)
	}
	if len(o.Calls) != 1 || o.Calls[0].Output != "echo: think" {
		t.Errorf("calls %v", o.Kinds)
	}
}
