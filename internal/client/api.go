package client

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"net/http"
	"net/url"
	"time"
)

// Me is GET /api/auth/me: who the client is signed in as.
type Me struct {
	Email string `json:"email"`
	Role  string `json:"role"`
}

// Info is GET /api/info: the upstream the chat talks to.
type Info struct {
	Offline    bool   `json:"offline"`
	Model      string `json:"model"`
	ToolLayout string `json:"tool_layout"`
	BaseURL    string `json:"base_url"`
	Version    string `json:"version"`
}

// ConversationState is the part of GET /api/conversations/{id} the Go
// callers read. PendingApprovals are approval requests as approval.required
// sends them (docs/sse-events.md), left for the caller to decode.
type ConversationState struct {
	Conversation struct {
		ID          string `json:"id"`
		Title       string `json:"title"`
		Streaming   bool   `json:"streaming"`
		LastEventID int64  `json:"last_event_id"`
	} `json:"conversation"`
	PendingApprovals []json.RawMessage `json:"pending_approvals"`
}

// MessageRequest is the body of POST /api/responses.
type MessageRequest struct {
	Input          string `json:"input"`
	ConversationID string `json:"conversation_id,omitempty"`
}

// DecisionsRequest is the body of POST /api/responses/approval-response.
type DecisionsRequest struct {
	ConversationID string     `json:"conversation_id"`
	Decisions      []Decision `json:"decisions"`
}

// Decision is one decision on an approval request.
type Decision struct {
	ApprovalRequestID string `json:"approval_request_id"`
	Approve           bool   `json:"approve"`
	Reason            string `json:"reason,omitempty"`
	Remember          bool   `json:"remember,omitempty"`
	Scope             string `json:"scope,omitempty"`
	// Correction: deny, and ask the model to use these arguments instead.
	Correction json.RawMessage `json:"correction,omitempty"`
	// Stop: deny, and every other request of the response still waiting
	// too; the model gets no turn.
	Stop bool `json:"stop,omitempty"`
}

// Login signs in with email and password; the session cookie stays in the
// client's jar for the requests after.
func (c *Client) Login(ctx context.Context, email, password string) error {
	return c.JSON(ctx, http.MethodPost, "/api/auth/login",
		map[string]string{"email": email, "password": password}, nil)
}

// Me says who the client is signed in as.
func (c *Client) Me(ctx context.Context) (Me, error) {
	var m Me
	err := c.JSON(ctx, http.MethodGet, "/api/auth/me", nil, &m)
	return m, err
}

// Info says which upstream and model the chat talks to.
func (c *Client) Info(ctx context.Context) (Info, error) {
	var i Info
	err := c.JSON(ctx, http.MethodGet, "/api/info", nil, &i)
	return i, err
}

// Conversation reads one conversation.
func (c *Client) Conversation(ctx context.Context, id string) (ConversationState, error) {
	var st ConversationState
	err := c.JSON(ctx, http.MethodGet, "/api/conversations/"+url.PathEscape(id), nil, &st)
	return st, err
}

// Cancel stops the conversation's running turn (an *Error with code
// no_turn_running when none runs).
func (c *Client) Cancel(ctx context.Context, id string) error {
	return c.JSON(ctx, http.MethodPost, "/api/conversations/"+url.PathEscape(id)+"/cancel", nil, nil)
}

// Stream is one answer in text/event-stream: a turn's events.
type Stream struct {
	*Reader
	// ConversationID is the X-Conversation-Id of the answer.
	ConversationID string
	Response       *http.Response
}

// Close ends the stream (the request's connection is closed or reused).
func (s *Stream) Close() error { return s.Response.Body.Close() }

// Send posts a message and returns the turn's stream; an empty
// ConversationID starts a new conversation.
func (c *Client) Send(ctx context.Context, m MessageRequest) (*Stream, error) {
	return c.Open(ctx, http.MethodPost, "/api/responses", m, nil)
}

