package http

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/conversation/engine"
	"github.com/toolgate/toolgate/internal/policy"
)

type createConversationRequest struct {
	Title string            `json:"title"`
	Tools *policy.Selection `json:"tools"`
}

func (s *Server) createConversation(c echo.Context) error {
	var req createConversationRequest
	if c.Request().ContentLength != 0 {
		if err := s.decode(c, &req); err != nil {
			return err
		}
	}
	conv, err := s.chat.Book().CreateWith(c.Request().Context(), req.Title, req.Tools)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, conv)
}

type conversationsResponse struct {
	Conversations []conversation.Conversation `json:"conversations"`
}

func (s *Server) listConversations(c echo.Context) error {
	limit := 0
	if v := c.QueryParam("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return apperr.Invalidf("invalid_limit", "limit", "limit must be a whole number between 1 and 500 (got %q)", v)
		}
		limit = n
	}
	list, err := s.chat.Book().List(c.Request().Context(), limit)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, conversationsResponse{Conversations: list})
}

// getConversationTools and putConversationTools read and replace which
// servers and tools a conversation offers (conversation/book/tools.go). Owner
// only: another user's conversation is not found.
func (s *Server) getConversationTools(c echo.Context) error {
	t, err := s.chat.Book().Tools(c.Request().Context(), c.Param("conversationId"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, t)
}

func (s *Server) putConversationTools(c echo.Context) error {
	var sel policy.Selection
	if err := s.decode(c, &sel); err != nil {
		return err
	}
	t, err := s.chat.Book().SetTools(c.Request().Context(), c.Param("conversationId"), sel)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, t)
}

func (s *Server) getConversation(c echo.Context) error {
	t, err := s.chat.Book().Get(c.Request().Context(), c.Param("conversationId"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, t)
}

type renameConversationRequest struct {
	Title *string `json:"title"`
}

func (s *Server) renameConversation(c echo.Context) error {
	var req renameConversationRequest
	if err := s.decode(c, &req); err != nil {
		return err
	}
	if req.Title == nil {
		return apperr.Invalidf("invalid_title", "title", "title is required")
	}
	conv, err := s.chat.Book().Rename(c.Request().Context(), c.Param("conversationId"), *req.Title)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, conv)
}

func (s *Server) deleteConversation(c echo.Context) error {
	if err := s.chat.Book().Delete(c.Request().Context(), c.Param("conversationId")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) cancelConversation(c echo.Context) error {
	if err := s.chat.Cancel(c.Request().Context(), c.Param("conversationId")); err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, map[string]bool{"cancelled": true})
}

// infoResponse is GET /api/info: the upstream, and which Toolgate this is.
type infoResponse struct {
	conversation.Info
	Version string `json:"version"` // `toolgate version`
}

func (s *Server) info(c echo.Context) error {
	return c.JSON(http.StatusOK, infoResponse{Info: s.chat.Info(), Version: s.version})
}

type responseRequest struct {
	ConversationID string  `json:"conversation_id"`
	Input          *string `json:"input"`
}

// postResponse sends a message: the answer streams back as SSE. Errors
// found before the stream starts are ordinary JSON errors.
func (s *Server) postResponse(c echo.Context) error {
	var req responseRequest
	if err := s.decode(c, &req); err != nil {
		return err
	}
	if after, err := lastEventID(c); err != nil || after >= 0 {
		if err != nil {
			return err
		}
		return s.resume(c, req.ConversationID, after)
	}
	if req.Input == nil {
		return apperr.Invalidf("invalid_input", "input", "input is required: the message to send to the model")
	}
	return s.stream(c, engine.Request{ConversationID: req.ConversationID, Input: req.Input})
}

type approvalResponseRequest struct {
	ConversationID    string                  `json:"conversation_id"`
	ApprovalRequestID *string                 `json:"approval_request_id"`
	Approve           *bool                   `json:"approve"`
	Reason            *string                 `json:"reason"`
	Remember          *bool                   `json:"remember"`
	Scope             *string                 `json:"scope"`
	Correction        json.RawMessage         `json:"correction"`
	Stop              *bool                   `json:"stop"`
	Decisions         []conversation.Decision `json:"decisions"`
}

// decisions returns the request's decisions in either of its two forms.
func (r approvalResponseRequest) decisions() ([]conversation.Decision, error) {
	single := r.ApprovalRequestID != nil || r.Approve != nil || r.Reason != nil || r.Remember != nil || r.Scope != nil || r.Stop != nil ||
		(r.Correction != nil && string(r.Correction) != "null")
	switch {
	case r.Decisions != nil && single:
		return nil, apperr.Invalidf("invalid_decisions", "decisions",
			"send either approval_request_id with approve (one decision) or decisions (several), not both")
	case r.Decisions != nil:
		return r.Decisions, nil
	case !single:
		return nil, apperr.Invalidf("invalid_decisions", "approval_request_id",
			"approval_request_id and approve are required (or a decisions array)")
	}
	d := conversation.Decision{Approve: r.Approve, Reason: r.Reason, Scope: r.Scope, Remember: r.Remember != nil && *r.Remember,
		Correction: r.Correction, Stop: r.Stop != nil && *r.Stop}
	if r.ApprovalRequestID != nil {
		d.ApprovalRequestID = *r.ApprovalRequestID
	}
	return []conversation.Decision{d}, nil
}

// postApprovalResponse records decisions; the follow-up streams back as SSE.
func (s *Server) postApprovalResponse(c echo.Context) error {
	var req approvalResponseRequest
	if err := s.decode(c, &req); err != nil {
		return err
	}
	if req.ConversationID == "" {
		return apperr.Invalidf("invalid_conversation_id", "conversation_id", "conversation_id is required: the conversation the approval requests belong to")
	}
	if after, err := lastEventID(c); err != nil || after >= 0 {
		if err != nil {
			return err
		}
		return s.resume(c, req.ConversationID, after)
	}
	ds, err := req.decisions()
	if err != nil {
		return err
	}
	return s.stream(c, engine.Request{ConversationID: req.ConversationID, Decisions: ds})
}

// retryConversation sends the turn that failed last again; it streams like
// the turn itself.
func (s *Server) retryConversation(c echo.Context) error {
	if after, err := lastEventID(c); err != nil || after >= 0 {
		if err != nil {
			return err
		}
		return s.resume(c, c.Param("conversationId"), after)
	}
	return s.stream(c, engine.Request{ConversationID: c.Param("conversationId"), Retry: true})
}
