package main

import (
	"log/slog"
	"strings"

	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/responses"
)

// newFace is what the requests to the provider point their tool entries at
// in gateway mode (MCP_ROUTE), nil in direct mode. Its BaseURL is
// PUBLIC_URL; serve sets it again once it listens, as LISTEN_ADDR with port
// 0 makes PUBLIC_URL's default name the port really listened on.
func newFace(cfg config.Config, tokens *gateway.Tokens) *responses.Face {
	if !cfg.Route.Gateway() {
		return nil
	}
	return &responses.Face{BaseURL: cfg.Webhooks.PublicURL, Tokens: tokens, TTL: cfg.Route.TokenTTL}
}

// logRoute says in one line which route tool calls take, and why.
func logRoute(log *slog.Logger, cfg config.Config, face *responses.Face) {
	if face == nil {
		log.Info("MCP route: direct, the provider calls MCP servers itself with their URLs and stored headers",
			"route", cfg.Route.Mode, "reason", cfg.Route.Reason)
		return
	}
	log.Info("MCP route: gateway, the provider calls MCP servers through Toolgate's MCP face",
		"route", cfg.Route.Mode, "reason", cfg.Route.Reason, "face", strings.TrimRight(face.BaseURL, "/")+"/mcp/{server_label}", "token_ttl", cfg.Route.TokenTTL)
}
