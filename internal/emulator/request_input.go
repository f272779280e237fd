package emulator

import (
	"encoding/json"
	"fmt"
	"strings"
)

// ctxItem is one conversation item: an input item or an output item of a
// stored response.
type ctxItem struct {
	Type              string // message, mcp_list_tools, mcp_approval_request, mcp_approval_response, mcp_call, reasoning, item_reference
	ID                string
	Role, Text        string
	ServerLabel, Name string
	Arguments         string
	ApprovalRequestID string
	Approve           bool
	Reason            string
	Tools             []ListedTool
	Param             string // where the item was in the request, for errors
}

func parseInput(raw json.RawMessage) ([]ctxItem, *apiError) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []ctxItem{{Type: "message", Role: "user", Text: s, Param: "input"}}, nil
	}
	var entries []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &entries); err != nil {
		return nil, invalidType("input", "a string or an array of input items")
	}
	items := make([]ctxItem, 0, len(entries))
	for i, e := range entries {
		p := fmt.Sprintf("input[%d]", i)
		it, ae := parseInputItem(p, e)
		if ae != nil {
			return nil, ae
		}
		items = append(items, it)
	}
	return items, nil
}

// parseInputItem reads one input item at p: its type and id, then the
// fields of its type.
func parseInputItem(p string, e map[string]json.RawMessage) (ctxItem, *apiError) {
	it := ctxItem{Param: p}
	if ae := str(e, p, "type", &it.Type); ae != nil {
		return it, ae
	}
	if ae := str(e, p, "id", &it.ID); ae != nil {
		return it, ae
	}
	if it.Type == "" {
		// Without a type, an item with a role is a message and one with
		// only an id is an item reference (ItemReferenceParam's type is
		// optional; openai-go's ResponseInputItemParamOfItemReference
		// leaves it out).
		_, hasRole := e["role"]
		switch {
		case hasRole:
			it.Type = "message"
		case it.ID != "":
			it.Type = "item_reference"
		default:
			return it, missingParam(p + ".type")
		}
	}
	return it, parseItemFields(p, e, &it)
}

// parseItemFields reads the fields of it's type.
func parseItemFields(p string, e map[string]json.RawMessage, it *ctxItem) *apiError {
	var ae *apiError
	switch it.Type {
	case "message":
		ae = parseMessage(p, e, it)
	case "mcp_approval_response":
		ae = parseApprovalResponse(p, e, it)
	case "item_reference":
		ae = req(e, p, "id", &it.ID)
	case "mcp_approval_request":
		ae = firstErr(req(e, p, "id", &it.ID), req(e, p, "server_label", &it.ServerLabel), req(e, p, "name", &it.Name), str(e, p, "arguments", &it.Arguments))
	case "mcp_call":
		ae = firstErr(req(e, p, "id", &it.ID), req(e, p, "server_label", &it.ServerLabel), req(e, p, "name", &it.Name), str(e, p, "arguments", &it.Arguments), str(e, p, "approval_request_id", &it.ApprovalRequestID))
	case "mcp_list_tools":
		ae = firstErr(req(e, p, "id", &it.ID), req(e, p, "server_label", &it.ServerLabel))
		if ae == nil {
			if raw, ok := e["tools"]; ok && json.Unmarshal(raw, &it.Tools) != nil {
				ae = invalidType(p+".tools", "an array of tools")
			}
		}
	case "reasoning":
	default:
		ae = invalid(p+".type", "invalid_value", "Invalid value: '%s'. The Toolgate emulator supports the input item types 'message', 'mcp_approval_response', 'item_reference', 'mcp_approval_request', 'mcp_call', 'mcp_list_tools' and 'reasoning'.", it.Type)
	}
	return ae
}

// parseApprovalResponse reads an mcp_approval_response's request id,
// approve and reason.
func parseApprovalResponse(p string, e map[string]json.RawMessage, it *ctxItem) *apiError {
	ae := req(e, p, "approval_request_id", &it.ApprovalRequestID)
	if ae == nil {
		raw, ok := e["approve"]
		if !ok || isNull(raw) {
			ae = missingParam(p + ".approve")
		} else if json.Unmarshal(raw, &it.Approve) != nil {
			ae = invalidType(p+".approve", "a boolean")
		}
	}
	if ae == nil {
		ae = str(e, p, "reason", &it.Reason)
	}
	return ae
}

func parseMessage(p string, e map[string]json.RawMessage, it *ctxItem) *apiError {
	if ae := req(e, p, "role", &it.Role); ae != nil {
		return ae
	}
	switch it.Role {
	case "user", "assistant", "system", "developer":
	default:
		return invalidValue(p+".role", it.Role, "'user', 'assistant', 'system' and 'developer'")
	}
	raw, ok := e["content"]
	if !ok || isNull(raw) {
		return missingParam(p + ".content")
	}
	if json.Unmarshal(raw, &it.Text) == nil {
		return nil
	}
	var parts []map[string]json.RawMessage
	if json.Unmarshal(raw, &parts) != nil {
		return invalidType(p+".content", "a string or an array of content parts")
	}
	var texts []string
	for j, part := range parts {
		var typ, text string
		pp := fmt.Sprintf("%s.content[%d]", p, j)
		if ae := firstErr(str(part, pp, "type", &typ), str(part, pp, "text", &text)); ae != nil {
			return ae
		}
		switch typ {
		case "input_text", "output_text":
			texts = append(texts, text)
		case "":
			return missingParam(pp + ".type")
		default:
			// Images, files, refusals: the emulated model only reads text.
		}
	}
	it.Text = strings.Join(texts, "\n")
	return nil
}
