package mcpclient

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/netguard"
	"github.com/toolgate/toolgate/internal/policy"
)

// Defaults of a Caller's zero fields.
const (
	DefaultCallTimeout    = 60 * time.Second
	DefaultCallMaxBytes   = 8 << 20
	DefaultListTimeout    = 10 * time.Second
	DefaultSessionIdleFor = 5 * time.Minute
)

// callerProtocolVersion is the MCP version the Caller asks for: the last
// one without client-side caching of tools/list.
const callerProtocolVersion = "2025-11-25"

// Errors that end one operation of the Caller (the cause of its context).
var (
	errCallTimedOut = errors.New("mcp call timed out")
	errCallTooLarge = errors.New("mcp call: the server's answer exceeds the byte limit")
)

// Caller is the MCP face's way to the real servers (gateway.Upstream): it
// lists tools and calls one, sending the server's stored headers, dialling
// through the URL policy, following no redirect to another host, and
// bounding every operation in time and bytes. It keeps one MCP session per
// server (URL and headers) open between calls, which saves the initialize
// round trip of every call, and opens a new one when a session fails.
//
// Its errors and failure sentences never name the server's URL: they reach
// the model.
type Caller struct {
	Guard *netguard.Guard // URL policy every connection is dialled through; nil: HTTPClient's transport (tests)
	// HTTPClient is an optional base client (its Transport must be nil
	// with a Guard).
	HTTPClient *http.Client
	// CallTimeout bounds one tools/call, connecting included
	// (MCP_CALL_TIMEOUT; zero: DefaultCallTimeout).
	CallTimeout time.Duration
	// CallMaxBytes bounds what Toolgate reads of one call's answer
	// (MCP_CALL_MAX_BYTES; zero: DefaultCallMaxBytes).
	CallMaxBytes int64
	// ListTimeout bounds one listing (zero: DefaultListTimeout); Limits
	// bound what it holds, as for discovery.
	ListTimeout time.Duration
	Limits      policy.ToolLimits
	// IdleFor: a session unused this long is closed (zero:
	// DefaultSessionIdleFor).
	IdleFor       time.Duration
	Name, Version string // client implementation info sent in initialize; defaults "toolgate", "dev"

	mu       sync.Mutex
	sessions map[string]*upSession
}

// upSession is one open (or opening) MCP session with a server.
type upSession struct {
	ready   chan struct{} // closed once connecting ended; then cs or err is set
	cs      *mcp.ClientSession
	err     error
	cancel  context.CancelFunc // ends the session's transport context
	usedAt  time.Time          // guarded by Caller.mu
	dropped bool               // guarded by Caller.mu
}

// ListTools lists the server's tools, all pages. Its errors are
// *apperr.Error of kind Upstream with code "upstream_failed".
func (c *Caller) ListTools(ctx context.Context, serverURL string, headers map[string]string) ([]policy.DiscoveredTool, error) {
	timeout := cmpDur(c.ListTimeout, DefaultListTimeout)
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, errCallTimedOut)
	defer cancel()
	limits := c.Limits.OrDefaults()
	var err error
	for attempt := 0; attempt < 2; attempt++ {
		var s *upSession
		var fresh bool
		opCtx, stop := context.WithCancelCause(ctx)
		p := &probe{budget: newBudget(int64(limits.ListBytes), func() { stop(errCallTooLarge) })}
		opCtx = withProbe(opCtx, p)
		s, fresh, err = c.session(opCtx, serverURL, headers)
		if err == nil {
			var tools []policy.DiscoveredTool
			tools, err = listAll(opCtx, s.cs, limits)
			if err == nil {
				stop(nil)
				return tools, nil
			}
			c.drop(serverURL, headers, s)
		}
		err = c.explain(opCtx, serverURL, timeout, p, err)
		stop(nil)
		// A listing changes nothing: a failure on a session kept from
		// before (the server may have restarted) is worth one retry.
		if fresh || ctx.Err() != nil {
			break
		}
	}
	return nil, err
}

