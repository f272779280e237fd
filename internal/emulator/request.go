package emulator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// knownParams are the body parameters of CreateResponse in OpenAI's OpenAPI
// description. Like the real API, the emulator rejects any other key.
var knownParams = map[string]bool{
	"background": true, "context_management": true, "conversation": true, "include": true,
	"input": true, "instructions": true, "max_output_tokens": true, "max_tool_calls": true,
	"metadata": true, "model": true, "moderation": true, "parallel_tool_calls": true,
	"previous_response_id": true, "prompt": true, "prompt_cache_key": true,
	"prompt_cache_options": true, "prompt_cache_retention": true, "reasoning": true,
	"safety_identifier": true, "service_tier": true, "store": true, "stream": true,
	"stream_options": true, "temperature": true, "text": true, "tool_choice": true,
	"tools": true, "top_logprobs": true, "top_p": true, "truncation": true, "user": true,
}

// request is a parsed, validated POST /v1/responses body.
type request struct {
	Model              string
	Stream             bool
	Store              bool
	PreviousResponseID string
	Instructions       *string
	Metadata           map[string]string
	ParallelToolCalls  bool
	Tools              []mcpTool
	Input              []ctxItem
}

// mcpTool is one {"type":"mcp"} entry of tools.
type mcpTool struct {
	Label         string
	URL           string
	Description   *string
	Headers       map[string]string
	Authorization string
	Allowed       *toolFilter // nil: every tool
	AllowedRaw    json.RawMessage
	Approval      approvalPolicy
	ApprovalRaw   json.RawMessage
}

// toolFilter is the {"tool_names": [...], "read_only": bool} filter, or a
// plain array of names.
type toolFilter struct {
	Names    map[string]bool // nil: the filter does not name tools
	ReadOnly *bool
}

func (f *toolFilter) matches(name string, readOnly bool) bool {
	if f == nil {
		return false
	}
	if f.Names == nil && f.ReadOnly == nil {
		return false
	}
	if f.Names != nil && !f.Names[name] {
		return false
	}
	if f.ReadOnly != nil && *f.ReadOnly != readOnly {
		return false
	}
	return true
}

// approvalPolicy is require_approval: a string setting or the object form.
type approvalPolicy struct {
	Setting       string // "always" or "never"; "" for the object form
	Always, Never *toolFilter
}

// needsApproval decides for one tool. In the object form a tool in neither
// list needs approval, as on the real API; a tool in both lists asks.
func (p approvalPolicy) needsApproval(name string, readOnly bool) bool {
	switch p.Setting {
	case "never":
		return false
	case "always":
		return true
	}
	if p.Always.matches(name, readOnly) {
		return true
	}
	return !p.Never.matches(name, readOnly)
}

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

func parseRequest(body []byte) (*request, *apiError) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, invalid("", "", "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON. If you have trouble figuring out how to fix this, please contact us through our help center at help.openai.com.)")
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return nil, invalid("", "", "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON. If you have trouble figuring out how to fix this, please contact us through our help center at help.openai.com.)")
	}
	keys := make([]string, 0, len(top))
	for k := range top {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !knownParams[k] {
			return nil, invalid(k, "unknown_parameter", "Unknown parameter: '%s'.", k)
		}
	}
	r := &request{Store: true, ParallelToolCalls: true}
	if e := str(top, "", "model", &r.Model); e != nil {
		return nil, e
	}
	if r.Model == "" {
		return nil, missingParam("model")
	}
	for _, b := range []struct {
		key string
		dst *bool
	}{{"stream", &r.Stream}, {"store", &r.Store}, {"parallel_tool_calls", &r.ParallelToolCalls}} {
		if raw, ok := top[b.key]; ok && !isNull(raw) {
			if err := json.Unmarshal(raw, b.dst); err != nil {
				return nil, invalidType(b.key, "a boolean")
			}
		}
	}
	if e := str(top, "", "previous_response_id", &r.PreviousResponseID); e != nil {
		return nil, e
	}
	if raw, ok := top["instructions"]; ok && !isNull(raw) {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			r.Instructions = &s
		}
	}
	if raw, ok := top["metadata"]; ok && !isNull(raw) {
		if err := json.Unmarshal(raw, &r.Metadata); err != nil {
			return nil, invalidType("metadata", "an object with string values")
		}
	}
	if raw, ok := top["conversation"]; ok && !isNull(raw) {
		return nil, invalid("conversation", "", "The Toolgate emulator does not support 'conversation'; chain responses with 'previous_response_id'.")
	}
	if raw, ok := top["background"]; ok && string(raw) == "true" {
		return nil, invalid("background", "", "The Toolgate emulator does not support background responses.")
	}
	if raw, ok := top["tools"]; ok && !isNull(raw) {
		tools, e := parseTools(raw)
		if e != nil {
			return nil, e
		}
		r.Tools = tools
	}
	if raw, ok := top["input"]; ok && !isNull(raw) {
		in, e := parseInput(raw)
		if e != nil {
			return nil, e
		}
		r.Input = in
	}
	if len(r.Input) == 0 && r.PreviousResponseID == "" {
		return nil, missingParam("input")
	}
	return r, nil
}

