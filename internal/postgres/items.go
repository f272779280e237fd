package postgres

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/policy"
)

// storedItemVersion is the layout of storedItem that AppendItem writes.
const storedItemVersion = 1

// storedItem is a transcript item as conversation_items.data keeps it. It is
// not conversation.Item, the API's type: the API's JSON names may change, the
// names of rows already written may not, so every field is converted
// explicitly both ways (toStored, fromStored) and a field the API renames or
// adds cannot silently go missing from transcripts. The JSON names below are
// the stored ones; never rename them, add a field (or a version) instead.
//
// V is the layout version: 1 is this one. Rows without it (0) were written
// before storedItem existed, by marshalling conversation.Item itself, under
// the same names, so they read the same way (plus a "seq" and a zero
// "created_at", which the row's columns hold instead and are ignored).
type storedItem struct {
	V             int             `json:"v"`
	Type          string          `json:"type"`
	ID            string          `json:"id,omitempty"`
	ResponseID    string          `json:"response_id,omitempty"`
	Text          string          `json:"text,omitempty"`
	Partial       bool            `json:"partial,omitempty"`
	ServerLabel   string          `json:"server_label,omitempty"`
	UpstreamLabel string          `json:"upstream_label,omitempty"`
	Tools         []storedTool    `json:"tools,omitempty"`
	ListError     json.RawMessage `json:"list_error,omitempty"`
	Name          string          `json:"name,omitempty"`
	// Arguments are stored redacted, as the turn engine hands them over
	// (conversation.Redact): secrets never reach the transcript.
	Arguments         json.RawMessage  `json:"arguments,omitempty"`
	Redacted          []string         `json:"redacted,omitempty"`
	Output            *string          `json:"output,omitempty"`
	CallError         json.RawMessage  `json:"error,omitempty"`
	ApprovalRequestID string           `json:"approval_request_id,omitempty"`
	AllowedBy         *storedAllowedBy `json:"allowed_by,omitempty"`
	// Interrupted (added in layout 1; absent in older rows, which read as
	// false): a call that began and never reported a result.
	Interrupted bool             `json:"interrupted,omitempty"`
	TurnError   *storedTurnError `json:"turn_error,omitempty"`
	// Notice (added in layout 1; absent in older rows): a notice item's.
	Notice *storedNotice `json:"notice,omitempty"`
	// What the MCP face saw of a call (added with gateway_calls, 00037;
	// absent in older rows and for calls that did not pass the face).
	Via              string          `json:"via,omitempty"`
	GatewayCallID    string          `json:"gateway_call_id,omitempty"`
	DefinitionDigest string          `json:"definition_digest,omitempty"`
	Result           json.RawMessage `json:"result,omitempty"`
	Refusal          *storedRefusal  `json:"refusal,omitempty"`
}

// storedRefusal is a stored call's gateway.Refusal.
type storedRefusal struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// storedNotice is a stored notice item's conversation.Notice.
type storedNotice struct {
	Code        string `json:"code"`
	Message     string `json:"message"`
	ServerLabel string `json:"server_label,omitempty"`
}

// storedTool is a policy.DiscoveredTool in a stored mcp_list_tools item.
type storedTool struct {
	Name        string            `json:"name"`
	Title       string            `json:"title,omitempty"`
	Description string            `json:"description"`
	InputSchema json.RawMessage   `json:"input_schema"`
	Annotations storedAnnotations `json:"annotations"`
}

// storedAnnotations are a stored tool's policy.Annotations.
type storedAnnotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    *bool  `json:"readOnlyHint"`
	DestructiveHint *bool  `json:"destructiveHint"`
	IdempotentHint  *bool  `json:"idempotentHint"`
	OpenWorldHint   *bool  `json:"openWorldHint"`
}

// storedAllowedBy is a stored call's conversation.AllowedBy.
type storedAllowedBy struct {
	Kind   string      `json:"kind"`
	Policy string      `json:"policy,omitempty"`
	Source string      `json:"source,omitempty"`
	Rule   *storedRule `json:"rule,omitempty"`
	// Added with grants (00016); absent in older items.
	GrantID   string      `json:"grant_id,omitempty"`
	ExpiresAt *time.Time  `json:"expires_at,omitempty"`
	Hook      *storedHook `json:"hook,omitempty"`
}

// storedHook is a stored call's conversation.HookRef.
type storedHook struct {
	Scope       string `json:"scope"`
	ServerLabel string `json:"server_label,omitempty"`
	Reason      string `json:"reason,omitempty"`
}

// storedRule is a stored call's conversation.RuleRef.
type storedRule struct {
	Scope       string `json:"scope"`
	ServerLabel string `json:"server_label,omitempty"`
	ToolName    string `json:"tool_name,omitempty"`
	Index       int    `json:"index"`
	When        string `json:"when"`
	Decision    string `json:"decision"`
	Reason      string `json:"reason,omitempty"`
}

// storedTurnError is a stored error item's conversation.TurnError.
type storedTurnError struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	Retryable bool   `json:"retryable"`
}

