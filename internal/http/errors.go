package http

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/toolgate/toolgate/internal/apperr"
)

// statusOf is the one table from error kinds to HTTP statuses.
var statusOf = map[apperr.Kind]int{
	apperr.Invalid:     http.StatusBadRequest,
	apperr.NotFound:    http.StatusNotFound,
	apperr.Conflict:    http.StatusConflict,
	apperr.TooLarge:    http.StatusRequestEntityTooLarge,
	apperr.Upstream:    http.StatusBadGateway,
	apperr.Unavailable: http.StatusServiceUnavailable,
	apperr.Internal:    http.StatusInternalServerError,

	apperr.Unauthenticated: http.StatusUnauthorized,
	apperr.Forbidden:       http.StatusForbidden,
	apperr.TooMany:         http.StatusTooManyRequests,
	apperr.Unsupported:     http.StatusUnsupportedMediaType,
	apperr.Misdirected:     http.StatusMisdirectedRequest,
	apperr.Unprocessable:   http.StatusUnprocessableEntity,
}

type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code      string            `json:"code"`
	Message   string            `json:"message"`
	Fields    map[string]string `json:"fields,omitempty"`
	Details   any               `json:"details,omitempty"`
	RequestID string            `json:"request_id,omitempty"`
}

// handleError writes every error in one shape. Details of internal errors
// are logged and never sent.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	e, status := toAppError(err)
	body := errorBody{errorDetail{Code: e.Code, Message: e.Message, Fields: e.Fields, Details: e.Details}}
	if e.Kind == apperr.Internal {
		body.Error.RequestID = requestID(c)
		if !errors.Is(err, context.Canceled) {
			s.log.ErrorContext(c.Request().Context(), "internal error", "error", err, "request_id", requestID(c))
		}
	}
	if e.RetryAfter > 0 { // TooMany, Unavailable (database_unavailable)
		c.Response().Header().Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	if c.Request().Method == http.MethodHead {
		err = c.NoContent(status)
	} else {
		err = c.JSON(status, body)
	}
	if err != nil {
		s.log.Warn("write error response", "error", err)
	}
}

// toAppError turns any error a handler or Echo returns into a domain error
// and its status.
func toAppError(err error) (*apperr.Error, int) {
	if e, ok := apperr.As(err); ok {
		if status, known := statusOf[e.Kind]; known {
			return e, status
		}
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		switch he.Code {
		case http.StatusNotFound:
			return apperr.New(apperr.NotFound, "route_not_found", "there is no such API path; see docs/openapi.yaml"), he.Code
		case http.StatusMethodNotAllowed:
			return apperr.New(apperr.Invalid, "method_not_allowed", "this path does not take that method; see docs/openapi.yaml"), he.Code
		case http.StatusRequestEntityTooLarge:
			return apperr.New(apperr.TooLarge, "body_too_large", "the request body is too large"), he.Code
		}
	}
	return &apperr.Error{Kind: apperr.Internal, Code: "internal_error",
		Message: "something went wrong on our side; the server log has the details under this request_id", Err: err}, http.StatusInternalServerError
}
