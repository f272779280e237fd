package emulator

import (
	"encoding/json"
	"fmt"
	"strings"
)

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
	if ae := t.parseServer(p, e); ae != nil {
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
		if ae := t.parseApproval(p, raw); ae != nil {
			return t, ae
		}
	}
	return t, nil
}

// parseServer reads the keys that say which MCP server and how to reach it:
// server_label to authorization.
func (t *mcpTool) parseServer(p string, e map[string]json.RawMessage) *apiError {
	for k := range e {
		if !mcpToolKeys[k] {
			return invalid(p+"."+k, "unknown_parameter", "Unknown parameter: '%s.%s'.", p, k)
		}
	}
	if ae := str(e, p, "server_label", &t.Label); ae != nil {
		return ae
	}
	if t.Label == "" {
		return missingParam(p + ".server_label")
	}
	if _, ok := e["connector_id"]; ok {
		return invalid(p+".connector_id", "", "The Toolgate emulator does not support connectors; give a server_url.")
	}
	if ae := str(e, p, "server_url", &t.URL); ae != nil {
		return ae
	}
	if t.URL == "" {
		return invalid(p+".server_url", "missing_required_parameter", "Missing required parameter: '%s.server_url' (or 'connector_id').", p)
	}
	if !strings.HasPrefix(t.URL, "http://") && !strings.HasPrefix(t.URL, "https://") {
		return invalid(p+".server_url", "invalid_value", "Invalid URL '%s' in '%s.server_url': expected an http or https URL.", t.URL, p)
	}
	if raw, ok := e["server_description"]; ok && !isNull(raw) {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return invalidType(p+".server_description", "a string")
		}
		t.Description = &s
	}
	if raw, ok := e["headers"]; ok && !isNull(raw) {
		if json.Unmarshal(raw, &t.Headers) != nil {
			return invalidType(p+".headers", "an object with string values")
		}
	}
	return str(e, p, "authorization", &t.Authorization)
}

// parseApproval reads require_approval: "always", "never" or the object
// of filters.
func (t *mcpTool) parseApproval(p string, raw json.RawMessage) *apiError {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s != "always" && s != "never" {
			return invalidValue(p+".require_approval", s, "'always' and 'never'")
		}
		t.Approval, t.ApprovalRaw = approvalPolicy{Setting: s}, compact(raw)
		return nil
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return invalidType(p+".require_approval", "'always', 'never' or an object with 'always' and 'never' filters")
	}
	pol := approvalPolicy{}
	for k, v := range obj {
		if isNull(v) {
			continue
		}
		f, ae := parseFilter(p+".require_approval."+k, v, false)
		if ae != nil {
			return ae
		}
		switch k {
		case "always":
			pol.Always = f
		case "never":
			pol.Never = f
		default:
			return invalid(p+".require_approval."+k, "unknown_parameter", "Unknown parameter: '%s.require_approval.%s'.", p, k)
		}
	}
	t.Approval, t.ApprovalRaw = pol, compact(raw)
	return nil
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
