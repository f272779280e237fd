package webhook_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/webhook"
)

// An approval.required payload with links carries them at the top level
// and as Slack buttons under the same text; a decision.recorded payload
// never does, even handed links. Catches: links dropped from the payload,
// buttons pointing elsewhere, links leaking into other events.
func TestBuildPayload_ApprovalLinksAndSlackButtons(t *testing.T) {
	links := &webhook.DecisionLinks{Approve: "https://tg.example.com/link/mcpr_9#tgl_a", Deny: "https://tg.example.com/link/mcpr_9#tgl_d"}
	c := webhook.Claimed{ID: "whd_1", Event: webhook.EventApprovalRequired, ConversationID: "conv_1", ConversationTitle: "Weather",
		Data:      json.RawMessage(`{"approval_request_id":"mcpr_9","server_label":"demo","tool_name":"delete_forecast"}`),
		CreatedAt: time.Unix(0, 0), Links: links}
	raw, err := webhook.BuildPayload(c, "https://tg.example.com")
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		webhook.Payload
		Blocks []struct {
			Type string `json:"type"`
			Text *struct {
				Text string `json:"text"`
			} `json:"text"`
			Elements []struct {
				Text  struct{ Text string } `json:"text"`
				URL   string                `json:"url"`
				Style string                `json:"style"`
			} `json:"elements"`
		} `json:"blocks"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatal(err)
	}
	if p.ApproveURL != links.Approve || p.DenyURL != links.Deny {
		t.Errorf("links %q %q", p.ApproveURL, p.DenyURL)
	}
	if len(p.Blocks) != 2 || p.Blocks[0].Text == nil || p.Blocks[0].Text.Text != p.Text || len(p.Blocks[1].Elements) != 2 ||
		p.Blocks[1].Elements[0].URL != links.Approve || p.Blocks[1].Elements[0].Style != "primary" ||
		p.Blocks[1].Elements[1].URL != links.Deny || p.Blocks[1].Elements[1].Style != "danger" {
		t.Errorf("blocks %s", raw)
	}

	c.Event = webhook.EventDecisionRecorded
	raw, err = webhook.BuildPayload(c, "https://tg.example.com")
	if err != nil {
		t.Fatal(err)
	}
	if s := string(raw); strings.Contains(s, "tgl_") || strings.Contains(s, "blocks") || strings.Contains(s, "approve_url") {
		t.Errorf("a decision.recorded payload carries links: %s", s)
	}
}
