package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// LinkMinter makes the signed one-time approve and deny links an
// approval.required delivery carries (approvallink.Minter): under base
// (PUBLIC_URL), the same for every attempt of one delivery; both "" when
// the request is gone.
type LinkMinter interface {
	DecisionLinks(ctx context.Context, base, deliveryID, requestID string, expiresAt *time.Time) (approveURL, denyURL string, err error)
}

// DecisionLinks are an approval.required delivery's approve and deny links.
type DecisionLinks struct {
	Approve, Deny string
}

// withLinks asks the minter for c's links when c is an approval.required
// delivery: the attempt fails (and is retried) when they cannot be made,
// rather than going out without them. The links are made here, when the
// delivery is sent, not stored with it: the delivery log holds no token.
func (d *Dispatcher) withLinks(ctx context.Context, c *Claimed) error {
	if d.Links == nil || c.Event != EventApprovalRequired {
		return nil
	}
	var ev struct {
		ID        string `json:"approval_request_id"`
		ExpiresAt string `json:"expires_at"`
	}
	if err := json.Unmarshal(c.Data, &ev); err != nil {
		return fmt.Errorf("the stored event of delivery %s: %w", c.ID, err)
	}
	id := ev.ID
	if id == "" {
		return nil
	}
	var expires *time.Time
	if ev.ExpiresAt != "" {
		if t, err := time.Parse(time.RFC3339Nano, ev.ExpiresAt); err == nil {
			expires = &t
		}
	}
	approve, deny, err := d.Links.DecisionLinks(ctx, d.PublicURL, c.ID, id, expires)
	if err != nil {
		return fmt.Errorf("the approve and deny links could not be made: %w", err)
	}
	if approve != "" && deny != "" {
		c.Links = &DecisionLinks{Approve: approve, Deny: deny}
	}
	return nil
}

// blocks is the Slack Block Kit message of an approval request with its
// links: the line, then Approve and Deny buttons that open the links (URL
// buttons: Slack only opens them, the page asks before deciding).
func blocks(line string, l DecisionLinks) []any {
	button := func(label, style, url, action string) map[string]any {
		return map[string]any{"type": "button", "text": map[string]any{"type": "plain_text", "text": label},
			"style": style, "url": url, "action_id": action}
	}
	return []any{
		map[string]any{"type": "section", "text": map[string]any{"type": "mrkdwn", "text": line}},
		map[string]any{"type": "actions", "elements": []any{
			button("Approve…", "primary", l.Approve, "toolgate_approve"),
			button("Deny…", "danger", l.Deny, "toolgate_deny"),
		}},
	}
}
