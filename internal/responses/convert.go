package responses

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/policy"
)

// Convert turns one upstream stream event into the event a turn acts on,
// with server labels mapped back through l. Event types a turn does not
// need, unknown event types and output items other than message,
// mcp_list_tools, mcp_call and mcp_approval_request give false; of the
// items that begin (output_item.added), only an mcp_call is converted. Items are
// read from their raw JSON, so unknown keys and fields of unexpected types
// never fail the conversion.
func (l Labels) Convert(ev responses.ResponseStreamEventUnion) (conversation.Event, bool) {
	switch ev.Type {
	case "response.created":
		return conversation.Event{Kind: conversation.EventCreated, ResponseID: ev.Response.ID}, true
	case "response.output_text.delta":
		return conversation.Event{Kind: conversation.EventTextDelta, ItemID: ev.ItemID, Delta: ev.Delta}, true
	case "response.output_item.added":
		// Only an mcp_call's start is news: the provider is about to run a
		// tool. The item names it; its arguments come later (and are not
		// needed to say what runs).
		item, ok := l.item([]byte(ev.Item.RawJSON()))
		if !ok || item.Type != "mcp_call" {
			return conversation.Event{}, false
		}
		item.Arguments, item.Output, item.CallError = "", nil, nil
		return conversation.Event{Kind: conversation.EventItemStarted, ItemID: item.ID, Item: item}, true
	case "response.output_item.done":
		item, ok := l.item([]byte(ev.Item.RawJSON()))
		if !ok {
			return conversation.Event{}, false
		}
		return conversation.Event{Kind: conversation.EventItemDone, ItemID: item.ID, Item: item}, true
	case "response.completed":
		return conversation.Event{Kind: conversation.EventCompleted, ResponseID: ev.Response.ID}, true
	case "response.failed":
		e := &conversation.UpstreamError{Code: string(ev.Response.Error.Code), Message: ev.Response.Error.Message}
		if e.Code == "" {
			e.Code = "response_failed"
		}
		return conversation.Event{Kind: conversation.EventFailed, ResponseID: ev.Response.ID, Error: e}, true
	case "response.incomplete":
		return conversation.Event{Kind: conversation.EventIncomplete, ResponseID: ev.Response.ID,
			Error: &conversation.UpstreamError{Code: "incomplete", Message: ev.Response.IncompleteDetails.Reason}}, true
	case "error":
		return errorEvent([]byte(ev.RawJSON())), true
	}
	return conversation.Event{}, false
}

// streamErrorEvent is the error event behind an SDK StreamError: openai-go
// ends a stream with that error when an event has a top-level "error" key
// (an error event in the {"type":"error","error":{...}} shape).
func streamErrorEvent(se *ssestream.StreamError) conversation.Event {
	ev := errorEvent(se.Event.Data)
	if ev.Error.Message == "" {
		ev.Error.Message = se.Message
	}
	return ev
}

// errorEvent reads an error event: {"code","message"} at the top level, or
// inside an "error" object.
func errorEvent(data []byte) conversation.Event {
	type fields struct {
		Code    json.RawMessage `json:"code"`
		Message string          `json:"message"`
		Type    string          `json:"type"`
	}
	var v struct {
		fields
		Error *fields `json:"error"`
	}
	_ = json.Unmarshal(data, &v)
	f := v.fields
	if v.Error != nil {
		f = *v.Error
	}
	code, _ := text(f.Code)
	if code == "" && v.Error != nil {
		code = f.Type
	}
	if code == "" {
		code = "error"
	}
	return conversation.Event{Kind: conversation.EventError, Error: &conversation.UpstreamError{Code: code, Message: f.Message}}
}

// wireItem is an output item as it arrives; every field is optional.
type wireItem struct {
	Type              string          `json:"type"`
	ID                string          `json:"id"`
	ServerLabel       string          `json:"server_label"`
	Name              string          `json:"name"`
	Arguments         json.RawMessage `json:"arguments"`
	Output            json.RawMessage `json:"output"`
	Error             json.RawMessage `json:"error"`
	ApprovalRequestID json.RawMessage `json:"approval_request_id"`
	Tools             []wireTool      `json:"tools"`
	Content           []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
}

type wireTool struct {
	Name        string          `json:"name"`
	Title       json.RawMessage `json:"title"`
	Description json.RawMessage `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
	Annotations json.RawMessage `json:"annotations"`
}

// item converts the raw JSON of a finished output item.
func (l Labels) item(raw []byte) (*conversation.UpstreamItem, bool) {
	var w wireItem
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, false
	}
	it := &conversation.UpstreamItem{Type: w.Type, ID: w.ID, ServerLabel: l.Server(w.ServerLabel), UpstreamLabel: w.ServerLabel}
	switch w.Type {
	case "message":
		var b strings.Builder
		for _, c := range w.Content {
			if c.Type == "output_text" {
				b.WriteString(c.Text)
			}
		}
		it.Text = b.String()
	case "mcp_list_tools":
		it.Tools = make([]policy.DiscoveredTool, 0, len(w.Tools))
		for _, t := range w.Tools {
			it.Tools = append(it.Tools, discovered(t))
		}
		it.ListError = rawOrNil(w.Error)
	case "mcp_call":
		it.Name = w.Name
		it.Arguments, _ = text(w.Arguments)
		if out, ok := text(w.Output); ok {
			it.Output = &out
		}
		it.CallError = rawOrNil(w.Error)
		it.ApprovalID, _ = text(w.ApprovalRequestID)
	case "mcp_approval_request":
		it.Name = w.Name
		it.Arguments, _ = text(w.Arguments)
	default:
		return nil, false
	}
	return it, true
}

func discovered(t wireTool) policy.DiscoveredTool {
	d := policy.DiscoveredTool{Name: t.Name, InputSchema: rawOrNil(t.InputSchema), Annotations: annotations(t.Annotations)}
	d.Title, _ = text(t.Title)
	d.Description, _ = text(t.Description)
	return d
}

// annotations reads MCP tool annotations. OpenAI reports them as
// {"read_only": bool}; servers passed through as is use MCP's hint names.
// Values of another type than expected are ignored.
func annotations(raw json.RawMessage) policy.Annotations {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return policy.Annotations{}
	}
	var a policy.Annotations
	a.Title, _ = text(m["title"])
	a.ReadOnlyHint = boolOf(m["readOnlyHint"])
	if a.ReadOnlyHint == nil {
		a.ReadOnlyHint = boolOf(m["read_only"])
	}
	a.DestructiveHint = boolOf(m["destructiveHint"])
	a.IdempotentHint = boolOf(m["idempotentHint"])
	a.OpenWorldHint = boolOf(m["openWorldHint"])
	return a
}

func boolOf(raw json.RawMessage) *bool {
	var b bool
	if json.Unmarshal(raw, &b) != nil || isNull(raw) {
		return nil
	}
	return &b
}

// text reads a JSON value that should be a string: a string gives its
// value, null or nothing gives false, anything else its JSON text.
func text(raw json.RawMessage) (string, bool) {
	if isNull(raw) {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	return string(bytes.TrimSpace(raw)), true
}

// rawOrNil is raw JSON, or nil for null and absent values.
func rawOrNil(raw json.RawMessage) json.RawMessage {
	if isNull(raw) {
		return nil
	}
	return bytes.Clone(bytes.TrimSpace(raw))
}

func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || bytes.Equal(t, []byte("null"))
}
