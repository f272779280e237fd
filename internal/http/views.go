package http

import (
	"time"

	"github.com/toolgate/toolgate/internal/policy"
)

// serverView is a server as the API shows it: header values masked.
type serverView struct {
	Label         string            `json:"label"`
	URL           string            `json:"url"`
	Description   string            `json:"description"`
	Headers       map[string]string `json:"headers"`
	DefaultPolicy *policy.Policy    `json:"default_policy"`
	DefaultLocked bool              `json:"default_policy_locked"`
	Enabled       bool              `json:"enabled"`
	// ApprovalTTLSeconds overrides APPROVAL_TTL for the server's approval
	// requests: null means APPROVAL_TTL, 0 never expire.
	ApprovalTTLSeconds *int       `json:"approval_ttl_seconds"`
	CreatedAt          time.Time  `json:"created_at"`
	UpdatedAt          time.Time  `json:"updated_at"`
	ToolsRefreshedAt   *time.Time `json:"tools_refreshed_at"`
	ToolsRefreshError  *string    `json:"tools_refresh_error"`
	ToolCount          int        `json:"tool_count"`
	Health             healthView `json:"health"`
	// HeadersDropped names the stored headers a PATCH that moved the URL to
	// another host dropped; only in that PATCH's answer.
	HeadersDropped []string `json:"headers_dropped,omitempty"`
	// ReadOnlyHints: "claimed" until an admin accepts the server's
	// readOnlyHint annotations ("trusted").
	ReadOnlyHints string `json:"read_only_hints"`
	// MaskResults: the MCP face masks secret-looking values in the
	// server's results before the provider reads them.
	MaskResults bool `json:"mask_results"`
}

func newServerView(s policy.Server) serverView {
	v := serverView{Label: s.Label, URL: policy.MaskURL(s.URL), HeadersDropped: s.HeadersDropped, Description: s.Description, Headers: policy.MaskedHeaders(s.Headers),
		DefaultPolicy: s.DefaultPolicy, DefaultLocked: s.DefaultPolicyLocked, Enabled: s.Enabled, ApprovalTTLSeconds: s.ApprovalTTLSeconds, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt,
		ToolsRefreshedAt: s.RefreshedAt, ToolCount: s.ToolCount, Health: newHealthView(s.Health), ReadOnlyHints: s.ReadOnlyHints,
		MaskResults: !s.UnmaskedResults}
	if s.RefreshError != "" {
		v.ToolsRefreshError = &s.RefreshError
	}
	return v
}

type serversResponse struct {
	Servers []serverView `json:"servers"`
}

type toolsResponse struct {
	Tools []policy.Tool `json:"tools"`
}

type policiesResponse struct {
	Policies []policy.ToolPolicy `json:"policies"`
}
