package main

import (
	"log/slog"
	"net/http"

	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/mcpclient"
	"github.com/toolgate/toolgate/internal/policy/policysvc"
)

// newMCPFace is the MCP face served at /mcp/{server_label}, or nil (the
// route answers 404 mcp_face_off) when there is no gate to ask.
func newMCPFace(cfg config.Config, tokens *gateway.Tokens, gate gateway.Gate, policies *policysvc.Service, caller *mcpclient.Caller, log *slog.Logger) http.Handler {
	if gate == nil {
		return nil
	}
	return gateway.NewFace(gateway.FaceOptions{Tokens: tokens, Gate: gate, Servers: policies.Servers, Upstream: caller,
		DefinitionMaxAge: cfg.Face.DefinitionMaxAge, MaxBodyBytes: cfg.MaxBodyBytes, Logger: log})
}
