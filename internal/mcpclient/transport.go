package mcpclient

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"sync"
	"sync/atomic"
)

// sessionTransport is the RoundTripper of one discovery session. It adds the
// caller's headers, bounds every request by the discovery's context, and
// remembers how the server last answered so a failure can be explained.
type sessionTransport struct {
	base    http.RoundTripper
	origin  string // scheme://host of the server URL; "" if it did not parse
	headers map[string]string
	// The SDK sends the closing DELETE on a context detached from ours, so
	// without this bound closing could outlast the discovery's Timeout.
	ctx context.Context

	// budget is how many more bytes the server's answers may take, all
	// responses of the session together (MCP_TOOL_LIST_MAX_BYTES); past it
	// reading stops and its over ends the discovery. A request whose
	// context carries a probe (a call of the Caller) is bounded by the
	// probe's budget instead.
	budget *budget

	mu   sync.Mutex
	last observed
}

// observed is what the last POST to the server produced.
type observed struct {
	status      int    // 0 if no response arrived
	contentType string // of a response
	err         error  // the transport error, if the request failed
}

func newSessionTransport(ctx context.Context, base http.RoundTripper, serverURL string, headers map[string]string,
	maxBytes int64, overLimit func()) *sessionTransport {
	if base == nil {
		base = http.DefaultTransport
	}
	t := &sessionTransport{base: base, headers: headers, ctx: ctx, budget: newBudget(maxBytes, overLimit)}
	if u, err := url.Parse(serverURL); err == nil {
		t.origin = u.Scheme + "://" + u.Host
	}
	return t
}

func (t *sessionTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(req.Context())
	stop := context.AfterFunc(t.ctx, cancel)
	release := func() { stop(); cancel() }

	p := probeFrom(req.Context())
	b := t.budget
	if p != nil {
		b = p.budget
		ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteHeaders: func() { p.wrote.Store(true) }})
	}
	r := req.Clone(ctx) // a RoundTripper must not modify the caller's request
	// The headers often carry credentials: send them only to the server's
	// own origin, never to a host it redirects to.
	if t.origin == "" || r.URL.Scheme+"://"+r.URL.Host == t.origin {
		for k, v := range t.headers {
			r.Header.Set(k, v)
		}
	}

	resp, err := t.base.RoundTrip(r)
	if req.Method == http.MethodPost {
		t.observe(resp, err)
		p.observe(resp, err)
	}
	if err != nil {
		release()
		return nil, err
	}
	resp.Body = &releasingBody{ReadCloser: &limitedBody{ReadCloser: resp.Body, b: b}, release: release}
	return resp, nil
}

// errTooLarge is what reading a response past the session's byte budget
// returns, and the cause of the discovery context it ends.
var errTooLarge = errors.New("mcp discovery: the server's answers exceed the tool list byte limit")

// budget is how many bytes answers may still take; over is called once
// they take more.
type budget struct {
	left atomic.Int64
	over func()
}

func newBudget(maxBytes int64, over func()) *budget {
	b := &budget{over: over}
	b.left.Store(maxBytes)
	return b
}

// limitedBody reads a response while its byte budget lasts: a server
// cannot make Toolgate read (or buffer) more than the limit, whether it
// answers with one JSON body or a stream of events.
type limitedBody struct {
	io.ReadCloser
	b *budget
}

func (b *limitedBody) Read(p []byte) (int, error) {
	left := b.b.left.Load()
	if left < 0 {
		return 0, errTooLarge
	}
	if int64(len(p)) > left+1 {
		p = p[:left+1] // one byte more than allowed tells that it is over
	}
	n, err := b.ReadCloser.Read(p)
	if b.b.left.Add(-int64(n)) < 0 {
		b.b.over()
		return 0, errTooLarge
	}
	return n, err
}

// probe follows one operation of the Caller (a call or a listing) through
// the requests it makes on a shared session: whether any request was
// written, how the server last answered, and the operation's own byte
// budget.
type probe struct {
	budget *budget
	wrote  atomic.Bool // some request's headers were written to a connection

	mu   sync.Mutex
	last observed
}

type probeKey struct{}

func withProbe(ctx context.Context, p *probe) context.Context {
	return context.WithValue(ctx, probeKey{}, p)
}

func probeFrom(ctx context.Context) *probe {
	p, _ := ctx.Value(probeKey{}).(*probe)
	return p
}

func (p *probe) observe(resp *http.Response, err error) {
	if p == nil {
		return
	}
	o := observedOf(resp, err)
	p.mu.Lock()
	p.last = o
	p.mu.Unlock()
}

// observedOf is what one round trip answered: its status and content type,
// or its error.
func observedOf(resp *http.Response, err error) observed {
	o := observed{err: err}
	if resp != nil {
		o.status = resp.StatusCode
		o.contentType = resp.Header.Get("Content-Type")
	}
	return o
}

func (p *probe) lastObserved() observed {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last
}

func (t *sessionTransport) observe(resp *http.Response, err error) {
	o := observedOf(resp, err)
	t.mu.Lock()
	t.last = o
	t.mu.Unlock()
}

func (t *sessionTransport) lastObserved() observed {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last
}

// releasingBody frees a request's context once its response body is closed.
type releasingBody struct {
	io.ReadCloser
	once    sync.Once
	release func()
}

func (b *releasingBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.release)
	return err
}
