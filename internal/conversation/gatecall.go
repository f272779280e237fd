package conversation

// Gateway reports whether calls go through the MCP face (Options.Gateway).
func (s *Service) Gateway() bool { return s.gateway }

// shownCall fills the parts of a call shown to people.
func shownCall(c GatewayCall) GatewayCall {
	c.Via = ViaGateway
	c.Arguments, c.Redacted = Redact(c.StoredArguments)
	if c.Redacted == nil {
		c.Redacted = []string{}
	}
	return c
}
