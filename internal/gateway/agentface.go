package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/policy"
)

// PersonalTokenPrefix begins a person's API token (auth.TokenPrefix): the
// agent face's credential, as tgc_ is the provider's.
const PersonalTokenPrefix = "tg_"

// ToolSeparator joins a server's label and a tool's name in the tool names
// of /mcp, which serves every server at once: weather__get_forecast.
const ToolSeparator = "__"

const (
	// DefaultHoldTimeout (MCP_HOLD_TIMEOUT) bounds how long a held call
	// waits for a person (Agents.Hold applies it).
	DefaultHoldTimeout = 10 * time.Minute
	// DefaultSessionIdle closes an agent's MCP session unused this long.
	DefaultSessionIdle = time.Hour
)

// AgentOptions are the agent face's own settings.
type AgentOptions struct {
	Agents      Agents
	SessionIdle time.Duration // zero: DefaultSessionIdle
}

// holdHeader carries, from the HTTP request to the MCP method handlers,
// the key of that request's context: it ends when the client goes away,
// which withdraws a held call. A client's own value is dropped.
const holdHeader = "X-Toolgate-Request-Key"

// agentFace serves /mcp and /mcp/{server_label} to a person's own MCP
// clients with their API token.
type agentFace struct {
	*face
	agents      Agents
	sessionIdle time.Duration

	mu       sync.Mutex
	handlers map[string]http.Handler // by scope: "" for /mcp, else the label
	requests sync.Map                // holdHeader value -> the HTTP request's context
}

// NewAgentFace returns the MCP face for a person's own MCP clients: /mcp
// (every enabled server, tools named {server_label}__{tool}) and
// /mcp/{server_label}, authorized by the person's API token (Authorization:
// Bearer tg_…) and checked against that person's effective policies,
// rules, hooks and grants by the same Gate as the provider's face. A call
// that needs a person is held (Agents.Hold) until it is decided.
//
// Unlike the provider's face it keeps MCP sessions (Mcp-Session-Id): a
// session is the unit "approve for this session" grants to, its client's
// clientInfo names the receipts, and a held call streams progress and can
// ask the client (elicitation). A session lives on the replica that began
// it: behind several replicas, route by Mcp-Session-Id (docs/operations.md).
func NewAgentFace(opts FaceOptions, a AgentOptions) http.Handler {
	if a.Agents == nil || opts.Gate == nil || opts.Servers == nil || opts.Upstream == nil {
		panic("gateway: NewAgentFace needs Agents, Gate, Servers and Upstream")
	}
	f := &agentFace{face: newFaceCore(opts), agents: a.Agents, handlers: map[string]http.Handler{}, sessionIdle: a.SessionIdle}
	if f.sessionIdle <= 0 {
		f.sessionIdle = DefaultSessionIdle
	}
	return f
}

// IsPersonalToken reports whether an Authorization header carries a
// person's API token (the agent face's), not a capability token.
func IsPersonalToken(authorization string) bool {
	return strings.HasPrefix(BearerToken(authorization), PersonalTokenPrefix)
}

type personKey struct{}

