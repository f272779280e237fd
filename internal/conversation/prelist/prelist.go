package prelist

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/toolgate/toolgate/internal/policy"
)

// Direct mode (MCP_ROUTE=direct): the model's provider calls the MCP
// servers itself, so Toolgate cannot check a call where it runs. Instead,
// before each upstream request, Toolgate lists (itself, in parallel) every
// server with a tool that would run unasked in that request, records what
// it lists (policy.Service.RecordDefinitions) and sends the request with a
// tool whose definition changed as asking. A server that cannot be listed
// within the time limit, and a tool its listing leaves out, ask too: what
// cannot be checked does not run unasked. Listings are reused for
// MCP_PRELIST_MAX_AGE, so a busy conversation does not list on every
// request. What remains is a window: a server that changes a tool after
// Toolgate listed it (within MaxAge, plus the time until the provider
// lists it) is not seen (docs/mcp-servers.md, "Direct mode").

// Lister lists an MCP server's tools: mcpclient.Discoverer, with the URL
// guard.
type Lister interface {
	ListTools(ctx context.Context, url string, headers map[string]string) ([]policy.DiscoveredTool, error)
}

// DefinitionRecorder stores the definitions a listing saw and names the
// tools whose stored definition changed: policy.Service.RecordDefinitions.
type DefinitionRecorder interface {
	RecordDefinitions(ctx context.Context, label string, tools []policy.DiscoveredTool) ([]string, error)
}

// Options configure listing before each request (direct mode).
type Options struct {
	Lister   Lister
	Recorder DefinitionRecorder
	// MaxAge is MCP_PRELIST_MAX_AGE: how long a server's listing (or its
	// failure) is reused; 0 lists before every request.
	MaxAge time.Duration
	// TimeLimit is MCP_PRELIST_TIME_LIMIT: how long a request waits for
	// one server's listing; past it the server's unasked tools ask.
	TimeLimit time.Duration
	// Concurrency bounds the listings one request runs at once (default 8).
	Concurrency int
}

// DefaultTimeLimit applies when Options.TimeLimit is zero.
const DefaultTimeLimit = 2 * time.Second

// New turns listing before each request on (direct mode) with p; a nil
// p.Lister returns nil: off (gateway mode: every call is checked where it
// runs).
func New(p Options) *Listings {
	if p.Lister == nil || p.Recorder == nil {
		return nil
	}
	if p.TimeLimit <= 0 {
		p.TimeLimit = DefaultTimeLimit
	}
	if p.Concurrency <= 0 {
		p.Concurrency = 8
	}
	return &Listings{Options: p, now: time.Now, cache: map[string]*listing{}}
}

// Listings lists servers for requests and keeps each listing for MaxAge.
type Listings struct {
	Options
	now   func() time.Time
	mu    sync.Mutex
	cache map[string]*listing // label + "\x00" + url
}

// listing is one server's listing, shared by the requests that start
// while it runs or within MaxAge after it ended.
type listing struct {
	done    chan struct{} // closed when the fields below are set
	at      time.Time
	listed  map[string]bool // the tools it listed
	changed map[string]bool // the tools whose stored definition it changed
	err     error           // listing or recording failed: nothing is known
}

var errPrelistSlow = errors.New("did not list its tools within MCP_PRELIST_TIME_LIMIT")

// get returns srv's listing: a fresh one from the cache, the one under
// way, or a new one. It waits at most TimeLimit; a listing not done by
// then counts as failed for this request.
func (p *Listings) get(ctx context.Context, srv policy.Server) *listing {
	key := srv.Label + "\x00" + srv.URL
	p.mu.Lock()
	l := p.cache[key]
	if l == nil || !l.usable(p.now(), p.MaxAge) {
		l = &listing{done: make(chan struct{})}
		p.cache[key] = l
		go p.fill(context.WithoutCancel(ctx), l, srv)
	}
	p.mu.Unlock()
	timer := time.NewTimer(p.TimeLimit)
	defer timer.Stop()
	select {
	case <-l.done:
		return l
	case <-timer.C:
		return &listing{err: errPrelistSlow}
	case <-ctx.Done():
		return &listing{err: ctx.Err()}
	}
}

// usable: under way, or ended within maxAge of now.
func (l *listing) usable(now time.Time, maxAge time.Duration) bool {
	select {
	case <-l.done:
		return now.Sub(l.at) < maxAge
	default:
		return true
	}
}

// fill lists srv and records what it lists, within TimeLimit for the
// listing (the recording gets its own short limit).
func (p *Listings) fill(ctx context.Context, l *listing, srv policy.Server) {
	defer close(l.done)
	lctx, cancel := context.WithTimeoutCause(ctx, p.TimeLimit, errPrelistSlow)
	tools, err := p.Lister.ListTools(lctx, srv.URL, srv.Headers)
	cancel()
	var changed []string
	if err == nil {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		changed, err = p.Recorder.RecordDefinitions(rctx, srv.Label, tools)
		cancel()
	}
	l.at = p.now()
	if err != nil {
		l.err = err
		return
	}
	l.listed, l.changed = map[string]bool{}, map[string]bool{}
	for _, t := range tools {
		l.listed[t.Name] = true
	}
	for _, n := range changed {
		l.changed[n] = true
	}
}

// unasked names the tools of g that would run without a card in a request
// built from g: its never group (policies and grants) and the tools with
// argument rules whose own policy is never (when no rule holds, Toolgate
// approves them by that policy).
func unasked(g policy.ServerTools) []string {
	var names []string
	for _, t := range g.Never {
		names = append(names, t.Name)
	}
	for name, rt := range g.Ruled {
		if rt.Policy == policy.Never {
			names = append(names, name)
		}
	}
	return names
}

// listFor lists, in parallel and at most Concurrency at once, the servers
// of groups with tools that would run unasked. The result maps a label to
// its listing.
func (p *Listings) listFor(ctx context.Context, groups []policy.ServerTools) map[string]*listing {
	out := map[string]*listing{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, p.Concurrency)
	for _, g := range groups {
		if len(unasked(g)) == 0 {
			continue
		}
		wg.Add(1)
		go func(srv policy.Server) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			l := p.get(ctx, srv)
			mu.Lock()
			out[srv.Label] = l
			mu.Unlock()
		}(g.Server)
	}
	wg.Wait()
	return out
}
