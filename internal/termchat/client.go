package termchat

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// client talks to Toolgate's HTTP API with a personal API token.
type client struct {
	base  string // no trailing slash
	token string
	http  *http.Client
}

func newClient(base, token string) *client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.ResponseHeaderTimeout = time.Minute
	tr.DialContext = (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	// No overall timeout: a stream lasts as long as its turn.
	return &client{base: strings.TrimRight(base, "/"), token: token, http: &http.Client{Transport: tr}}
}

// APIError is an error answer of the API: {"error": {"code", "message"}}.
type APIError struct {
	Status  int
	Code    string
	Message string
}

func (e *APIError) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("HTTP %d: %s", e.Status, e.Message)
	}
	return fmt.Sprintf("%s (%d %s)", e.Message, e.Status, e.Code)
}

// unreachableError says the server could not be reached at all.
type unreachableError struct {
	url string
	err error
}

func (e *unreachableError) Error() string {
	return fmt.Sprintf("cannot reach Toolgate at %s: %v (is it running? set --url or TOOLGATE_URL)", e.url, e.err)
}

func (e *unreachableError) Unwrap() error { return e.err }

// do sends one request. body, when not nil, goes as JSON. A status of 400
// or more is an *APIError; a transport failure is an *unreachableError.
func (c *client) do(ctx context.Context, method, path string, body any) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, fmt.Errorf("bad Toolgate URL %q: %w", c.base, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/json, text/event-stream")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return nil, &unreachableError{url: c.base, err: err}
	}
	if res.StatusCode >= 400 {
		defer res.Body.Close()
		raw, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
		var e struct {
			Error struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		apiErr := &APIError{Status: res.StatusCode}
		if json.Unmarshal(raw, &e) == nil && e.Error.Message != "" {
			apiErr.Code, apiErr.Message = e.Error.Code, e.Error.Message
		} else {
			apiErr.Message = strings.TrimSpace(string(raw))
			if apiErr.Message == "" {
				apiErr.Message = http.StatusText(res.StatusCode)
			}
		}
		return nil, apiErr
	}
	return res, nil
}

// getJSON reads a JSON answer into out.
func (c *client) getJSON(ctx context.Context, path string, out any) error {
	res, err := c.do(ctx, http.MethodGet, path, nil)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if err := json.NewDecoder(io.LimitReader(res.Body, 64<<20)).Decode(out); err != nil {
		return fmt.Errorf("GET %s: reading the answer: %w", path, err)
	}
	return nil
}

type me struct {
	Email string `json:"email"`
	Role  string `json:"role"`
}

// conversationState is the part of GET /api/conversations/{id} the client
// needs.
type conversationState struct {
	Conversation struct {
		ID        string `json:"id"`
		Title     string `json:"title"`
		Streaming bool   `json:"streaming"`
	} `json:"conversation"`
	PendingApprovals []approval `json:"pending_approvals"`
}

func (c *client) conversation(ctx context.Context, id string) (conversationState, error) {
	var st conversationState
	err := c.getJSON(ctx, "/api/conversations/"+url.PathEscape(id), &st)
	return st, err
}

// cancel asks the server to stop the conversation's running turn.
func (c *client) cancel(ctx context.Context, id string) error {
	res, err := c.do(ctx, http.MethodPost, "/api/conversations/"+url.PathEscape(id)+"/cancel", nil)
	if err != nil {
		return err
	}
	res.Body.Close()
	return nil
}

// The request bodies of the two chat routes (docs/openapi.yaml).
type messageRequest struct {
	Input          string `json:"input"`
	ConversationID string `json:"conversation_id,omitempty"`
}

type decisionsRequest struct {
	ConversationID string     `json:"conversation_id"`
	Decisions      []decision `json:"decisions"`
}

type decision struct {
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
