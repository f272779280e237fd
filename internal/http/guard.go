package http

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/toolgate/toolgate/internal/apperr"
)

// DefaultAllowedHosts are the names the API answers to when Options gives
// none: this machine's loopback names. config.Load adds the host of
// LISTEN_ADDR; ALLOWED_HOSTS replaces the list.
var DefaultAllowedHosts = []string{"localhost", "127.0.0.1", "::1"}

// bodyChecked marks a request whose body the guard has already read and
// checked (media type, text), so decode need not walk it again.
const bodyChecked = "toolgate.body_checked"

// guard is the API's first line, before routing and before sign-in, in
// every auth mode. It refuses, in this order:
//   - a Host that is not in ALLOWED_HOSTS (421 misdirected_host): a page on
//     a rebound DNS name reaches this port under a name of its own;
//   - a state-changing request from another origin (403 cross_origin):
//     net/http.CrossOriginProtection on Sec-Fetch-Site/Origin, plus an
//     Origin whose host is not allowed. Requests with neither header (curl,
//     scripts) pass: browsers always send one;
//   - NUL or invalid UTF-8 in the path or the query (400 invalid_text);
//   - an /api body that is not JSON (415 unsupported_media_type): an HTML
//     form or a no-cors fetch can only send form or text/plain bodies;
//   - NUL or invalid UTF-8 in a JSON string (400 invalid_text).
//
// /healthz, /readyz and /metrics skip the Host check: probes and
// Prometheus use pod IPs (/metrics needs METRICS_TOKEN, which no page has).
// The MCP face (/mcp/) skips the Host and Origin checks: the model's
// provider reaches it under PUBLIC_URL's name, and it is authorized by a
// capability token in the Authorization header, which no page on another
// site (rebound or cross-origin) has or gets sent by a browser.
func (s *Server) guard(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		face := strings.HasPrefix(r.URL.Path, "/mcp/") || r.URL.Path == "/mcp"
		if r.URL.Path != "/healthz" && r.URL.Path != "/readyz" && r.URL.Path != "/metrics" && !face {
			if err := s.checkHost(r.Host); err != nil {
				return err
			}
		}
		if !face {
			if err := s.checkOrigin(r); err != nil {
				return err
			}
		}
		if err := checkURLText(r.URL); err != nil {
			return err
		}
		if err := s.checkBody(c); err != nil {
			return err
		}
		return next(c)
	}
}

// allowedHost reports whether host (a Host header or an Origin's host, with
// or without a port) is one this server answers to.
func (s *Server) allowedHost(host string) bool {
	return slices.Contains(s.allowedHosts, normalizeHost(host))
}

func (s *Server) checkHost(host string) error {
	if s.allowedHost(host) {
		return nil
	}
	got := host
	if got == "" {
		got = "(none)"
	}
	return apperr.New(apperr.Misdirected, "misdirected_host",
		"this server answers only to the host names in ALLOWED_HOSTS (%s), and this request was sent to %q; "+
			"open Toolgate under one of those names, or add this one to ALLOWED_HOSTS",
		strings.Join(s.allowedHosts, ", "), got)
}

var errCrossOrigin = apperr.New(apperr.Forbidden, "cross_origin",
	"this request came from a page on another site, and Toolgate refuses changes that do not come from its own pages; "+
		"use Toolgate's web app, or send the request from a script or curl (without an Origin header)")

func (s *Server) checkOrigin(r *http.Request) error {
	if err := s.crossOrigin.Check(r); err != nil {
		return errCrossOrigin
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return nil
	}
	if origin == "null" { // sandboxed frames, file: pages
		if r.Method == http.MethodGet || r.Method == http.MethodHead || r.Method == http.MethodOptions {
			return nil
		}
		return errCrossOrigin
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || !s.allowedHost(u.Host) {
		return errCrossOrigin
	}
	return nil
}

// checkURLText refuses NUL and invalid UTF-8 in the path and the query,
// both after unescaping: Postgres text cannot hold NUL, and ids and filters
// go to Postgres.
func checkURLText(u *url.URL) error {
	if problem := badText(u.Path); problem != "" {
		return textError("path", "the path", problem)
	}
	if u.RawQuery == "" {
		return nil
	}
	// Pairs with a broken escape are dropped here as everywhere (url.Query).
	q, _ := url.ParseQuery(u.RawQuery)
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if problem := badText(k); problem != "" {
			return textError("query", "a query parameter name", problem)
		}
		for _, v := range q[k] {
			if problem := badText(v); problem != "" {
				return textError(k, "query parameter "+k, problem)
			}
		}
	}
	return nil
}

// badText says what is wrong with s as text, or "".
func badText(s string) string {
	switch {
	case !utf8.ValidString(s):
		return "is not valid UTF-8"
	case strings.IndexByte(s, 0) >= 0:
		return "contains a NUL character (\\u0000)"
	}
	return ""
}

func textError(field, where, problem string) error {
	return apperr.Invalidf("invalid_text", field, "%s %s; Toolgate accepts only UTF-8 text without NUL characters: fix or remove it", where, problem)
}