func (f *agentFace) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	scope, ok := strings.CutPrefix(r.URL.Path, "/mcp")
	scope = strings.TrimPrefix(scope, "/")
	if !ok || strings.Contains(scope, "/") {
		writeError(w, http.StatusNotFound, "not_found",
			"there is no MCP server at this path: Toolgate serves every server at /mcp and each at /mcp/{server_label}")
		return
	}
	token := BearerToken(r.Header.Get("Authorization"))
	if token == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="toolgate"`)
		writeError(w, http.StatusUnauthorized, "token_missing",
			"send your Toolgate API token: Authorization: Bearer tg_… (create one under Tokens in the web app)")
		return
	}
	ctx, person, err := f.agents.Person(r.Context(), token)
	if err != nil {
		if apperr.KindOf(err) == apperr.Unauthenticated {
			w.Header().Set("WWW-Authenticate", `Bearer realm="toolgate", error="invalid_token"`)
			writeError(w, http.StatusUnauthorized, "token_invalid",
				"this API token is not valid: it is unknown, was deleted, or its account is disabled; create a new one under Tokens")
			return
		}
		f.unavailable(w, r, "could not check an API token", err)
		return
	}
	if scope != "" && !f.serverUsable(w, r.WithContext(ctx), scope) {
		return
	}
	key := newKey()
	r.Header.Del(holdHeader)
	r.Header.Set(holdHeader, key)
	ctx = context.WithValue(ctx, personKey{}, person)
	f.requests.Store(key, ctx)
	defer f.requests.Delete(key)
	f.handler(scope).ServeHTTP(w, r.WithContext(ctx))
}

// serverUsable answers for /mcp/{label} when the server is not there or
// not enabled.
func (f *agentFace) serverUsable(w http.ResponseWriter, r *http.Request, label string) bool {
	srv, err := f.servers.Server(r.Context(), label)
	switch {
	case apperr.KindOf(err) == apperr.NotFound:
		writeError(w, http.StatusNotFound, "server_not_found", "no MCP server with this label is registered in Toolgate")
		return false
	case err != nil:
		f.unavailable(w, r, "could not look up the server", err)
		return false
	case !srv.Enabled:
		writeError(w, http.StatusForbidden, RefusedServer, "this MCP server is disabled in Toolgate; an admin can enable it again")
		return false
	}
	return true
}

func (f *agentFace) unavailable(w http.ResponseWriter, r *http.Request, what string, err error) {
	f.log.ErrorContext(r.Context(), "mcp agent face: "+what, "error", err)
	writeError(w, http.StatusServiceUnavailable, RefusedUnavailable,
		"Toolgate could not check this request (its database did not answer); nothing ran: try again later")
}

// handler is the MCP handler of one scope, with its sessions. The SDK
// binds each session to the person who began it (TokenInfo.UserID): the
// session id with another person's token is refused.
func (f *agentFace) handler(scope string) http.Handler {
	f.mu.Lock()
	defer f.mu.Unlock()
	if h, ok := f.handlers[scope]; ok {
		return h
	}
	mh := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return f.server(scope) }, &mcp.StreamableHTTPOptions{
		SessionTimeout:             f.sessionIdle,
		DisableLocalhostProtection: true, // authorized by a token in a header no page can send
		MaxRequestBodyBytes:        f.maxBody,
		Logger:                     f.log,
	})
	verify := func(ctx context.Context, _ string, _ *http.Request) (*sdkauth.TokenInfo, error) {
		person, _ := ctx.Value(personKey{}).(string)
		if person == "" {
			return nil, sdkauth.ErrInvalidToken
		}
		return &sdkauth.TokenInfo{UserID: person}, nil
	}
	h := sdkauth.RequireBearerToken(verify, &sdkauth.RequireBearerTokenOptions{AllowMissingExpiration: true})(mh)
	f.handlers[scope] = h
	return h
}

// agentSession is one MCP session's state: the conversation that holds
// its calls, opened at its first tools/list or tools/call.
type agentSession struct {
	scope string
	mu    sync.Mutex
	conv  string
}

// server is the MCP server of one session of scope.
func (f *agentFace) server(scope string) *mcp.Server {
	st := &agentSession{scope: scope}
	title := "Toolgate"
	if scope != "" {
		title += ": " + scope
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "toolgate", Title: title, Version: "1"},
		&mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}}})
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			switch method {
			case "tools/list":
				return f.agentList(ctx, st, req)
			case "tools/call":
				p, _ := req.GetParams().(*mcp.CallToolParamsRaw)
				return completeFor(req, f.agentCall(ctx, st, req, p)), nil
			}
			return next(ctx, method, req)
		}
	})
	return s
}

// requestContext is the context of the HTTP request that carried req: it
// carries the person and ends when the client goes away.
func (f *agentFace) requestContext(req mcp.Request) (context.Context, bool) {
	extra := req.GetExtra()
	if extra == nil || extra.Header == nil {
		return nil, false
	}
	v, ok := f.requests.Load(extra.Header.Get(holdHeader))
	if !ok {
		return nil, false
	}
	return v.(context.Context), true
}

// client is what req's session's client said of itself.
func client(req mcp.Request) Client {
	ss, ok := req.GetSession().(*mcp.ServerSession)
	if !ok || ss.InitializeParams() == nil || ss.InitializeParams().ClientInfo == nil {
		return Client{Name: "unknown MCP client"}
	}
	ci := ss.InitializeParams().ClientInfo
	c := Client{Name: ci.Name, Title: ci.Title, Version: ci.Version}
	if c.Name == "" {
		c.Name = "unknown MCP client"
	}
	return c
}

// conversation is the session's conversation, opened once.
func (f *agentFace) conversation(ctx context.Context, st *agentSession, req mcp.Request) (string, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.conv != "" {
		return st.conv, nil
	}
	ss, ok := req.GetSession().(*mcp.ServerSession)
	if !ok || ss.ID() == "" {
		return "", errors.New("the MCP session has no id")
	}
	conv, err := f.agents.Session(ctx, ss.ID(), client(req))
	if err != nil {
		return "", err
	}
	st.conv = conv
	return conv, nil
}

// servers are the servers of st's scope, enabled.
func (f *agentFace) scopeServers(ctx context.Context, st *agentSession) ([]policy.Server, error) {
	if st.scope != "" {
		srv, err := f.servers.Server(ctx, st.scope)
		if err != nil {
			return nil, err
		}
		if !srv.Enabled {
			return nil, nil
		}
		return []policy.Server{srv}, nil
	}
	all, err := f.agents.Servers(ctx)
	if err != nil {
		return nil, err
	}
	out := all[:0:0]
	for _, s := range all {
		if s.Enabled {
			out = append(out, s)
		}
	}
	return out, nil
}

func newKey() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// newFaceCore is the part both faces share: the Gate, the real servers and
// the cache of their listings.
func newFaceCore(opts FaceOptions) *face {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	maxStale := opts.ListMaxStale
	if maxStale <= 0 {
		maxStale = DefaultListMaxStale
	}
	f := &face{tokens: opts.Tokens, gate: opts.Gate, servers: opts.Servers, upstream: opts.Upstream,
		maxAge: max(opts.DefinitionMaxAge, 0), maxBody: opts.MaxBodyBytes, log: log}
	f.defs = newDefinitions(opts.Upstream, maxStale, log)
	return f
}
