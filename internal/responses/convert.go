package responses

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

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
// never fail the conversion. The stream itself reads events with convert,
// from their JSON; Convert is the same for an event openai-go decoded.
func (l Labels) Convert(ev responses.ResponseStreamEventUnion) (conversation.Event, bool) {
	e, ok, _, err := l.convert([]byte(ev.RawJSON()), "")
	return e, ok && err == nil
}

// convert reads one event's JSON: only its type and the fields a turn uses,
// skipping everything else (the tools a response echoes) undecoded. last
// says the stream ends with this event: it has a top-level "error" key,
// which ends a stream as it ends openai-go's (the error event is then the
// stream's last). err is JSON convert cannot read. A text delta of the item
// prevItem (the item of the delta before) shares its ItemID string: a delta
// then costs one allocation, its text.
func (l Labels) convert(data []byte, prevItem string) (ev conversation.Event, ok, last bool, err error) {
	var typ, itemID, delta, item, resp []byte
	var topErr []byte
	hasErr := false
	f := fields{b: data}
	for {
		k, more := f.next()
		if !more {
			break
		}
		if string(k) == "response" && !hasErr && (isType(typ, "response.created") || isType(typ, "response.in_progress")) {
			// Only the id is read: the rest (the echoed tools) is not
			// even skipped. Events are not looked at past here.
			resp = f.rest()
			break
		}
		v, more := f.value()
		if !more {
			break
		}
		switch string(k) {
		case "type":
			typ = v
		case "item_id":
			itemID = v
		case "delta":
			delta = v
		case "item":
			item = v
		case "response":
			resp = v
		case "error":
			topErr, hasErr = v, true
		}
	}
	if f.err != nil {
		return ev, false, false, f.err
	}
	if hasErr {
		ev = errorEvent(data)
		if ev.Error.Message == "" {
			ev.Error.Message = "received error while streaming: " + errorText(topErr)
		}
		return ev, true, true, nil
	}
	if len(typ) > 0 && bytes.IndexByte(typ, '\\') >= 0 {
		typ = []byte(strconv.Quote(str(typ)))
	}
	switch {
	case isType(typ, "response.output_text.delta"):
		id := prevItem
		if !isType(itemID, prevItem) {
			id = str(itemID)
		}
		return conversation.Event{Kind: conversation.EventTextDelta, ItemID: id, Delta: str(delta)}, true, false, nil
	case isType(typ, "response.created"):
		r := readResponse(resp, false)
		return conversation.Event{Kind: conversation.EventCreated, ResponseID: r.id}, true, false, nil
	case isType(typ, "response.output_item.added"):
		// Only an mcp_call's start is news: the provider is about to run a
		// tool. The item names it; its arguments come later (and are not
		// needed to say what runs).
		it, ok := l.item(item)
		if !ok || it.Type != "mcp_call" {
			return ev, false, false, nil
		}
		it.Arguments, it.Output, it.CallError = "", nil, nil
		return conversation.Event{Kind: conversation.EventItemStarted, ItemID: it.ID, Item: it}, true, false, nil
	case isType(typ, "response.output_item.done"):
		it, ok := l.item(item)
		if !ok {
			return ev, false, false, nil
		}
		return conversation.Event{Kind: conversation.EventItemDone, ItemID: it.ID, Item: it}, true, false, nil
	case isType(typ, "response.completed"):
		r := readResponse(resp, false)
		return conversation.Event{Kind: conversation.EventCompleted, ResponseID: r.id}, true, false, nil
	case isType(typ, "response.failed"):
		r := readResponse(resp, true)
		e := &conversation.UpstreamError{Code: r.errCode, Message: r.errMessage}
		if e.Code == "" {
			e.Code = "response_failed"
		}
		return conversation.Event{Kind: conversation.EventFailed, ResponseID: r.id, Error: e}, true, false, nil
	case isType(typ, "response.incomplete"):
		r := readResponse(resp, true)
		return conversation.Event{Kind: conversation.EventIncomplete, ResponseID: r.id,
			Error: &conversation.UpstreamError{Code: "incomplete", Message: r.incomplete}}, true, false, nil
	case isType(typ, "error"):
		return errorEvent(data), true, false, nil
	}
	return ev, false, false, nil
}

// responseFields is what a turn reads of a response object.
type responseFields struct {
	id                  string
	errCode, errMessage string
	incomplete          string // incomplete_details.reason
}

// readResponse reads a response object's id and, when ending is set, its
// error and incomplete_details. Without ending it stops at the id: what
// follows (the echoed tools) is not even skipped.
func readResponse(raw []byte, ending bool) responseFields {
	var r responseFields
	_ = eachField(raw, func(k, v []byte) bool {
		switch string(k) {
		case "id":
			r.id = str(v)
			return ending
		case "error":
			var e struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			}
			if json.Unmarshal(v, &e) == nil {
				r.errCode, r.errMessage = e.Code, e.Message
			}
		case "incomplete_details":
			var d struct {
				Reason string `json:"reason"`
			}
			if json.Unmarshal(v, &d) == nil {
				r.incomplete = d.Reason
			}
		}
		return true
	})
	return r
}

// errorText is a top-level "error" value as openai-go's StreamError
// message shows it: a string's value, any other value's JSON.
func errorText(raw []byte) string {
	if len(raw) > 0 && raw[0] == '"' {
		return str(raw)
	}
	return string(raw)
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
