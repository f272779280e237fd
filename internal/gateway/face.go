package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/policy"
)

// Servers finds a registered MCP server by label: its real URL, its stored
// headers and whether it is enabled (registry.Servers has it). A server that
// does not exist is an *apperr.Error of kind NotFound.
type Servers interface {
	Server(ctx context.Context, label string) (policy.Server, error)
}

// Upstream reaches the real servers (mcpclient.Caller).
type Upstream interface {
	// ListTools lists every tool the server offers now. Its error's text
	// must not contain the server's URL or headers.
	ListTools(ctx context.Context, serverURL string, headers map[string]string) ([]policy.DiscoveredTool, error)
	// CallTool calls one tool with canonical arguments and says what came
	// back, or why nothing did (Result.Failure, Result.NotRun).
	CallTool(ctx context.Context, serverURL string, headers map[string]string, tool string, arguments json.RawMessage) Result
}

// Defaults of FaceOptions (and of MCP_DEFINITION_MAX_AGE).
const (
	// DefaultDefinitionMaxAge: a tools/call is checked against the tool's
	// definition as the server listed it at most this long ago.
	DefaultDefinitionMaxAge = 2 * time.Second
	// DefaultListMaxStale: tools/list answers from definitions at most
	// this old while it refreshes them in the background; older ones are
	// listed again before it answers.
	DefaultListMaxStale = 5 * time.Minute
)

// FaceOptions are the MCP face's dependencies.
type FaceOptions struct {
	Tokens   *Tokens  // checks the capability token of every request
	Gate     Gate     // decides on every call and listing
	Servers  Servers  // the real URL and stored headers by label
	Upstream Upstream // forwards to the real server
	// DefinitionMaxAge (MCP_DEFINITION_MAX_AGE) is how old the listing a
	// tools/call is checked against may be; 0 lists the server at every
	// call. Listings within it are shared by concurrent calls.
	DefinitionMaxAge time.Duration
	// ListMaxStale bounds how old the definitions a tools/list answers
	// from may be (zero: DefaultListMaxStale).
	ListMaxStale time.Duration
	// MaxBodyBytes limits one request body (zero: the SDK's default).
	MaxBodyBytes int64
	Logger       *slog.Logger // nil discards
}

// face serves /mcp/{server_label}.
type face struct {
	tokens   *Tokens
	gate     Gate
	servers  Servers
	upstream Upstream
	maxAge   time.Duration
	maxBody  int64
	log      *slog.Logger
	defs     *definitions
	mcp      http.Handler
}

// NewFace returns the MCP face: an http.Handler for /mcp/{server_label}
// (the path must reach it whole). Every request needs a capability token
// for that server (Authorization: Bearer tgc_…); a session cookie is
// ignored. tools/list and tools/call are answered through the Gate from the
// real server; other MCP methods (initialize, ping) are the SDK's.
//
// It speaks streamable HTTP statelessly, answering with JSON: any replica
// answers any request, and GET and DELETE answer 405.
func NewFace(opts FaceOptions) http.Handler {
	if opts.Tokens == nil || opts.Gate == nil || opts.Servers == nil || opts.Upstream == nil {
		panic("gateway: NewFace needs Tokens, Gate, Servers and Upstream")
	}
	f := newFaceCore(opts)
	f.mcp = mcp.NewStreamableHTTPHandler(f.server, &mcp.StreamableHTTPOptions{
		Stateless:    true,
		JSONResponse: true,
		// The SDK refuses loopback connections with another Host against
		// DNS rebinding; the face is reached through proxies under
		// PUBLIC_URL's name, and a page that rebinds a name still has no
		// capability token.
		DisableLocalhostProtection: true,
		MaxRequestBodyBytes:        opts.MaxBodyBytes,
		Logger:                     f.log,
	})
	return f
}

// faceRequest is what the checks of one HTTP request established.
type faceRequest struct {
	claims Claims
	server policy.Server
}

type faceRequestKey struct{}

