package responses_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/policy"
	tgresponses "github.com/toolgate/toolgate/internal/responses"
)

// groupsOfServers is n servers with one tool each.
func groupsOfServers(n int) []policy.ServerTools {
	var out []policy.ServerTools
	for i := range n {
		out = append(out, policy.ServerTools{Server: policy.Server{Label: fmt.Sprintf("s%d", i), URL: "https://mcp.example/mcp"},
			Never: []policy.GroupedTool{{Name: "search", Source: policy.FromGlobal}}})
	}
	return out
}

// A request with more tools entries than the provider accepts is refused
// before anything is sent, saying what to do; one at the bound goes.
func TestTooManyServersAreRefusedBeforeSending(t *testing.T) {
	api := serveSSE(t, []byte(minimalStream))
	c := tgresponses.New(tgresponses.Config{BaseURL: api.URL, APIKey: "sk-test", Model: "m", MaxTools: 3})
	_, err := c.Stream(t.Context(), conversation.UpstreamRequest{UserText: "hi", Tools: groupsOfServers(4)})
	var ue *conversation.UpstreamError
	if !errors.As(err, &ue) || ue.Code != conversation.CodeRequestTooLarge || ue.MaybeDelivered || ue.Status != 0 {
		t.Fatalf("err = %#v, want request_too_large", err)
	}
	for _, want := range []string{"4 MCP tool entries", "more than the 3", "disable servers", "fewer servers for this conversation"} {
		if !strings.Contains(ue.Message, want) {
			t.Errorf("message %q does not say %q", ue.Message, want)
		}
	}
	if n := len(api.Requests()); n != 0 {
		t.Errorf("%d requests reached the provider, want none", n)
	}
	stream(t, c, conversation.UpstreamRequest{UserText: "hi", Tools: groupsOfServers(3)}).mustComplete(t)
	if n := len(api.Requests()); n != 1 {
		t.Errorf("%d requests reached the provider, want the one at the bound", n)
	}
	if tgresponses.MaxTools != 128 {
		t.Errorf("MaxTools = %d, want the documented 128", tgresponses.MaxTools)
	}
}

// The split layout sends two entries per server: the bound counts entries.
func TestTooManyEntriesInTheSplitLayout(t *testing.T) {
	api := serveSSE(t, []byte(minimalStream))
	c := tgresponses.New(tgresponses.Config{BaseURL: api.URL, APIKey: "sk-test", Model: "m", MaxTools: 3, Layout: tgresponses.LayoutSplit})
	groups := groupsOfServers(2)
	for i := range groups {
		groups[i].Always = []policy.GroupedTool{{Name: "update", Source: policy.FromGlobal}}
	}
	_, err := c.Stream(t.Context(), conversation.UpstreamRequest{UserText: "hi", Tools: groups})
	var ue *conversation.UpstreamError
	if !errors.As(err, &ue) || ue.Code != conversation.CodeRequestTooLarge {
		t.Fatalf("err = %#v, want request_too_large for 4 entries", err)
	}
}
