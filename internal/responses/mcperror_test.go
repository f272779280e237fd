package responses_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/policy"
	tgresponses "github.com/toolgate/toolgate/internal/responses"
)

// TestStream_424NamesTheServer: a 424 whose message names a server_label
// of the request (the provider could not list that server's tools) is
// mapped back to the Toolgate server, in either layout; a label the request
// did not send names no server.
func TestStream_424NamesTheServer(t *testing.T) {
	groups := []policy.ServerTools{
		{Server: srv("crm"), Never: tools("lookup"), Always: tools("delete")},
		{Server: srv("demo-2"), Never: tools("get_forecast")},
	}
	for _, tc := range []struct {
		layout tgresponses.Layout
		label  string // as the provider names it
		want   string
	}{
		{tgresponses.LayoutDefault, "demo-2", "demo-2"},
		{tgresponses.LayoutSplit, "crm__always", "crm"},
		{tgresponses.LayoutSplit, "demo-2__never", "demo-2"},
		{tgresponses.LayoutDefault, "other", ""},
	} {
		t.Run(string(tc.layout)+" "+tc.label, func(t *testing.T) {
			body := `{"error":{"message":"Error retrieving tool list from MCP server: '` + tc.label +
				`'. Http status code: 424 (Failed Dependency)","type":"external_connector_error","param":"tools","code":"http_error"}}`
			api := startFakeAPI(t, http.StatusFailedDependency, "application/json", []byte(body))
			c := tgresponses.New(tgresponses.Config{BaseURL: api.URL, APIKey: "sk-test", Model: "m", Layout: tc.layout})
			_, err := c.Stream(t.Context(), conversation.UpstreamRequest{UserText: "hello", Tools: groups, Retry: true})
			var ue *conversation.UpstreamError
			if !errors.As(err, &ue) || ue.Status != http.StatusFailedDependency {
				t.Fatalf("Stream: %v, want the 424", err)
			}
			if ue.ServerLabel != tc.want {
				t.Errorf("ServerLabel = %q, want %q", ue.ServerLabel, tc.want)
			}
		})
	}
}
