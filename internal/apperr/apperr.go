// Package apperr is Toolgate's one error vocabulary. Domain packages return
// *Error values; internal/http maps their Kind to an HTTP status in one table.
package apperr

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Kind classifies an error for transport mapping.
type Kind string

// The kinds of error Toolgate reports.
const (
	Invalid     Kind = "invalid"     // the request is wrong; fix it and retry
	NotFound    Kind = "not_found"   // the named thing does not exist
	Conflict    Kind = "conflict"    // the request clashes with the current state
	TooLarge    Kind = "too_large"   // the request body is over the limit
	Upstream    Kind = "upstream"    // a remote party (an MCP server) failed
	Unavailable Kind = "unavailable" // a dependency of ours (the database) is down
	Internal    Kind = "internal"    // our bug; details are logged, never sent

	Unauthenticated Kind = "unauthenticated" // no valid session or token: sign in
	Forbidden       Kind = "forbidden"       // signed in, but not allowed (role, cross-site request)
	TooMany         Kind = "too_many"        // rate limited: try again after RetryAfter
	Unsupported     Kind = "unsupported"     // the body's media type is not JSON
	Misdirected     Kind = "misdirected"     // the Host header is not one this server answers to
	Unprocessable   Kind = "unprocessable"   // well-formed, but it contradicts an earlier request (a reused idempotency key)
)

// Error is a domain error with a machine code and a sentence a person can act on.
type Error struct {
	Kind    Kind
	Code    string            // machine code, e.g. "invalid_policy"
	Message string            // what went wrong and what to do about it
	Fields  map[string]string // field name -> problem, for invalid input
	Details any               // the current state of what the request clashed with, sent as is
	Err     error             // the cause, logged but never sent
	// RetryAfter, for TooMany and Unavailable, is how many seconds to wait;
	// sent as the Retry-After header.
	RetryAfter int
}

// DatabaseRetryAfter is the Retry-After, in seconds, of database_unavailable:
// long enough for the pool to reconnect or Postgres to finish restarting.
const DatabaseRetryAfter = 3

// DatabaseUnavailable is the error for a database that cannot be reached or
// dropped the connection (refused, timed out, terminated, shutting down):
// 503 database_unavailable with Retry-After. cause is logged, never sent.
func DatabaseUnavailable(cause error) *Error {
	e := Wrap(cause, Unavailable, "database_unavailable", "the database is not reachable right now; try again in a few seconds")
	e.RetryAfter = DatabaseRetryAfter
	return e
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return e.Code + ": " + e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// New returns an error of kind k.
func New(k Kind, code, format string, args ...any) *Error {
	return &Error{Kind: k, Code: code, Message: fmt.Sprintf(format, args...)}
}

// Invalidf returns an Invalid error about one field.
func Invalidf(code, field, format string, args ...any) *Error {
	msg := fmt.Sprintf(format, args...)
	return &Error{Kind: Invalid, Code: code, Message: msg, Fields: map[string]string{field: msg}}
}

// NotFoundf returns a NotFound error.
func NotFoundf(code, format string, args ...any) *Error {
	return New(NotFound, code, format, args...)
}

// Wrap returns an error of kind k that keeps err as its cause.
func Wrap(err error, k Kind, code, format string, args ...any) *Error {
	e := New(k, code, format, args...)
	e.Err = err
	return e
}

// As returns the *Error in err's chain, if any.
func As(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// KindOf reports the Kind of err; errors that are not *Error are Internal.
func KindOf(err error) Kind {
	if e, ok := As(err); ok {
		return e.Kind
	}
	return Internal
}

// Fields collects per-field problems so that all of them are reported at once.
type Fields map[string]string

// Add records a problem with field.
func (f Fields) Add(field, format string, args ...any) {
	if _, dup := f[field]; !dup {
		f[field] = fmt.Sprintf(format, args...)
	}
}

// Join returns the problems as one sentence, ordered by field.
func (f Fields) Join() string {
	keys := make([]string, 0, len(f))
	for k := range f {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	msgs := make([]string, len(keys))
	for i, k := range keys {
		msgs[i] = f[k]
	}
	return strings.Join(msgs, "; ")
}

// Err returns nil when there are no problems, else one Invalid error carrying
// all of them; code and message describe the first kind of problem found.
func (f Fields) Err(code, message string) error {
	if len(f) == 0 {
		return nil
	}
	return &Error{Kind: Invalid, Code: code, Message: message, Fields: f}
}
