package http

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/toolgate/toolgate/internal/apperr"
)

// mcpFaceMethods are what streamable HTTP uses: POST for messages; GET
// and DELETE (which the stateless face answers 405).
var mcpFaceMethods = []string{http.MethodPost, http.MethodGet, http.MethodDelete}

var errMCPFaceOff = apperr.New(apperr.NotFound, "mcp_face_off",
	"this Toolgate does not serve MCP servers at /mcp/: its MCP face is off (MCP_ROUTE=direct), so the model's provider calls each MCP server itself")

// serveMCPFace hands /mcp/:label to the MCP face. The face checks the
// capability token itself; no session, cookie or API token counts here.
func (s *Server) serveMCPFace(c echo.Context) error {
	if s.mcpFace == nil {
		return errMCPFaceOff
	}
	r := c.Request()
	r.Body = http.MaxBytesReader(c.Response(), r.Body, s.maxBodyBytes)
	s.mcpFace.ServeHTTP(c.Response(), r)
	return nil
}