// CallTool calls one tool with arguments (a JSON object) and returns what
// came back. Result.NotRun is set only when the tools/call request was
// provably never written to a connection (the server refused the
// connection, the URL policy refused the address, the session could not be
// opened): then nothing reached the server.
func (c *Caller) CallTool(ctx context.Context, serverURL string, headers map[string]string, tool string, arguments json.RawMessage) gateway.Result {
	timeout := cmpDur(c.CallTimeout, DefaultCallTimeout)
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, errCallTimedOut)
	defer cancel()
	maxBytes := c.CallMaxBytes
	if maxBytes <= 0 {
		maxBytes = DefaultCallMaxBytes
	}
	var res gateway.Result
	for attempt := 0; attempt < 2; attempt++ {
		opCtx, stop := context.WithCancelCause(ctx)
		p := &probe{budget: newBudget(maxBytes, func() { stop(errCallTooLarge) })}
		opCtx = withProbe(opCtx, p)
		s, fresh, err := c.session(opCtx, serverURL, headers)
		if err != nil {
			// Opening the session failed, so the tools/call was never sent.
			res = gateway.Result{IsError: true, NotRun: true, Failure: c.explain(opCtx, serverURL, timeout, p, err).Message}
			stop(nil)
			return res
		}
		callProbe := &probe{budget: p.budget}
		callCtx := withProbe(opCtx, callProbe)
		out, err := s.cs.CallTool(callCtx, &mcp.CallToolParams{Name: tool, Arguments: arguments})
		if err == nil {
			stop(nil)
			return resultOf(out)
		}
		var rpcErr *jsonrpc.Error
		answered := errors.As(err, &rpcErr) && callProbe.lastObserved().status/100 == 2
		if !answered {
			c.drop(serverURL, headers, s)
		}
		notSent := !callProbe.wrote.Load()
		// The session ended under us: the request was either never written,
		// or the server said (404) it no longer knows the session, which per
		// MCP means it did not handle the request. Once, on a new session.
		gone := callProbe.lastObserved().status == http.StatusNotFound && !fresh
		res = gateway.Result{IsError: true, NotRun: notSent,
			Failure: c.explain(opCtx, serverURL, timeout, callProbe, err).Message}
		stop(nil)
		if fresh || ctx.Err() != nil || !(notSent || gone) {
			break
		}
	}
	return res
}

// resultOf is a server's answer as the face returns it.
func resultOf(out *mcp.CallToolResult) gateway.Result {
	raw, err := json.Marshal(out)
	if err != nil {
		return gateway.Result{IsError: true, Failure: fmt.Sprintf("the server's result could not be encoded (%v)", err)}
	}
	return gateway.Result{JSON: raw, IsError: out.IsError}
}

// explain turns an operation's error into a sentence (what went wrong, for
// a caller to put in context) without the server's URL.
func (c *Caller) explain(ctx context.Context, serverURL string, timeout time.Duration, p *probe, err error) *apperr.Error {
	// The cause reaches the logs: the URL's query values (often a key) are
	// masked there too, as in discovery.
	if policy.MaskURL(serverURL) != serverURL {
		err = &maskedError{err: err, replacer: queryReplacer(serverURL)}
	}
	var msg string
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errCallTooLarge):
		msg = "the server's answer is larger than Toolgate's limit (MCP_CALL_MAX_BYTES for a call, MCP_TOOL_LIST_MAX_BYTES for a listing); Toolgate stopped reading it"
	case errors.Is(cause, errCallTimedOut):
		msg = fmt.Sprintf("the server did not answer within %s", timeout)
	case ctx.Err() != nil:
		msg = "the request was cancelled before the server answered"
	default:
		msg = cause0(p.lastObserved(), err)
	}
	return apperr.Wrap(err, apperr.Upstream, "upstream_failed", "%s", msg)
}

// cause0 is cause without a context: the context cases are explain's.
func cause0(last observed, err error) string {
	return cause(context.Background(), 0, last, err)
}

