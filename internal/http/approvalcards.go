package http

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/toolgate/toolgate/internal/policy"
)

type approvalCardsResponse struct {
	Cards []policy.ApprovalCard `json:"cards"`
}

type putApprovalCardRequest struct {
	Text    *string         `json:"approval_text"`
	Choices []policy.Choice `json:"choices"`
}

// listApprovalCards lists the words and choices admins set for a server's
// tools.
func (s *Server) listApprovalCards(c echo.Context) error {
	cards, err := s.policies.Cards.ApprovalCards(c.Request().Context(), c.Param("serverId"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, approvalCardsResponse{Cards: cards})
}

// putApprovalCard sets a tool's approval text and the choices its card
// offers (admins).
func (s *Server) putApprovalCard(c echo.Context) error {
	var req putApprovalCardRequest
	if err := s.decode(c, &req); err != nil {
		return err
	}
	name, err := toolName(c)
	if err != nil {
		return err
	}
	card, err := s.policies.Cards.SetApprovalCard(c.Request().Context(), policy.ApprovalCard{ServerLabel: c.Param("serverId"),
		ToolName: name, Text: req.Text, Choices: req.Choices})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, card)
}

// deleteApprovalCard removes a tool's words and choices (admins).
func (s *Server) deleteApprovalCard(c echo.Context) error {
	name, err := toolName(c)
	if err != nil {
		return err
	}
	if err := s.policies.Cards.DeleteApprovalCard(c.Request().Context(), c.Param("serverId"), name); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
