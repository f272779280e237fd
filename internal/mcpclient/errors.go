package mcpclient

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/netguard"
	"github.com/toolgate/toolgate/internal/policy"
)

// errTimedOut is the cause of the discovery context when Timeout passes, to
// tell our own timeout apart from the caller's cancellation.
var errTimedOut = errors.New("mcp discovery timed out")

// listingError is a failure found in well-formed answers (too many pages, a
// duplicate tool); its text is already plain words.
type listingError struct{ msg string }

func (e *listingError) Error() string { return e.msg }

func listingErrorf(format string, args ...any) error {
	return &listingError{msg: fmt.Sprintf(format, args...)}
}

// discoveryFailed wraps err as the Upstream error callers get, with a message
// that names the URL and the cause in words a person can act on.
// The URL is shown with its query values masked (policy.MaskURL), in the
// message and in the wrapped cause, which reaches the logs.
func discoveryFailed(ctx context.Context, serverURL string, timeout time.Duration, t *sessionTransport, err error) *apperr.Error {
	masked := policy.MaskURL(serverURL)
	if masked != serverURL {
		err = &maskedError{err: err, replacer: queryReplacer(serverURL)}
	}
	return apperr.Wrap(err, apperr.Upstream, "discovery_failed",
		"could not list tools at %s: %s", masked, cause(ctx, timeout, t.lastObserved(), err))
}

// maskedError hides the query values of a URL in an error's text.
type maskedError struct {
	err      error
	replacer *strings.Replacer
}

func (e *maskedError) Error() string { return e.replacer.Replace(e.err.Error()) }
func (e *maskedError) Unwrap() error { return e.err }

// queryReplacer replaces the raw query of serverURL, as written and as
// re-encoded, with its masked form.
func queryReplacer(serverURL string) *strings.Replacer {
	u, err := url.Parse(serverURL)
	if err != nil {
		return strings.NewReplacer(serverURL, policy.MaskURL(serverURL))
	}
	mu, _ := url.Parse(policy.MaskURL(serverURL))
	pairs := []string{u.RawQuery, mu.RawQuery}
	if q := u.Query().Encode(); q != u.RawQuery {
		pairs = append(pairs, q, mu.RawQuery)
	}
	return strings.NewReplacer(pairs...)
}

// cause explains why discovery failed. The SDK's errors are strings built for
// programmers and lose HTTP status codes, so what the transport observed on
// the wire is consulted first.
func cause(ctx context.Context, timeout time.Duration, last observed, err error) string {
	if ctx.Err() != nil {
		if errors.Is(context.Cause(ctx), errTimedOut) {
			return fmt.Sprintf("timed out after %s (is the server overloaded, or is this not an MCP endpoint?)", timeout)
		}
		return "the discovery was cancelled before it finished"
	}
	var listing *listingError
	if errors.As(err, &listing) {
		return listing.msg
	}
	if last.err != nil {
		return networkCause(last.err)
	}
	var rpcMsg string
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) {
		rpcMsg = fmt.Sprintf("the MCP error %d %q", rpcErr.Code, rpcErr.Message)
	}
	if msg := statusCause(last, rpcMsg); msg != "" {
		return msg
	}
	if rpcMsg != "" {
		return "the server returned " + rpcMsg
	}
	// The SDK's wording of decoding failures helps programmers, not the
	// person configuring a server; it stays in the error's cause.
	return "the server's answers are not valid MCP (is this the server's MCP endpoint?)"
}

// networkCause explains a request that got no HTTP response.
func networkCause(err error) string {
	var dnsErr *net.DNSError
	var redirectErr *netguard.RedirectError
	var certErr *tls.CertificateVerificationError
	var recordErr tls.RecordHeaderError
	if refused, ok := netguard.IsRefused(err); ok {
		return "Toolgate's URL policy does not allow this address: " + refused.Error()
	}
	switch {
	case errors.As(err, &redirectErr):
		return redirectErr.Error()
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused (is the MCP server running?)"
	case errors.As(err, &dnsErr):
		return fmt.Sprintf("the host name %q could not be resolved (check the URL)", dnsErr.Name)
	case errors.As(err, &certErr):
		return fmt.Sprintf("the server's TLS certificate was not accepted (%v)", certErr.Err)
	case errors.As(err, &recordErr):
		return "the server does not speak TLS (should the URL start with http:// instead of https://?)"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the server closed the connection without answering"
	}
	return fmt.Sprintf("the request failed (%v)", err)
}

// statusCause explains an HTTP answer that is not MCP, or "" if it was;
// rpcMsg describes a JSON-RPC error that came with it, if any.
func statusCause(last observed, rpcMsg string) string {
	code := last.status
	answered := fmt.Sprintf("the server answered %d %s", code, http.StatusText(code))
	switch {
	case code == 0:
		return ""
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return answered + " (check the server's headers, e.g. its Authorization token)"
	case code == http.StatusNotFound || code == http.StatusMethodNotAllowed:
		return answered + " (check the URL: is it the server's MCP endpoint, often ending in /mcp?)"
	case code >= 500:
		return answered + " (the server or a proxy in front of it failed; try again later)"
	case (code < 200 || code >= 300) && rpcMsg != "":
		return answered + " with " + rpcMsg
	case code < 200 || code >= 300:
		return answered
	}
	mediaType, _, _ := mime.ParseMediaType(last.contentType)
	switch mediaType {
	case "", "application/json", "text/event-stream":
		return ""
	}
	return fmt.Sprintf("the server answered with %s instead of MCP (is this the server's MCP endpoint?)", mediaType)
}
