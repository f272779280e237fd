package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The headers of a delivery.
const (
	HeaderSignature = "Toolgate-Signature" // t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>
	HeaderEvent     = "Toolgate-Event"     // approval.required, decision.recorded or ping
	HeaderDelivery  = "Toolgate-Delivery"  // the delivery id, the same on every retry
)

// Payload is the JSON body of a delivery.
type Payload struct {
	ID                string         `json:"id"` // the delivery id (Toolgate-Delivery)
	Type              string         `json:"type"`
	CreatedAt         time.Time      `json:"created_at"`
	ConversationID    *string        `json:"conversation_id"`
	ConversationTitle *string        `json:"conversation_title"`
	Data              map[string]any `json:"data"`
	// URL opens the card in the web app (or the settings, for a ping).
	URL string `json:"url"`
	// Text is one line in Slack's mrkdwn, so the payload can be posted to
	// a Slack-compatible incoming webhook as it is.
	Text string `json:"text"`
	// ApproveURL and DenyURL (approval.required only) are signed one-time
	// links that decide the request as the person it waits for, after a
	// click on the page they open; Blocks is Text with Approve and Deny
	// buttons for them, in Slack's Block Kit. Absent without links.
	ApproveURL string `json:"approve_url,omitempty"`
	DenyURL    string `json:"deny_url,omitempty"`
	Blocks     []any  `json:"blocks,omitempty"`
}

// The fields of the SSE event copied into data, per event: arguments come
// redacted as the card shows them.
var dataFields = map[string][]string{
	EventApprovalRequired: {"approval_request_id", "server_label", "tool_name", "arguments", "redacted", "asks_because", "requested_at", "expires_at"},
	EventDecisionRecorded: {"approval_request_id", "server_label", "tool_name", "state", "decided_by", "reason", "scope", "decided_at", "rule", "allowed_by", "stopped"},
	EventPing:             {"webhook_id", "requested_by"},
}

// BuildPayload makes the body of c; publicURL is where people open
// Toolgate (PUBLIC_URL).
func BuildPayload(c Claimed, publicURL string) ([]byte, error) {
	var ev map[string]any
	if len(c.Data) > 0 {
		if err := json.Unmarshal(c.Data, &ev); err != nil {
			return nil, fmt.Errorf("the stored event of delivery %s: %w", c.ID, err)
		}
	}
	p := Payload{ID: c.ID, Type: c.Event, CreatedAt: c.CreatedAt.UTC(), Data: map[string]any{}}
	for _, k := range dataFields[c.Event] {
		if v, ok := ev[k]; ok {
			p.Data[k] = v
		}
	}
	base := strings.TrimRight(publicURL, "/")
	if c.ConversationID != "" {
		p.ConversationID, p.ConversationTitle = &c.ConversationID, &c.ConversationTitle
		p.URL = base + "/c/" + url.PathEscape(c.ConversationID)
		if id, _ := ev["approval_request_id"].(string); id != "" {
			p.URL += "#approval-" + url.PathEscape(id)
		}
	} else {
		p.URL = base + "/settings"
	}
	p.Text = text(c.Event, ev, c.ConversationTitle, p.URL)
	if c.Links != nil && c.Event == EventApprovalRequired {
		p.ApproveURL, p.DenyURL, p.Blocks = c.Links.Approve, c.Links.Deny, blocks(p.Text, *c.Links)
	}
	return json.Marshal(p)
}

// text is the Slack line: "Approval needed: demo / delete_forecast in
// “Weather chat” — <url|Open>".
func text(event string, ev map[string]any, title, link string) string {
	str := func(k string) string { s, _ := ev[k].(string); return s }
	tool := slackEscape(str("server_label") + " / " + str("tool_name"))
	where := ""
	if title != "" {
		where = " in “" + slackEscape(title) + "”"
	}
	open := " — <" + link + "|Open>"
	switch event {
	case EventApprovalRequired:
		return "Approval needed: " + tool + where + open
	case EventDecisionRecorded:
		what := map[string]string{"approved": "Approved", "denied": "Denied", "expired": "Expired", "superseded": "Superseded",
			"outcome_unknown": "Outcome unknown", "not_run": "Not run"}[str("state")]
		if what == "" {
			what = "Decided"
		}
		if stopped, _ := ev["stopped"].(bool); stopped {
			what = "Stopped" // denied by a person's stop: the model got no turn
		}
		if by := str("decided_by"); by != "" {
			what += " by " + slackEscape(by)
		}
		line := what + ": " + tool + where
		if r := str("reason"); r != "" {
			line += " (" + slackEscape(r) + ")"
		}
		return line + open
	}
	return "Toolgate test delivery: this webhook works" + open
}

// slackEscape escapes the three characters Slack's mrkdwn gives meaning to.
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// Sign returns the Toolgate-Signature header value of body sent at t.
func Sign(secret string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac(secret, ts, body))
}

func mac(secret, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts))
	m.Write([]byte("."))
	m.Write(body)
	return m.Sum(nil)
}

// Verify checks a Toolgate-Signature header against body, as a receiver
// would: the HMAC matches and the timestamp is within tolerance of now.
func Verify(secret, header string, body []byte, now time.Time, tolerance time.Duration) error {
	var ts string
	var sigs [][]byte
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			if b, err := hex.DecodeString(v); err == nil {
				sigs = append(sigs, b)
			}
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("the signature has no timestamp t=")
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("the signature's timestamp is %s away from now", d.Round(time.Second))
	}
	want := mac(secret, ts, body)
	for _, s := range sigs {
		if hmac.Equal(s, want) {
			return nil
		}
	}
	return fmt.Errorf("no v1 signature matches")
}
