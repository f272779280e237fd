package client

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"net/url"
	"time"
)

// Inbox is GET /api/approvals?state=pending: every approval request
// waiting for the caller, across their chats and agents, oldest first,
// each as the inbox sends it (the card and its source), left for the
// caller to decode.
func (c *Client) Inbox(ctx context.Context) ([]json.RawMessage, error) {
	var out struct {
		Approvals []json.RawMessage `json:"approvals"`
	}
	err := c.JSON(ctx, http.MethodGet, "/api/approvals?state=pending", nil, &out)
	return out.Approvals, err
}

// DecideWaiting is POST /api/approvals/{id}/decision: one decision on a
// request of the caller's, a chat's or an agent's; it returns the request
// as decided.
func (c *Client) DecideWaiting(ctx context.Context, d Decision) (json.RawMessage, error) {
	var out json.RawMessage
	err := c.JSON(ctx, http.MethodPost, "/api/approvals/"+url.PathEscape(d.ApprovalRequestID)+"/decision", d, &out)
	return out, err
}

// FollowInbox yields the inbox stream's events (GET /api/approvals/events:
// approvals.changed at once, then at every change), reconnecting after a
// drop as Follow does; each connection starts with the state then.
func (c *Client) FollowInbox(ctx context.Context) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		none := ""
		st := &followState{lastID: &none, retry: DefaultRetry}
		for ctx.Err() == nil {
			if !c.followOnce(ctx, "/api/approvals/events", st, yield) {
				return
			}
			none = "" // the stream has no resume point: each connection tells the state
			select {
			case <-ctx.Done():
			case <-time.After(st.retry):
			}
		}
	}
}
