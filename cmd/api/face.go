package main

import (
	"log/slog"
	"net/http"

	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/conversation/agentgate"
	"github.com/toolgate/toolgate/internal/conversation/callgate"
	"github.com/toolgate/toolgate/internal/conversation/eventlog"
	"github.com/toolgate/toolgate/internal/conversation/record"
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

// newAgentFace is the MCP face for a person's own MCP clients (/mcp and
// /mcp/{server_label} with an API token), whatever MCP_ROUTE says, with
// the service behind its held calls (also the inbox's HeldDecider).
func newAgentFace(cfg config.Config, keeper *record.Keeper, signIn *auth.SignIn, policies *policysvc.Service, caller *mcpclient.Caller,
	hub *eventlog.Hub, log *slog.Logger) (http.Handler, *agentgate.Service) {
	agents := agentgate.New(agentgate.Options{Keeper: keeper, People: signIn, Servers: policies.Servers, Poker: hub,
		HoldTimeout: cfg.Face.HoldTimeout, Logger: log.With("component", "mcp-agents")})
	face := gateway.NewAgentFace(gateway.FaceOptions{Gate: callgate.New(keeper), Servers: policies.Servers, Upstream: caller,
		DefinitionMaxAge: cfg.Face.DefinitionMaxAge, MaxBodyBytes: cfg.MaxBodyBytes, Logger: log},
		gateway.AgentOptions{Agents: agents})
	return face, agents
}