func parseTools(raw json.RawMessage) ([]mcpTool, *apiError) {
	var entries []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &entries); err != nil {
		return nil, invalidType("tools", "an array of tool objects")
	}
	var tools []mcpTool
	seen := map[string]int{}
	for i, e := range entries {
		p := fmt.Sprintf("tools[%d]", i)
		var typ string
		if ae := str(e, p, "type", &typ); ae != nil {
			return nil, ae
		}
		if typ == "" {
			return nil, missingParam(p + ".type")
		}
		if typ != "mcp" {
			return nil, invalid(p+".type", "", "The Toolgate emulator only supports tools of type 'mcp'; got '%s'.", typ)
		}
		t, ae := parseMCPTool(p, e)
		if ae != nil {
			return nil, ae
		}
		if j, dup := seen[t.Label]; dup {
			return nil, invalid(p+".server_label", "", "Duplicate MCP server_label '%s' in tools[%d] and %s. Each MCP tool must have a unique server_label.", t.Label, j, p)
		}
		seen[t.Label] = i
		tools = append(tools, t)
	}
	return tools, nil
}

var mcpToolKeys = map[string]bool{"type": true, "server_label": true, "server_url": true, "server_description": true,
	"headers": true, "authorization": true, "allowed_tools": true, "require_approval": true, "connector_id": true,
	"allowed_callers": true, "defer_loading": true, "tunnel_id": true}

func parseMCPTool(p string, e map[string]json.RawMessage) (mcpTool, *apiError) {
	var t mcpTool
	for k := range e {
		if !mcpToolKeys[k] {
			return t, invalid(p+"."+k, "unknown_parameter", "Unknown parameter: '%s.%s'.", p, k)
		}
	}
	if ae := str(e, p, "server_label", &t.Label); ae != nil {
		return t, ae
	}
	if t.Label == "" {
		return t, missingParam(p + ".server_label")
	}
	if _, ok := e["connector_id"]; ok {
		return t, invalid(p+".connector_id", "", "The Toolgate emulator does not support connectors; give a server_url.")
	}
	if ae := str(e, p, "server_url", &t.URL); ae != nil {
		return t, ae
	}
	if t.URL == "" {
		return t, invalid(p+".server_url", "missing_required_parameter", "Missing required parameter: '%s.server_url' (or 'connector_id').", p)
	}
	if !strings.HasPrefix(t.URL, "http://") && !strings.HasPrefix(t.URL, "https://") {
		return t, invalid(p+".server_url", "invalid_value", "Invalid URL '%s' in '%s.server_url': expected an http or https URL.", t.URL, p)
	}
	if raw, ok := e["server_description"]; ok && !isNull(raw) {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return t, invalidType(p+".server_description", "a string")
		}
		t.Description = &s
	}
	if raw, ok := e["headers"]; ok && !isNull(raw) {
		if json.Unmarshal(raw, &t.Headers) != nil {
			return t, invalidType(p+".headers", "an object with string values")
		}
	}
	if ae := str(e, p, "authorization", &t.Authorization); ae != nil {
		return t, ae
	}
	t.AllowedRaw = json.RawMessage("null")
	if raw, ok := e["allowed_tools"]; ok && !isNull(raw) {
		f, ae := parseFilter(p+".allowed_tools", raw, true)
		if ae != nil {
			return t, ae
		}
		t.Allowed, t.AllowedRaw = f, compact(raw)
	}
	t.Approval, t.ApprovalRaw = approvalPolicy{Setting: "always"}, json.RawMessage(`"always"`)
	if raw, ok := e["require_approval"]; ok && !isNull(raw) {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			if s != "always" && s != "never" {
				return t, invalidValue(p+".require_approval", s, "'always' and 'never'")
			}
			t.Approval, t.ApprovalRaw = approvalPolicy{Setting: s}, compact(raw)
		} else {
			var obj map[string]json.RawMessage
			if json.Unmarshal(raw, &obj) != nil {
				return t, invalidType(p+".require_approval", "'always', 'never' or an object with 'always' and 'never' filters")
			}
			pol := approvalPolicy{}
			for k, v := range obj {
				if isNull(v) {
					continue
				}
				f, ae := parseFilter(p+".require_approval."+k, v, false)
				if ae != nil {
					return t, ae
				}
				switch k {
				case "always":
					pol.Always = f
				case "never":
					pol.Never = f
				default:
					return t, invalid(p+".require_approval."+k, "unknown_parameter", "Unknown parameter: '%s.require_approval.%s'.", p, k)
				}
			}
			t.Approval, t.ApprovalRaw = pol, compact(raw)
		}
	}
	return t, nil
}

