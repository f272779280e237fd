// Package mcpclient talks to MCP servers as a client: it discovers the tools
// a server offers so that Toolgate can put policies on them.
package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/netguard"
	"github.com/toolgate/toolgate/internal/policy"
)

// Limits on one listing, so a broken or hostile server cannot page forever.
const (
	maxPages = 100
	maxTools = 10000
)

// Discoverer lists an MCP server's tools with tools/list over streamable HTTP.
type Discoverer struct {
	Timeout    time.Duration // whole discovery (connect + initialize + all tools/list pages + close); default 10s when zero
	HTTPClient *http.Client  // optional base client; nil -> a fresh one
	// Guard, when set, is the URL policy every connection is dialled
	// through (HTTPClient's Transport must then be nil). Whatever the
	// Guard, redirects to another origin are never followed.
	Guard         *netguard.Guard
	Name, Version string // client implementation info sent in initialize; defaults "toolgate", "dev"
	// Limits bound the listing (zero fields: the defaults); over one the
	// discovery fails and says which (policy.ToolLimits).
	Limits policy.ToolLimits
}

// ListTools connects to the MCP endpoint at serverURL, sending headers on
// every request, and returns all the tools it lists. Errors are
// *apperr.Error of kind Upstream with code "discovery_failed".
func (d *Discoverer) ListTools(ctx context.Context, serverURL string, headers map[string]string) ([]policy.DiscoveredTool, error) {
	timeout := d.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, errTimedOut)
	defer cancel()
	// Reading past the list's byte limit ends the whole discovery at once:
	// the SDK would otherwise wait for an answer that never completes.
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	limits := d.Limits.OrDefaults()

	// Copy the caller's client so that wrapping its transport leaves it alone.
	httpClient := &http.Client{}
	if d.HTTPClient != nil {
		c := *d.HTTPClient
		httpClient = &c
	}
	base := httpClient.Transport
	if d.Guard != nil {
		if base != nil {
			return nil, errors.New("mcpclient: a Discoverer with a Guard dials through it; leave HTTPClient.Transport nil")
		}
		base = d.Guard.Transport()
	}
	rt := newSessionTransport(ctx, base, serverURL, headers, int64(limits.ListBytes), func() { stop(errTooLarge) })
	httpClient.Transport = rt
	callerCheck := httpClient.CheckRedirect
	httpClient.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		err := netguard.CheckRedirect(req, via)
		if err == nil && callerCheck != nil {
			err = callerCheck(req, via)
		}
		if err != nil {
			rt.observe(nil, err) // the SDK reports it as its own words
		}
		return err
	}

	transport := &mcp.StreamableClientTransport{
		Endpoint:   serverURL,
		HTTPClient: httpClient,
		// Discovery is one short exchange: no server-initiated stream, and
		// no reconnect backoff that would hide a dead server for seconds.
		DisableStandaloneSSE: true,
		MaxRetries:           -1,
	}
	client := mcp.NewClient(&mcp.Implementation{Name: orDefault(d.Name, "toolgate"), Version: orDefault(d.Version, "dev")}, nil)
	session, err := client.Connect(ctx, transport, nil)
	if err != nil {
		return nil, d.failed(ctx, serverURL, timeout, rt, err)
	}
	tools, err := listAll(ctx, session, limits)
	// A failed close (the server's session DELETE) does not make a listing
	// we already have any less true, so its error is dropped.
	_ = session.Close()
	if err != nil {
		return nil, d.failed(ctx, serverURL, timeout, rt, err)
	}
	return tools, nil
}

func (d *Discoverer) failed(ctx context.Context, serverURL string, timeout time.Duration, rt *sessionTransport, err error) error {
	if errors.Is(context.Cause(ctx), errTooLarge) {
		err = listingErrorf("the server's answers to the tool listing are larger than the limit of %s (MCP_TOOL_LIST_MAX_BYTES); "+
			"Toolgate stopped reading and stored nothing (the server must offer fewer or smaller tools)", policy.FormatBytes(d.Limits.OrDefaults().ListBytes))
		ctx = context.WithoutCancel(ctx)
	}
	return discoveryFailed(ctx, serverURL, timeout, rt, err)
}

// listAll follows nextCursor through every page of tools/list.
func listAll(ctx context.Context, session *mcp.ClientSession, limits policy.ToolLimits) ([]policy.DiscoveredTool, error) {
	tools := []policy.DiscoveredTool{}
	seen := make(map[string]bool)
	params := &mcp.ListToolsParams{}
	for range maxPages {
		res, err := session.ListTools(ctx, params)
		if err != nil {
			return nil, err
		}
		for _, t := range res.Tools {
			tool, err := toDiscovered(t)
			if err != nil {
				return nil, err
			}
			if msg := limits.CheckTool(tool); msg != "" {
				return nil, listingErrorf("%s; nothing was stored", msg)
			}
			// Tools are keyed by name downstream: a duplicate would make
			// one definition silently win over the other.
			if seen[tool.Name] {
				return nil, listingErrorf("the server listed the tool %q twice", tool.Name)
			}
			seen[tool.Name] = true
			tools = append(tools, tool)
		}
		if len(tools) > maxTools {
			return nil, listingErrorf("the server listed more than %d tools", maxTools)
		}
		if res.NextCursor == "" {
			return tools, nil
		}
		params = &mcp.ListToolsParams{Cursor: res.NextCursor}
	}
	return nil, listingErrorf("the server kept returning more pages of tools after %d pages", maxPages)
}

// toDiscovered maps the SDK's view of a tool to Toolgate's.
func toDiscovered(t *mcp.Tool) (policy.DiscoveredTool, error) {
	if t.Name == "" {
		return policy.DiscoveredTool{}, listingErrorf("the server listed a tool without a name")
	}
	schema := json.RawMessage(`{"type":"object"}`)
	if t.InputSchema != nil {
		b, err := json.Marshal(t.InputSchema)
		if err != nil {
			return policy.DiscoveredTool{}, listingErrorf("the input schema of the tool %q is not valid JSON (%v)", t.Name, err)
		}
		schema = b
	}
	tool := policy.DiscoveredTool{
		Name:        t.Name,
		Title:       t.Title,
		Description: t.Description,
		InputSchema: schema,
		Annotations: annotations(t.Annotations),
	}
	if tool.Title == "" {
		tool.Title = tool.Annotations.Title
	}
	return tool, nil
}

// annotations converts the SDK's hints. The SDK decodes readOnlyHint and
// idempotentHint into bare bools, so "absent" arrives as false; that is also
// their MCP default, so reporting false loses nothing a decision needs.
// A missing annotations object stays all-nil: the server said nothing.
func annotations(a *mcp.ToolAnnotations) policy.Annotations {
	if a == nil {
		return policy.Annotations{}
	}
	return policy.Annotations{
		Title:           a.Title,
		ReadOnlyHint:    boolPtr(a.ReadOnlyHint),
		DestructiveHint: clonePtr(a.DestructiveHint),
		IdempotentHint:  boolPtr(a.IdempotentHint),
		OpenWorldHint:   clonePtr(a.OpenWorldHint),
	}
}

func boolPtr(b bool) *bool { return &b }

func clonePtr(b *bool) *bool {
	if b == nil {
		return nil
	}
	return boolPtr(*b)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