// toStored is it as conversation_items.data keeps it. Seq and CreatedAt are
// columns of the row; Approval is joined in from approval_requests when the
// transcript is read, so neither is part of the data.
func toStored(it conversation.Item) storedItem {
	s := storedItem{V: storedItemVersion, Type: it.Type, ID: it.ID, ResponseID: it.ResponseID, Text: it.Text,
		Partial: it.Partial, ServerLabel: it.ServerLabel, UpstreamLabel: it.UpstreamLabel, ListError: it.ListError,
		Name: it.Name, Arguments: it.Arguments, Redacted: it.Redacted, Output: it.Output, CallError: it.CallError,
		ApprovalRequestID: it.ApprovalRequestID, Interrupted: it.Interrupted,
		Via: it.Via, GatewayCallID: it.GatewayCallID, DefinitionDigest: it.DefinitionDigest, Result: it.Result}
	if r := it.Refusal; r != nil {
		s.Refusal = &storedRefusal{Code: r.Code, Message: r.Message}
	}
	if it.Tools != nil {
		s.Tools = make([]storedTool, len(it.Tools))
		for i, t := range it.Tools {
			a := t.Annotations
			s.Tools[i] = storedTool{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: t.InputSchema,
				Annotations: storedAnnotations{Title: a.Title, ReadOnlyHint: a.ReadOnlyHint, DestructiveHint: a.DestructiveHint,
					IdempotentHint: a.IdempotentHint, OpenWorldHint: a.OpenWorldHint}}
		}
	}
	if b := it.AllowedBy; b != nil {
		s.AllowedBy = &storedAllowedBy{Kind: b.Kind, Policy: string(b.Policy), Source: string(b.Source),
			GrantID: b.GrantID, ExpiresAt: b.ExpiresAt}
		if rr := b.Rule; rr != nil {
			s.AllowedBy.Rule = &storedRule{Scope: rr.Scope, ServerLabel: rr.ServerLabel, ToolName: rr.ToolName, Index: rr.Index,
				When: rr.When, Decision: rr.Decision, Reason: rr.Reason}
		}
		if h := b.Hook; h != nil {
			s.AllowedBy.Hook = &storedHook{Scope: h.Scope, ServerLabel: h.ServerLabel, Reason: h.Reason}
		}
	}
	if e := it.Error; e != nil {
		s.TurnError = &storedTurnError{Code: e.Code, Message: e.Message, Retryable: e.Retryable}
	}
	if n := it.Notice; n != nil {
		s.Notice = &storedNotice{Code: n.Code, Message: n.Message, ServerLabel: n.ServerLabel}
	}
	return s
}

// fromStored is the API's item for s; the caller sets Seq and CreatedAt
// from the row.
func fromStored(s storedItem) conversation.Item {
	it := conversation.Item{Type: s.Type, ID: s.ID, ResponseID: s.ResponseID, Text: s.Text, Partial: s.Partial,
		ServerLabel: s.ServerLabel, UpstreamLabel: s.UpstreamLabel, ListError: s.ListError, Name: s.Name,
		Arguments: s.Arguments, Redacted: s.Redacted, Output: s.Output, CallError: s.CallError,
		ApprovalRequestID: s.ApprovalRequestID, Interrupted: s.Interrupted,
		Via: s.Via, GatewayCallID: s.GatewayCallID, DefinitionDigest: s.DefinitionDigest, Result: s.Result}
	if r := s.Refusal; r != nil {
		it.Refusal = &gateway.Refusal{Code: r.Code, Message: r.Message}
	}
	if s.Tools != nil {
		it.Tools = make([]policy.DiscoveredTool, len(s.Tools))
		for i, t := range s.Tools {
			a := t.Annotations
			it.Tools[i] = policy.DiscoveredTool{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: t.InputSchema,
				Annotations: policy.Annotations{Title: a.Title, ReadOnlyHint: a.ReadOnlyHint, DestructiveHint: a.DestructiveHint,
					IdempotentHint: a.IdempotentHint, OpenWorldHint: a.OpenWorldHint}}
		}
	}
	if b := s.AllowedBy; b != nil {
		it.AllowedBy = &conversation.AllowedBy{Kind: b.Kind, Policy: policy.Policy(b.Policy), Source: policy.Source(b.Source),
			GrantID: b.GrantID, ExpiresAt: b.ExpiresAt}
		if rr := b.Rule; rr != nil {
			it.AllowedBy.Rule = &conversation.RuleRef{Scope: rr.Scope, ServerLabel: rr.ServerLabel, ToolName: rr.ToolName, Index: rr.Index,
				When: rr.When, Decision: rr.Decision, Reason: rr.Reason}
		}
		if h := b.Hook; h != nil {
			it.AllowedBy.Hook = &conversation.HookRef{Scope: h.Scope, ServerLabel: h.ServerLabel, Reason: h.Reason}
		}
	}
	if e := s.TurnError; e != nil {
		it.Error = &conversation.TurnError{Code: e.Code, Message: e.Message, Retryable: e.Retryable}
	}
	if n := s.Notice; n != nil {
		it.Notice = &conversation.Notice{Code: n.Code, Message: n.Message, ServerLabel: n.ServerLabel}
	}
	return it
}

// encodeItem is the data column of it.
func encodeItem(it conversation.Item) ([]byte, error) {
	return json.Marshal(toStored(it))
}

// decodeItem reads a data column of any version this code knows. A newer
// one is an error rather than a transcript with parts silently missing.
func decodeItem(data []byte) (conversation.Item, error) {
	var s storedItem
	if err := json.Unmarshal(data, &s); err != nil {
		return conversation.Item{}, fmt.Errorf("decode transcript item: %w", err)
	}
	if s.V > storedItemVersion {
		return conversation.Item{}, apperr.New(apperr.Internal, "unknown_item_version",
			"a transcript item was stored in layout version %d, newer than this Toolgate reads (%d); upgrade Toolgate", s.V, storedItemVersion)
	}
	return fromStored(s), nil
}