// parseFilter reads an MCPToolFilter; allowed_tools also takes a bare array.
func parseFilter(p string, raw json.RawMessage, arrayOK bool) (*toolFilter, *apiError) {
	var names []string
	if arrayOK && json.Unmarshal(raw, &names) == nil {
		return &toolFilter{Names: set(names)}, nil
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		if arrayOK {
			return nil, invalidType(p, "an array of tool names or an object with 'tool_names' and 'read_only'")
		}
		return nil, invalidType(p, "an object with 'tool_names' and 'read_only'")
	}
	f := &toolFilter{}
	for k, v := range obj {
		switch k {
		case "tool_names":
			if isNull(v) {
				continue
			}
			if json.Unmarshal(v, &names) != nil {
				return nil, invalidType(p+".tool_names", "an array of strings")
			}
			f.Names = set(names)
		case "read_only":
			if isNull(v) {
				continue
			}
			var b bool
			if json.Unmarshal(v, &b) != nil {
				return nil, invalidType(p+".read_only", "a boolean")
			}
			f.ReadOnly = &b
		default:
			return nil, invalid(p+"."+k, "unknown_parameter", "Unknown parameter: '%s.%s'.", p, k)
		}
	}
	return f, nil
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
		it := ctxItem{Param: p}
		if ae := str(e, p, "type", &it.Type); ae != nil {
			return nil, ae
		}
		if ae := str(e, p, "id", &it.ID); ae != nil {
			return nil, ae
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
				return nil, missingParam(p + ".type")
			}
		}
		var ae *apiError
		switch it.Type {
		case "message":
			ae = parseMessage(p, e, &it)
		case "mcp_approval_response":
			ae = req(e, p, "approval_request_id", &it.ApprovalRequestID)
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
		if ae != nil {
			return nil, ae
		}
		items = append(items, it)
	}
	return items, nil
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

// str reads an optional string field (null counts as absent).
func str(m map[string]json.RawMessage, p, key string, dst *string) *apiError {
	raw, ok := m[key]
	if !ok || isNull(raw) {
		return nil
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		if p != "" {
			key = p + "." + key
		}
		return invalidType(key, "a string")
	}
	return nil
}

// req reads a required string field of an input item.
func req(m map[string]json.RawMessage, p, key string, dst *string) *apiError {
	raw, ok := m[key]
	if !ok || isNull(raw) {
		return missingParam(p + "." + key)
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return invalidType(p+"."+key, "a string")
	}
	if *dst == "" {
		return invalid(p+"."+key, "empty_string", "Invalid '%s.%s': empty string. Expected a string with minimum length 1.", p, key)
	}
	return nil
}

func firstErr(errs ...*apiError) *apiError {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

func compact(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

func set(names []string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}