// bodyMethod reports whether r may carry a body a handler reads.
func bodyMethod(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// checkBody reads an /api request body (at most maxBodyBytes), refuses one
// that is not JSON or holds text Toolgate cannot store, and puts it back
// for the handler.
func (s *Server) checkBody(c echo.Context) error {
	r := c.Request()
	p := r.URL.Path
	if !bodyMethod(r.Method) || r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 ||
		(p != "/api" && !strings.HasPrefix(p, "/api/")) {
		return nil
	}
	raw, err := io.ReadAll(http.MaxBytesReader(c.Response(), r.Body, s.maxBodyBytes))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return apperr.New(apperr.TooLarge, "body_too_large", "the request body is larger than %d bytes", tooBig.Limit)
	}
	if err != nil {
		return fmt.Errorf("read request body: %w", err)
	}
	r.Body = io.NopCloser(bytes.NewReader(raw))
	r.ContentLength = int64(len(raw))
	if len(raw) == 0 {
		return nil
	}
	if err := checkJSONType(r.Header.Get("Content-Type")); err != nil {
		return err
	}
	if err := checkJSONText(raw); err != nil {
		return err
	}
	c.Set(bodyChecked, true)
	return nil
}

// checkJSONType refuses a body whose Content-Type is not application/json
// (parameters such as charset=utf-8 are fine).
func checkJSONType(contentType string) error {
	mt, params, err := mime.ParseMediaType(contentType)
	if err == nil && mt == "application/json" {
		if cs, ok := params["charset"]; !ok || strings.EqualFold(cs, "utf-8") {
			return nil
		}
	}
	got := contentType
	if got == "" {
		got = "none"
	}
	return apperr.New(apperr.Unsupported, "unsupported_media_type",
		"send the body as JSON with Content-Type: application/json (got %s)", strconv.Quote(got))
}

// checkJSONText walks the JSON text raw and refuses a string (value or
// name) that is not valid UTF-8 or holds NUL, naming the field, e.g.
// "field input" or "field decisions[0].reason". encoding/json would quietly
// turn invalid UTF-8 into U+FFFD and keep \u0000, which Postgres refuses.
// Malformed JSON is left to decode, which says where it breaks.
func checkJSONText(raw []byte) error {
	if utf8.Valid(raw) && !bytes.Contains(raw, []byte(`\u0000`)) {
		return nil // the common case: nothing to look for
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var stack textPath
	prev := int64(0)
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil // io.EOF, or malformed: decode reports it
		}
		end := dec.InputOffset()
		segment := raw[prev:end]
		prev = end
		if stack, err = stack.token(tok, segment); err != nil {
			return err
		}
	}
}

// textFrame is an object or array open in checkJSONText's walk.
type textFrame struct {
	object bool
	key    string // object: the current member's name
	index  int    // array: the next element's index
	keyNow bool   // object: the next string is a name
}

// textPath is the objects and arrays open in checkJSONText's walk,
// outermost first.
type textPath []textFrame

// where names the place the path points at, e.g. "decisions[0].reason".
func (p textPath) where() string {
	var b strings.Builder
	for _, f := range p {
		if f.object {
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(f.key)
		} else {
			fmt.Fprintf(&b, "[%d]", f.index)
		}
	}
	return b.String()
}

// token takes the next token (segment: its raw bytes since the last one)
// and returns the path after it, or the error for a string it refuses.
func (p textPath) token(tok json.Token, segment []byte) (textPath, error) {
	top := len(p) - 1
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{', '[':
			return append(p, textFrame{object: t == '{', keyNow: t == '{'}), nil
		default:
			p = p[:top]
			top--
		}
	case string:
		if top >= 0 && p[top].object && p[top].keyNow {
			if err := p[:top].nameProblem(segment, t); err != nil {
				return p, err
			}
			p[top].key, p[top].keyNow = t, false
			return p, nil
		}
		if err := p.valueProblem(segment, t); err != nil {
			return p, err
		}
	}
	// A value ended: the next string in an object is a name again, and
	// an array moves to its next element.
	if top >= 0 {
		if p[top].object {
			p[top].keyNow = true
		} else {
			p[top].index++
		}
	}
	return p, nil
}

// nameProblem refuses a field name of the object inside p.
func (p textPath) nameProblem(segment []byte, key string) error {
	if problem := jsonStringProblem(segment, key); problem != "" {
		if name := p.where(); name != "" {
			return textError(name, "a field name in "+name, problem)
		}
		return textError("body", "a field name", problem)
	}
	return nil
}

// valueProblem refuses a string value at p.
func (p textPath) valueProblem(segment []byte, value string) error {
	if problem := jsonStringProblem(segment, value); problem != "" {
		if name := p.where(); name != "" {
			return textError(name, "field "+name, problem)
		}
		return textError("body", "the body", problem)
	}
	return nil
}

// jsonStringProblem checks one string token: its raw bytes (which hold the
// quotes and maybe separators before it) must be UTF-8, and its decoded
// value must not hold NUL.
func jsonStringProblem(segment []byte, value string) string {
	if !utf8.Valid(segment) {
		return "is not valid UTF-8"
	}
	if strings.IndexByte(value, 0) >= 0 {
		return "contains a NUL character (\\u0000)"
	}
	return ""
}

// normalizeHost turns a Host header, an Origin's host or an ALLOWED_HOSTS
// entry into the form they are compared in: no port, no brackets, lower
// case, no trailing dot.
func normalizeHost(h string) string {
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

func cmpOr(a, b []string) []string {
	if len(a) > 0 {
		return a
	}
	return b
}