// session returns the open session with the server, opening one if needed;
// fresh says it was opened for this caller.
func (c *Caller) session(ctx context.Context, serverURL string, headers map[string]string) (*upSession, bool, error) {
	key := sessionKey(serverURL, headers)
	c.mu.Lock()
	if c.sessions == nil {
		c.sessions = make(map[string]*upSession)
	}
	c.sweepLocked()
	s, ok := c.sessions[key]
	if ok {
		s.usedAt = time.Now()
		c.mu.Unlock()
		select {
		case <-s.ready:
		case <-ctx.Done():
			return nil, false, context.Cause(ctx)
		}
		if s.err != nil {
			return nil, false, s.err
		}
		return s, false, nil
	}
	s = &upSession{ready: make(chan struct{}), usedAt: time.Now()}
	c.sessions[key] = s
	c.mu.Unlock()

	s.cs, s.cancel, s.err = c.connect(ctx, serverURL, headers)
	if s.err != nil {
		c.mu.Lock()
		if c.sessions[key] == s {
			delete(c.sessions, key)
		}
		c.mu.Unlock()
	}
	close(s.ready)
	return s, true, s.err
}

func (c *Caller) connect(ctx context.Context, serverURL string, headers map[string]string) (*mcp.ClientSession, context.CancelFunc, error) {
	httpClient := &http.Client{}
	if c.HTTPClient != nil {
		hc := *c.HTTPClient
		httpClient = &hc
	}
	base := httpClient.Transport
	if c.Guard != nil {
		if base != nil {
			return nil, nil, errors.New("mcpclient: a Caller with a Guard dials through it; leave HTTPClient.Transport nil")
		}
		base = c.Guard.Transport()
	}
	// The session outlives this call; every request of a call is bounded
	// by the call's own context, this one only ends the session.
	sessCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	rt := newSessionTransport(sessCtx, base, serverURL, headers, DefaultCallMaxBytes, func() {})
	httpClient.Transport = rt
	httpClient.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		err := netguard.CheckRedirect(req, via)
		if err != nil {
			probeFrom(req.Context()).observe(nil, err)
		}
		return err
	}
	transport := &mcp.StreamableClientTransport{
		Endpoint:             serverURL,
		HTTPClient:           httpClient,
		DisableStandaloneSSE: true,
		MaxRetries:           -1,
	}
	client := mcp.NewClient(&mcp.Implementation{Name: orDefault(c.Name, "toolgate"), Version: orDefault(c.Version, "dev")}, nil)
	// The SDK's client keeps list results a server marks cacheable from
	// protocol 2026-07-28 on; the face must see what the server lists now.
	cs, err := client.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: callerProtocolVersion})
	if err != nil {
		cancel()
		return nil, nil, err
	}
	return cs, cancel, nil
}

// drop closes s if it is still the session kept for the server.
func (c *Caller) drop(serverURL string, headers map[string]string, s *upSession) {
	key := sessionKey(serverURL, headers)
	c.mu.Lock()
	if c.sessions[key] == s {
		delete(c.sessions, key)
	}
	first := !s.dropped
	s.dropped = true
	c.mu.Unlock()
	if first {
		go s.close()
	}
}

func (s *upSession) close() {
	if s.cs != nil {
		_ = s.cs.Close()
	}
	if s.cancel != nil {
		s.cancel()
	}
}

// sweepLocked closes sessions unused for IdleFor.
func (c *Caller) sweepLocked() {
	idle := cmpDur(c.IdleFor, DefaultSessionIdleFor)
	for k, s := range c.sessions {
		if time.Since(s.usedAt) > idle {
			select {
			case <-s.ready:
			default:
				continue // still opening
			}
			delete(c.sessions, k)
			if !s.dropped {
				s.dropped = true
				go s.close()
			}
		}
	}
}

// Close closes every open session.
func (c *Caller) Close() {
	c.mu.Lock()
	var open []*upSession
	for _, s := range c.sessions {
		if !s.dropped {
			s.dropped = true
			open = append(open, s)
		}
	}
	c.sessions = nil
	c.mu.Unlock()
	for _, s := range open {
		<-s.ready
		s.close()
	}
}

// sessionKey names a server by its URL and headers: a change of either
// (an admin edited the server) opens a new session.
func sessionKey(serverURL string, headers map[string]string) string {
	h := sha256.New()
	h.Write([]byte(serverURL))
	keys := make([]string, 0, len(headers))
	for k := range headers {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(h, "\x00%s\x00%s", k, headers[k])
	}
	return hex.EncodeToString(h.Sum(nil))
}

func cmpDur(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}