func (f *face) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	label, ok := strings.CutPrefix(r.URL.Path, "/mcp/")
	if !ok || label == "" || strings.Contains(label, "/") {
		writeError(w, http.StatusNotFound, "not_found",
			"there is no MCP server at this path: Toolgate serves each registered server at /mcp/{server_label}")
		return
	}
	claims, err := f.tokens.Verify(BearerToken(r.Header.Get("Authorization")))
	if err != nil {
		code := "token_invalid"
		switch {
		case errors.Is(err, ErrNoToken):
			code = "token_missing"
		case errors.Is(err, ErrExpired):
			code = "token_expired"
		}
		challenge := `Bearer realm="toolgate"`
		if code != "token_missing" {
			challenge += `, error="invalid_token"`
		}
		w.Header().Set("WWW-Authenticate", challenge)
		writeError(w, http.StatusUnauthorized, code, err.Error())
		return
	}
	if claims.ServerLabel != label {
		writeError(w, http.StatusForbidden, "token_other_server",
			"this capability token is for another MCP server: send each server the token Toolgate put in that server's tool entry")
		return
	}
	ctx := r.Context()
	srv, err := f.servers.Server(ctx, label)
	if err != nil {
		var ae *apperr.Error
		if errors.As(err, &ae) && ae.Kind == apperr.NotFound {
			writeError(w, http.StatusNotFound, "server_not_found", "no MCP server with this label is registered in Toolgate (it may have been deleted)")
			return
		}
		f.log.ErrorContext(ctx, "mcp face: could not look up the server", "server", label, "error", err)
		writeError(w, http.StatusServiceUnavailable, RefusedUnavailable,
			"Toolgate could not check this request (its database did not answer); nothing ran: try again later")
		return
	}
	if !srv.Enabled {
		writeError(w, http.StatusForbidden, RefusedServer, "this MCP server is disabled in Toolgate; an admin can enable it again")
		return
	}
	if err := f.gate.Authorize(ctx, claims); err != nil {
		var ref *Refusal
		if errors.As(err, &ref) {
			writeError(w, http.StatusForbidden, ref.Code, ref.Message)
			return
		}
		f.log.ErrorContext(ctx, "mcp face: could not authorize", "server", label, "error", err)
		writeError(w, http.StatusServiceUnavailable, RefusedUnavailable,
			"Toolgate could not check this request (its database did not answer); nothing ran: try again later")
		return
	}
	ctx = context.WithValue(ctx, faceRequestKey{}, &faceRequest{claims: claims, server: srv})
	f.mcp.ServeHTTP(w, r.WithContext(ctx))
}

// server is the MCP server of one request, bound to what its checks
// established. (The SDK calls it for every stateless request.)
func (f *face) server(r *http.Request) *mcp.Server {
	fr, ok := r.Context().Value(faceRequestKey{}).(*faceRequest)
	if !ok {
		return nil // not reached through ServeHTTP: the SDK answers 400
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "toolgate", Title: "Toolgate: " + fr.server.Label, Version: "1"},
		&mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}}})
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			switch method {
			case "tools/list":
				return f.listTools(ctx, fr)
			case "tools/call":
				p, _ := req.GetParams().(*mcp.CallToolParamsRaw)
				return completeFor(req, f.callTool(ctx, fr, p)), nil
			}
			return next(ctx, method, req)
		}
	})
	return s
}

// writeError answers a request the face refuses before MCP, in the API's
// error shape.
func writeError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": code, "message": message}})
}

// newProtocol is the first MCP revision whose clients need a tools/call
// result's resultType; the SDK assumes its latest when a stateless request
// carries no initialize.
const newProtocol = "2026-07-28"

// completeFor marks r complete ("resultType": "complete") for a client of
// revision 2026-07-28 or later, as the SDK does for the tool handlers it
// runs itself; the face answers tools/call in a middleware, before them.
// The field is not exported: it is set the one way the SDK reads it, from
// JSON. Older clients get r as it is.
func completeFor(req mcp.Request, r *mcp.CallToolResult) *mcp.CallToolResult {
	v := newProtocol
	if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss.InitializeParams() != nil {
		v = ss.InitializeParams().ProtocolVersion
	}
	if v < newProtocol {
		return r
	}
	b, err := json.Marshal(r)
	if err != nil {
		return r
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return r
	}
	m["resultType"] = json.RawMessage(`"complete"`)
	if b, err = json.Marshal(m); err != nil {
		return r
	}
	var out mcp.CallToolResult
	if json.Unmarshal(b, &out) != nil {
		return r
	}
	return &out
}
