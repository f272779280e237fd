// Package client speaks Toolgate's HTTP API (docs/openapi.yaml) from Go:
// typed requests, errors as *Error, and one reader of its server-sent
// events (docs/sse-events.md) with Last-Event-ID resume. The terminal
// client, the bench and the Go tests use it; it imports no server package.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"time"
)

// Client calls one Toolgate. Sign in with a personal API token (Token) or
// a session (Login keeps its cookie in the client's jar).
type Client struct {
	base string // no trailing slash
	// Token is a personal API token (tg_…), sent as a Bearer token; "" to
	// use the session cookie.
	Token string
	// Origin, when set, is sent as the Origin header of state-changing
	// requests, as a browser page on that origin would. Leave it empty:
	// the API's cross-site guard (internal/http/guard.go) lets a request
	// with no Origin through (scripts, curl, this client), and refuses one
	// whose Origin is not Toolgate's own, which a proxy rewriting Host
	// would turn Toolgate's own into.
	Origin string
	// HTTP sends the requests. Its Jar holds the session cookie.
	HTTP *http.Client
}

// New returns a client of the Toolgate at base (http(s)://host[:port]).
// Its HTTP client has a cookie jar and no overall timeout: a stream lasts
// as long as its turn.
func New(base, token string) (*Client, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("client: the Toolgate URL must be an http(s) URL such as http://127.0.0.1:8080, not %q", base)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.ResponseHeaderTimeout = time.Minute
	tr.DialContext = (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	jar, _ := cookiejar.New(nil)
	return &Client{
		base:  strings.TrimRight(base, "/"),
		Token: token,
		HTTP:  &http.Client{Transport: tr, Jar: jar},
	}, nil
}

// Base is the Toolgate URL without a trailing slash.
func (c *Client) Base() string { return c.base }

// Error is an error answer of the API: {"error": {"code", "message",
// "fields"}}, or a status whose body is not that (Code "", Message the
// body or the status text).
type Error struct {
	Status  int
	Code    string
	Message string
	Fields  map[string]string
}

func (e *Error) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("HTTP %d: %s", e.Status, e.Message)
	}
	return fmt.Sprintf("%s (%d %s)", e.Message, e.Status, e.Code)
}

// UnreachableError says the server could not be reached at all.
type UnreachableError struct {
	URL string
	Err error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("cannot reach Toolgate at %s: %v", e.URL, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// Do sends one request: body, when not nil, as JSON; hdr adds headers. A
// status of 400 or more is an *Error (the body read and closed); a
// transport failure an *UnreachableError, or ctx's error when ctx ended.
func (c *Client) Do(ctx context.Context, method, path string, body any, hdr http.Header) (*http.Response, error) {
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
		return nil, fmt.Errorf("client: %s %s: %w", method, path, err)
	}
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Origin != "" && method != http.MethodGet && method != http.MethodHead {
		req.Header.Set("Origin", c.Origin)
	}
	res, err := c.HTTP.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return nil, &UnreachableError{URL: c.base, Err: err}
	}
	if res.StatusCode >= 400 {
		defer res.Body.Close()
		return nil, readError(res)
	}
	return res, nil
}

// readError turns an error answer into an *Error.
func readError(res *http.Response) *Error {
	raw, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	var e struct {
		Error struct {
			Code    string            `json:"code"`
			Message string            `json:"message"`
			Fields  map[string]string `json:"fields"`
		} `json:"error"`
	}
	out := &Error{Status: res.StatusCode}
	if json.Unmarshal(raw, &e) == nil && e.Error.Message != "" {
		out.Code, out.Message, out.Fields = e.Error.Code, e.Error.Message, e.Error.Fields
		return out
	}
	out.Message = strings.TrimSpace(string(raw))
	if out.Message == "" {
		out.Message = http.StatusText(res.StatusCode)
	}
	return out
}

// JSON sends body (nil: none) and decodes a JSON answer into out (nil:
// the answer is discarded).
func (c *Client) JSON(ctx context.Context, method, path string, body, out any) error {
	res, err := c.Do(ctx, method, path, body, nil)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 1<<20))
		return nil
	}
	if err := json.NewDecoder(io.LimitReader(res.Body, 64<<20)).Decode(out); err != nil {
		return fmt.Errorf("client: %s %s: reading the answer: %w", method, path, err)
	}
	return nil
}
