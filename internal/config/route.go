package config

import (
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"
)

// The routes a tool call can take from the model's provider to an MCP server.
const (
	// RouteGateway: the provider calls Toolgate's MCP face at
	// PUBLIC_URL/mcp/{server_label} with a capability token, and Toolgate
	// checks each call and forwards it to the real server. The server's
	// URL and stored headers never leave Toolgate.
	RouteGateway = "gateway"
	// RouteDirect: the provider calls the MCP server itself, with its real
	// URL and stored headers (Toolgate's behaviour before the face).
	RouteDirect = "direct"
)

// Route is how the provider reaches MCP servers, and why.
type Route struct {
	// Mode (MCP_ROUTE) is RouteGateway or RouteDirect. Unset, it is
	// gateway offline (the built-in emulator reaches this machine) or when
	// PUBLIC_URL is https (a hosted provider can reach it), direct
	// otherwise.
	Mode string
	// Reason says why Mode was chosen, for the start log.
	Reason string
	// TokenTTL (MCP_TOKEN_TTL, 1m to 24h, default 15m) is the longest a
	// capability token lives: one is minted for every request to the
	// provider, so it must outlast the longest response (its tool calls
	// included). The face also refuses a token whose turn is no longer
	// running, so a shorter TTL only bounds a leaked token's life.
	TokenTTL time.Duration
}

// Gateway reports whether tool calls go through Toolgate's MCP face.
func (r Route) Gateway() bool { return r.Mode == RouteGateway }

// LogValue is the route as the start log shows it.
func (r Route) LogValue() slog.Value {
	return slog.GroupValue(slog.String("mode", r.Mode), slog.String("reason", r.Reason), slog.Duration("token_ttl", r.TokenTTL))
}

// Bounds of MCP_TOKEN_TTL: a token shorter than a minute can expire while
// the provider still lists tools; one longer than a day outlives any turn.
const (
	minTokenTTL = time.Minute
	maxTokenTTL = 24 * time.Hour
)

func loadRoute(get func(string, string) string, offline bool, publicURL string, errs *[]string) Route {
	r := Route{}
	raw := get("MCP_TOKEN_TTL", "15m")
	d, err := time.ParseDuration(raw)
	if err != nil || d < minTokenTTL || d > maxTokenTTL {
		*errs = append(*errs, fmt.Sprintf("MCP_TOKEN_TTL must be a duration from 1m to 24h with a unit, such as 15m (got %q)", raw))
	}
	r.TokenTTL = d

	https := false
	if u, err := url.Parse(publicURL); err == nil && u.Scheme == "https" {
		https = true
	}
	mode := get("MCP_ROUTE", "")
	switch strings.ToLower(mode) {
	case RouteGateway:
		r.Mode, r.Reason = RouteGateway, "MCP_ROUTE=gateway is set"
		if !offline && !https {
			r.Reason += "; PUBLIC_URL is not https, so only a provider that can reach " + publicURL + " can call Toolgate's MCP face"
		}
	case RouteDirect:
		r.Mode, r.Reason = RouteDirect, "MCP_ROUTE=direct is set: the provider calls MCP servers with their real URLs and stored headers"
	case "":
		switch {
		case offline:
			r.Mode, r.Reason = RouteGateway, "offline: the built-in emulator calls Toolgate's MCP face on this machine"
		case https:
			r.Mode, r.Reason = RouteGateway, "PUBLIC_URL is https, so the provider can call Toolgate's MCP face at "+publicURL+"/mcp/{server_label}"
		default:
			r.Mode, r.Reason = RouteDirect, "PUBLIC_URL ("+publicURL+") is not https, so a hosted provider cannot reach Toolgate: "+
				"it calls MCP servers with their real URLs and stored headers; set PUBLIC_URL to Toolgate's https address to route calls through Toolgate"
		}
	default:
		*errs = append(*errs, fmt.Sprintf("MCP_ROUTE must be gateway (the provider calls MCP servers through Toolgate) or direct "+
			"(the provider calls them itself), or unset to choose by PUBLIC_URL (got %q)", mode))
	}
	return r
}
