package webhook_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/webhook"
)

func TestSign_VerifiesAndRejectsTamperingAndOldTimestamps(t *testing.T) {
	body := []byte(`{"id":"whd_1"}`)
	now := time.Unix(1_800_000_000, 0)
	h := webhook.Sign("whsec_x", now, body)
	if !strings.HasPrefix(h, "t=1800000000,v1=") || len(h) != len("t=1800000000,v1=")+64 {
		t.Fatalf("header %q", h)
	}
	if err := webhook.Verify("whsec_x", h, body, now.Add(time.Minute), 5*time.Minute); err != nil {
		t.Errorf("a good signature: %v", err)
	}
	for name, check := range map[string]error{
		"other secret": webhook.Verify("whsec_y", h, body, now, 5*time.Minute),
		"other body":   webhook.Verify("whsec_x", h, []byte(`{"id":"whd_2"}`), now, 5*time.Minute),
		"too old":      webhook.Verify("whsec_x", h, body, now.Add(6*time.Minute), 5*time.Minute),
		"other t":      webhook.Verify("whsec_x", strings.Replace(h, "t=1800000000", "t=1800000001", 1), body, now, 5*time.Minute),
		"no t":         webhook.Verify("whsec_x", h[strings.Index(h, ",")+1:], body, now, 5*time.Minute),
	} {
		if check == nil {
			t.Errorf("%s: verified", name)
		}
	}
}

func TestBuildPayload_DecisionLineEscapesAndLinksTheCard(t *testing.T) {
	c := webhook.Claimed{ID: "whd_1", Event: webhook.EventDecisionRecorded, ConversationID: "conv_1", ConversationTitle: "Q&A <1>",
		Data:      json.RawMessage(`{"approval_request_id":"mcpr_9","server_label":"demo","tool_name":"delete_forecast","state":"approved","decided_by":"ana@example.com","pending_approval_ids":[]}`),
		CreatedAt: time.Unix(0, 0)}
	raw, err := webhook.BuildPayload(c, "https://tg.example.com/")
	if err != nil {
		t.Fatal(err)
	}
	var p webhook.Payload
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatal(err)
	}
	if want := "https://tg.example.com/c/conv_1#approval-mcpr_9"; p.URL != want {
		t.Errorf("url %q, want %q", p.URL, want)
	}
	if want := "Approved by ana@example.com: demo / delete_forecast in “Q&amp;A &lt;1&gt;” — <https://tg.example.com/c/conv_1#approval-mcpr_9|Open>"; p.Text != want {
		t.Errorf("text %q\nwant %q", p.Text, want)
	}
	if _, ok := p.Data["pending_approval_ids"]; ok || p.Data["state"] != "approved" {
		t.Errorf("data %v", p.Data)
	}
}

func TestBackoff_GrowsWithJitterWithinTheCap(t *testing.T) {
	d := &webhook.Dispatcher{Config: webhook.Config{RetryBase: 30 * time.Second, RetryMax: time.Hour}}
	total := time.Duration(0)
	for n := 1; n <= 5; n++ {
		want := 30 * time.Second
		for range n - 1 {
			want *= 3
		}
		got := d.Backoff(n)
		if got < want*8/10 || got > want*12/10 {
			t.Errorf("attempt %d: %s, want %s ±20%%", n, got, want)
		}
		total += got
	}
	if total < 45*time.Minute || total > 75*time.Minute {
		t.Errorf("the five waits add up to %s, want about an hour", total)
	}
	if got := d.Backoff(20); got > 72*time.Minute {
		t.Errorf("attempt 20 waits %s, more than the cap", got)
	}
}
