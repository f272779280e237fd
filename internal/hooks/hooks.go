// Package hooks asks decision hooks: HTTP endpoints an admin names (per MCP
// server, and one for the workspace) that answer an approval request before
// anyone sees its card. A request is signed like Toolgate's webhooks; the
// answer is approve, deny or ask, and anything else (a timeout, an error
// status, a body that is not the expected JSON) counts as ask, so a hook
// that fails never approves anything.
package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Decision is a hook's answer.
type Decision string

// The answers a hook may give.
const (
	Approve Decision = "approve"
	Deny    Decision = "deny"
	Ask     Decision = "ask"
)

// Which hook answered.
const (
	HookServer    = "server"
	HookWorkspace = "workspace"
)

// Timeouts: DefaultTimeout when none is set; MinTimeout..MaxTimeout allowed.
const (
	DefaultTimeout = 3 * time.Second
	MinTimeout     = 100 * time.Millisecond
	MaxTimeout     = 10 * time.Second
)

// SignatureHeader carries the request's signature (see Sign).
const SignatureHeader = "Toolgate-Signature"

// maxAnswer bounds how much of an answer is read: a decision and a reason
// fit in far less.
const maxAnswer = 16 << 10

// maxReason bounds the reason kept from an answer (it is shown on the card
// and sent upstream with a denial).
const maxReason = 500

// User is who the call is made for.
type User struct {
	ID    string `json:"id"`
	Email string `json:"email"`
	Role  string `json:"role"`
}

// Request is the JSON body a hook receives.
type Request struct {
	// Type is always "approval.decide".
	Type string `json:"type"`
	// Hook says which of the hooks this is: "server" or "workspace".
	Hook   string `json:"hook"`
	Server string `json:"server"`
	Tool   string `json:"tool"`
	// Arguments are the call's arguments redacted as on the card (values
	// under secret-looking keys, and credentials found by their value,
	// replaced by "[redacted]"); Redacted lists the paths hidden.
	Arguments         json.RawMessage `json:"arguments"`
	Redacted          []string        `json:"redacted"`
	User              User            `json:"user"`
	ConversationID    string          `json:"conversation_id"`
	ApprovalRequestID string          `json:"approval_request_id"`
	// Test is true for the request "Send test" sends: nothing waits for it.
	Test   bool      `json:"test"`
	SentAt time.Time `json:"sent_at"`
}

// Endpoint is one configured hook.
type Endpoint struct {
	URL     string
	Secret  string
	Timeout time.Duration // 0: DefaultTimeout
}

// Answer is what a hook answered, or ask with the reason it could not.
type Answer struct {
	Decision Decision `json:"decision"`
	Reason   string   `json:"reason,omitempty"`
	// Status is the HTTP status the hook answered with (0: none arrived).
	Status int `json:"status"`
	// Error says why the answer counts as ask although the hook did not
	// say so (timeout, error status, bad JSON); "" when it answered.
	Error      string `json:"error,omitempty"`
	DurationMS int64  `json:"duration_ms"`
}

// Client sends requests to hooks. It follows no redirects.
type Client struct {
	http *http.Client
	now  func() time.Time
}

// NewClient returns a Client whose requests go through rt (nil: a
// transport of its own without a proxy). Toolgate passes the netguard
// transport, so a hook reaches only addresses the MCP URL policy allows.
func NewClient(rt http.RoundTripper) *Client {
	if rt == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.Proxy = nil
		rt = t
	}
	return &Client{now: time.Now, http: &http.Client{Transport: rt,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// Ask sends req to ep, signed with ep's secret, and waits at most ep's
// timeout for the answer. It never fails: whatever goes wrong is an ask
// whose Error says what.
func (c *Client) Ask(ctx context.Context, ep Endpoint, req Request) Answer {
	start := c.now()
	a := c.ask(ctx, ep, req)
	a.DurationMS = c.now().Sub(start).Milliseconds()
	if a.Error != "" {
		a.Decision, a.Reason = Ask, ""
	}
	return a
}

func (c *Client) ask(ctx context.Context, ep Endpoint, req Request) Answer {
	timeout := ep.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	req.Type = "approval.decide"
	if req.SentAt.IsZero() {
		req.SentAt = c.now().UTC()
	}
	if req.Arguments == nil {
		req.Arguments = json.RawMessage("{}")
	}
	if req.Redacted == nil {
		req.Redacted = []string{}
	}
	body, err := json.Marshal(req)
	if err != nil {
		return Answer{Error: "the request could not be encoded: " + err.Error()}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.URL, bytes.NewReader(body))
	if err != nil {
		return Answer{Error: "the hook's URL is not usable: " + err.Error()}
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("User-Agent", "Toolgate-DecisionHook/1")
	hr.Header.Set(SignatureHeader, Sign(ep.Secret, c.now(), body))
	res, err := c.http.Do(hr)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return Answer{Error: fmt.Sprintf("the hook did not answer within %s", timeout)}
		}
		return Answer{Error: "the hook could not be reached: " + err.Error()}
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, maxAnswer+1))
	a := Answer{Status: res.StatusCode}
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		a.Error = fmt.Sprintf("the hook did not answer within %s", timeout)
	case err != nil:
		a.Error = "the hook's answer broke off: " + err.Error()
	case res.StatusCode < 200 || res.StatusCode > 299:
		a.Error = fmt.Sprintf("the hook answered %d %s; only a 2xx answer with a decision counts", res.StatusCode, http.StatusText(res.StatusCode))
	case len(raw) > maxAnswer:
		a.Error = fmt.Sprintf("the hook's answer is larger than %d bytes", maxAnswer)
	default:
		a.Decision, a.Reason, err = parseAnswer(raw)
		if err != nil {
			a.Error = err.Error()
		}
	}
	return a
}

// parseAnswer reads {"decision": "approve"|"deny"|"ask", "reason"?: "..."}.
func parseAnswer(raw []byte) (Decision, string, error) {
	var v struct {
		Decision *string `json:"decision"`
		Reason   *string `json:"reason"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", "", fmt.Errorf(`the hook's answer is not JSON like {"decision": "approve"}: %s`, snippet(raw))
	}
	if v.Decision == nil {
		return "", "", errors.New(`the hook's answer has no "decision" (approve, deny or ask)`)
	}
	d := Decision(*v.Decision)
	if d != Approve && d != Deny && d != Ask {
		return "", "", fmt.Errorf(`the hook answered the decision %s; it must be approve, deny or ask`, snippet([]byte(*v.Decision)))
	}
	reason := ""
	if v.Reason != nil {
		reason = strings.TrimSpace(*v.Reason)
		if r := []rune(reason); len(r) > maxReason {
			reason = string(r[:maxReason]) + "…"
		}
	}
	return d, reason, nil
}

func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if r := []rune(s); len(r) > 80 {
		s = string(r[:80]) + "…"
	}
	return fmt.Sprintf("%q", s)
}
