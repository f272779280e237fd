package engine

// Gateway reports whether calls go through the MCP face (Options.Gateway).
func (s *Service) Gateway() bool { return s.gateway }
