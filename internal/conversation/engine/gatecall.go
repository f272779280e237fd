package engine

import "github.com/toolgate/toolgate/internal/conversation"

// Gateway reports whether calls go through the MCP face (Options.Gateway).
func (s *Service) Gateway() bool { return s.gateway }

// shownCall fills the parts of a call shown to people.
func shownCall(c conversation.GatewayCall) conversation.GatewayCall {
	c.Via = conversation.ViaGateway
	c.Arguments, c.Redacted = conversation.Redact(c.StoredArguments)
	if c.Redacted == nil {
		c.Redacted = []string{}
	}
	return c
}
