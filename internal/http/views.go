package http

import (
	"time"

	"github.com/toolgate/toolgate/internal/policy"
)

// serverView is a server as the API shows it: header values masked.
type serverView struct {
	Label             string            `json:"label"`
	URL               string            `json:"url"`
	Description       string            `json:"description"`
	Headers           map[string]string `json:"headers"`
	DefaultPolicy     *policy.Policy    `json:"default_policy"`
	Enabled           bool              `json:"enabled"`
	CreatedAt         time.Time         `json:"created_at"`
	UpdatedAt         time.Time         `json:"updated_at"`
	ToolsRefreshedAt  *time.Time        `json:"tools_refreshed_at"`
	ToolsRefreshError *string           `json:"tools_refresh_error"`
	ToolCount         int               `json:"tool_count"`
}

func newServerView(s policy.Server) serverView {
	v := serverView{Label: s.Label, URL: s.URL, Description: s.Description, Headers: policy.MaskedHeaders(s.Headers),
		DefaultPolicy: s.DefaultPolicy, Enabled: s.Enabled, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt,
		ToolsRefreshedAt: s.RefreshedAt, ToolCount: s.ToolCount}
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
