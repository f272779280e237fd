package http

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/gateway"
)

// mcpFaceMethods are what streamable HTTP uses: POST for messages; GET
// (a session's own stream) and DELETE (its end), which the provider's
// stateless face answers 405.
var mcpFaceMethods = []string{http.MethodPost, http.MethodGet, http.MethodDelete}

var errMCPFaceOff = apperr.New(apperr.NotFound, "mcp_face_off",
	"this Toolgate does not serve MCP servers at /mcp/ to the model's provider: its MCP face is off (MCP_ROUTE=direct), so the provider calls each MCP server itself")

var errAgentFaceOff = apperr.New(apperr.NotFound, "mcp_agent_face_off",
	"this Toolgate does not serve MCP clients with API tokens at /mcp")

var errNotForProvider = apperr.New(apperr.NotFound, "not_found",
	"a capability token (tgc_…) names one server: send it to /mcp/{server_label}; /mcp serves a person's own MCP clients with their API token (tg_…)")

// serveMCPFace hands /mcp and /mcp/:label to an MCP face. Who may call:
//   - with a capability token (tgc_…), the model's provider, at
//     /mcp/{server_label} only, for one conversation's running turn (the
//     provider's face checks the token);
//   - with a person's API token (tg_…), or none (then 401 saying what to
//     send), the person's own MCP clients (the agent face checks the
//     token, and the SDK binds each session to the person who began it).
//
// No session cookie counts here: a page on another site cannot send either
// token.
func (s *Server) serveMCPFace(c echo.Context) error {
	r := c.Request()
	provider := strings.HasPrefix(gateway.BearerToken(r.Header.Get("Authorization")), gateway.TokenPrefix)
	var h http.Handler
	switch {
	case provider && r.URL.Path == "/mcp":
		return errNotForProvider
	case provider || s.agentFace == nil:
		// Without the agent face, /mcp/{label} is the provider's alone:
		// it refuses any other credential (401).
		if r.URL.Path == "/mcp" {
			return errAgentFaceOff
		}
		if s.mcpFace == nil {
			return errMCPFaceOff
		}
		h = s.mcpFace
	default:
		h = s.agentFace
	}
	r.Body = http.MaxBytesReader(c.Response(), r.Body, s.maxBodyBytes)
	h.ServeHTTP(c.Response(), r)
	return nil
}