// Decide posts decisions on approval requests and returns the stream of the
// turn they continue.
func (c *Client) Decide(ctx context.Context, d DecisionsRequest) (*Stream, error) {
	return c.Open(ctx, http.MethodPost, "/api/responses/approval-response", d, nil)
}

// Open sends a request answered with text/event-stream and returns the
// stream (an answer of another type is an *Error with its status).
func (c *Client) Open(ctx context.Context, method, path string, body any, hdr http.Header) (*Stream, error) {
	h := http.Header{"Accept": {"text/event-stream"}}
	for k, vs := range hdr {
		h[k] = vs
	}
	res, err := c.Do(ctx, method, path, body, h)
	if err != nil {
		return nil, err
	}
	if ct := res.Header.Get("Content-Type"); len(ct) < 17 || ct[:17] != "text/event-stream" {
		defer res.Body.Close()
		e := readError(res)
		e.Message = "not an event stream (" + ct + "): " + e.Message
		return nil, e
	}
	return &Stream{Reader: NewReader(res.Body), ConversationID: res.Header.Get("X-Conversation-Id"), Response: res}, nil
}

// DefaultRetry is how long Follow waits before it reconnects when the
// server named no retry: time.
const DefaultRetry = time.Second

// maxReconnects is how many reconnects in a row may fail before Follow
// gives up.
const maxReconnects = 5

// Follow yields a conversation's events (GET
// /api/conversations/{id}/events) after lastID ("" for the server's
// default start), and live ones. When the connection drops it reconnects
// with Last-Event-ID set to the last id seen, so no event is lost or
// yielded twice. It ends when ctx does or the caller stops; it yields an
// error (and ends) when the server refuses the request or cannot be
// reached maxReconnects times in a row.
func (c *Client) Follow(ctx context.Context, conv, lastID string) iter.Seq2[Event, error] {
	path := "/api/conversations/" + url.PathEscape(conv) + "/events"
	return func(yield func(Event, error) bool) {
		st := &followState{lastID: &lastID, retry: DefaultRetry}
		for ctx.Err() == nil {
			if !c.followOnce(ctx, path, st, yield) {
				return
			}
			select {
			case <-ctx.Done():
			case <-time.After(st.retry):
			}
		}
	}
}

// followState is what Follow keeps between connections.
type followState struct {
	lastID   *string       // the last id seen: Follow's lastID
	retry    time.Duration // the wait before the next connection
	failures int           // connections that failed in a row
}

// followOnce opens path once, after st.lastID, and yields its events until
// it ends; more is false when Follow ends (the caller stopped, ctx ended,
// or the server refused or stayed unreachable).
func (c *Client) followOnce(ctx context.Context, path string, st *followState, yield func(Event, error) bool) (more bool) {
	var hdr http.Header
	if *st.lastID != "" {
		hdr = http.Header{"Last-Event-Id": {*st.lastID}}
	}
	s, err := c.Open(ctx, http.MethodGet, path, nil, hdr)
	if err != nil {
		if ctx.Err() != nil {
			return false
		}
		if st.failures++; !transient(err) || st.failures > maxReconnects {
			yield(Event{}, err)
			return false
		}
		return true
	}
	got, more := relay(s, yield)
	*st.lastID = s.LastID()
	if !more {
		return false
	}
	if got {
		st.failures = 0
	}
	if s.retry > 0 {
		st.retry = s.retry
	}
	return true
}

// relay yields s's events until it ends; more is false when the caller
// stopped.
func relay(s *Stream, yield func(Event, error) bool) (got, more bool) {
	defer s.Close()
	for ev, err := range s.All() {
		if errors.Is(err, ErrEventTooLarge) {
			yield(Event{}, err) // the same again on a reconnect
			return got, false
		}
		if err != nil {
			return got, true // a dropped connection: reconnect
		}
		got = true
		if !yield(ev, nil) {
			return got, false
		}
	}
	return got, true
}

// transient reports whether a failed (re)connect may work later: the
// server unreachable or answering 5xx.
func transient(err error) bool {
	var ue *UnreachableError
	var ae *Error
	return errors.As(err, &ue) || (errors.As(err, &ae) && ae.Status >= 500)
}
