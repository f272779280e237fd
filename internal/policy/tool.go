package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"
)

// Annotations are the behaviour hints an MCP server declares for a tool.
// They are hints from a server that may not be trusted: they inform the
// person deciding, never the decision itself. A nil pointer means the server
// did not say, and the MCP default applies (destructive and open-world: true).
type Annotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    *bool  `json:"readOnlyHint"`
	DestructiveHint *bool  `json:"destructiveHint"`
	IdempotentHint  *bool  `json:"idempotentHint"`
	OpenWorldHint   *bool  `json:"openWorldHint"`
}

// DiscoveredTool is a tool definition as an MCP server's tools/list returned it.
type DiscoveredTool struct {
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
	Annotations Annotations     `json:"annotations"`
}

// Digest is a stable fingerprint of the tool's definition: it changes when the
// server changes the tool's name, title, description, schema or hints, so a
// changed definition can be noticed.
func (t DiscoveredTool) Digest() string {
	var schema any
	if len(t.InputSchema) > 0 {
		// Round-trip through any so that object keys are sorted and
		// whitespace is dropped: the digest depends on content, not layout.
		_ = json.Unmarshal(t.InputSchema, &schema)
	}
	canon, _ := json.Marshal(struct {
		Name        string      `json:"name"`
		Title       string      `json:"title"`
		Description string      `json:"description"`
		InputSchema any         `json:"input_schema"`
		Annotations Annotations `json:"annotations"`
	}{t.Name, t.Title, t.Description, schema, t.Annotations})
	sum := sha256.Sum256(canon)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Tool is a known tool of a server with its policies for the caller:
// discovered, or only named by an explicit policy set before discovery saw it.
type Tool struct {
	DiscoveredTool
	ServerLabel string     `json:"server_label"`
	Discovered  bool       `json:"discovered"`
	Digest      string     `json:"digest,omitempty"`
	FirstSeenAt *time.Time `json:"first_seen_at"`
	ChangedAt   *time.Time `json:"definition_changed_at"`
	// Policy is the workspace's explicit policy (set by admins), PolicyLocked
	// whether it is locked; UserPolicy the caller's personal one.
	Policy       *Policy `json:"policy"`
	PolicyLocked bool    `json:"policy_locked"`
	UserPolicy   *Policy `json:"user_policy"`
	// The caller's effective policy, by the one precedence (Resolve).
	EffectivePolicy Policy       `json:"effective_policy"`
	PolicySource    Source       `json:"policy_source"`
	Locked          bool         `json:"locked"` // the workspace setting that applies is locked
	AsksBecause     *AsksBecause `json:"asks_because"`
	Changed         *Changed     `json:"changed"`
	PolicyUpdatedAt *time.Time   `json:"policy_updated_at"`
	PolicyUpdatedBy *string      `json:"policy_updated_by"`

	// What the workspace's never was granted for (internal).
	GrantedDigest     string      `json:"-"`
	GrantedDefinition *Definition `json:"-"`
	// The caller's personal policy with what it was granted for (internal).
	userGrant *Explicit
}

// ToolPolicy is an explicit workspace policy for one (server, tool) pair.
type ToolPolicy struct {
	ServerLabel       string      `json:"server_label"`
	ToolName          string      `json:"tool_name"`
	Policy            Policy      `json:"policy"`
	Locked            bool        `json:"locked"`
	UpdatedAt         time.Time   `json:"updated_at"`
	UpdatedBy         string      `json:"updated_by"`
	UpdatedByID       *string     `json:"updated_by_id"`
	GrantedDigest     string      `json:"-"`
	GrantedDefinition *Definition `json:"-"`
}

// UserPolicy is one user's personal policy for one (server, tool) pair.
type UserPolicy struct {
	UserID            string      `json:"user_id"`
	ServerLabel       string      `json:"server_label"`
	ToolName          string      `json:"tool_name"`
	Policy            Policy      `json:"policy"`
	UpdatedAt         time.Time   `json:"updated_at"`
	GrantedDigest     string      `json:"-"`
	GrantedDefinition *Definition `json:"-"`
	// ToolDefinition is the tool's definition now, set (by
	// Store.PolicyVersion) only where a never was granted for another one.
	ToolDefinition *Definition `json:"-"`
}

// The JSON field for a server's label is server_label everywhere, as in
// OpenAI's MCP tool and approval items. Until the next release these
// objects also carry the old name, server_id, with the same value, so
// clients written against it keep working (docs/api.md: "Deprecated fields").

// MarshalJSON adds the deprecated server_id alias.
func (t Tool) MarshalJSON() ([]byte, error) {
	type plain Tool
	return json.Marshal(struct {
		plain
		ServerID string `json:"server_id"`
	}{plain(t), t.ServerLabel})
}

// MarshalJSON adds the deprecated server_id alias.
func (p ToolPolicy) MarshalJSON() ([]byte, error) {
	type plain ToolPolicy
	return json.Marshal(struct {
		plain
		ServerID string `json:"server_id"`
	}{plain(p), p.ServerLabel})
}

// MarshalJSON adds the deprecated server_id alias.
func (p UserPolicy) MarshalJSON() ([]byte, error) {
	type plain UserPolicy
	return json.Marshal(struct {
		plain
		ServerID string `json:"server_id"`
	}{plain(p), p.ServerLabel})
}
