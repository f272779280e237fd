package http

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/conversation"
)

// grantsResponse is a list of grants.
type grantsResponse struct {
	Grants []conversation.Grant `json:"grants"`
}

// listConversationGrants is GET /api/conversations/{id}/grants: the live
// grants that apply in one of the caller's conversations (its own and the
// caller's timed ones). Another user's conversation is not found.
func (s *Server) listConversationGrants(c echo.Context) error {
	gs, err := s.chat.Book().ConversationGrants(c.Request().Context(), c.Param("conversationId"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, grantsResponse{Grants: gs})
}

// listGrants is GET /api/grants: the caller's grants, live ones only unless
// include=expired (then expired and revoked ones too).
func (s *Server) listGrants(c echo.Context) error {
	ended := false
	switch v := c.QueryParam("include"); v {
	case "":
	case "expired":
		ended = true
	default:
		return apperr.Invalidf("invalid_include", "include",
			"include must be \"expired\" (to list expired and revoked grants too) or left out (got %q)", v)
	}
	gs, err := s.chat.Book().ListGrants(c.Request().Context(), ended)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, grantsResponse{Grants: gs})
}

// revokeGrant is DELETE /api/grants/{id}: the caller's own grants only
// (another user's is not found). The next request built asks again.
func (s *Server) revokeGrant(c echo.Context) error {
	if err := s.chat.Book().RevokeGrant(c.Request().Context(), c.Param("grantId")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
