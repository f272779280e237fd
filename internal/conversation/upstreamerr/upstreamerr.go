// Package upstreamerr says how a turn whose request to the model's provider
// (or its stream) failed ends: the error event, and whether the provider
// may have taken the request all the same.
package upstreamerr

import (
	"context"
	"errors"
	"fmt"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/conversation/recovery"
)

// The causes with which a turn's context is cancelled that FromUpstream
// tells apart (the engine exports them as its own).
var (
	ErrShutdown = errors.New("the server is shutting down")
	// ErrAccountDisabled stops the turns of an account an admin disabled.
	ErrAccountDisabled = errors.New("the account was disabled")
)

// FromUpstream turns the way a stream or request ended into the error event.
func FromUpstream(ctx context.Context, err error, streamed bool) conversation.TurnError {
	var ue *conversation.UpstreamError
	switch {
	case errors.Is(context.Cause(ctx), ErrShutdown):
		return conversation.TurnError{Code: "server_shutdown", Message: "Toolgate is shutting down, so the turn was stopped; what arrived before is kept", Retryable: true}
	case errors.Is(context.Cause(ctx), recovery.ErrLeaseLost):
		return recovery.InterruptedError("this one")
	case errors.Is(context.Cause(ctx), ErrAccountDisabled):
		return conversation.TurnError{Code: "account_disabled", Message: "an admin disabled this account, so its turn was stopped; what arrived before is kept"}
	case ctx.Err() != nil:
		return conversation.TurnError{Code: "cancelled", Message: "the turn was cancelled; what arrived before is kept"}
	case errors.As(err, &ue) && ue.Code == conversation.CodeRequestTooLarge:
		return conversation.TurnError{Code: conversation.CodeRequestTooLarge, Message: ue.Message}
	case errors.As(err, &ue) && ue.Code == conversation.CodeUnreachable:
		return conversation.TurnError{Code: conversation.CodeUnreachable, Message: "the model's provider could not be reached: " + ue.Message, Retryable: true}
	case errors.As(err, &ue) && ue.Code == conversation.CodeFirstByteTimeout:
		return conversation.TurnError{Code: conversation.CodeFirstByteTimeout, Message: ue.Message + "; retrying may help", Retryable: true}
	case errors.As(err, &ue) && ue.Code == conversation.CodeIdleTimeout:
		return conversation.TurnError{Code: conversation.CodeIdleTimeout, Message: ue.Message + "; what arrived before is kept, and retrying may help", Retryable: true}
	case errors.As(err, &ue) && ue.QuotaExceeded():
		return conversation.TurnError{Code: "upstream_quota_exceeded", Message: "the model's provider refused the request because the OpenAI account has run out of quota or credit (" +
			ue.Message + "); an admin needs to check the account's plan and billing at platform.openai.com before turns can run again"}
	case errors.As(err, &ue) && ue.Status == 429:
		return conversation.TurnError{Code: "upstream_rate_limited", Message: "the model's provider is rate limiting requests (429) and retries did not help; try again in a moment: " + ue.Message, Retryable: true}
	case errors.As(err, &ue) && ue.Status >= 500:
		return conversation.TurnError{Code: "upstream_unavailable", Message: fmt.Sprintf("the model's provider failed (%d): %s", ue.Status, ue.Message), Retryable: true}
	case errors.As(err, &ue) && ue.Status == 424:
		return conversation.TurnError{Code: "mcp_server_failed", Message: "the model's provider could not reach an MCP server to list its tools (424): " + ue.Message + "; check the server in the settings", Retryable: true}
	case errors.As(err, &ue):
		return conversation.TurnError{Code: "upstream_rejected", Message: fmt.Sprintf("the model's provider refused the request (%d %s): %s", ue.Status, ue.Code, ue.Message), Retryable: ue.Retryable()}
	case err != nil:
		return conversation.TurnError{Code: "upstream_cut", Message: "the connection to the model broke off before the response finished; nothing after this point was received (" + err.Error() + ")", Retryable: true}
	case streamed:
		return conversation.TurnError{Code: "upstream_cut", Message: "the model's stream ended without saying that the response finished; it is not treated as complete", Retryable: true}
	}
	return conversation.TurnError{Code: "upstream_error", Message: "the request to the model failed", Retryable: true}
}

// MaybeDelivered reports whether a request that failed may still have been
// received and acted on upstream.
func MaybeDelivered(err error) bool {
	var ue *conversation.UpstreamError
	if errors.As(err, &ue) {
		// 500, 502 and 504 may come from a proxy after upstream got the
		// request; 429, 503 and 4xx mean it was not taken on.
		return ue.MaybeDelivered || ue.Status == 500 || ue.Status == 502 || ue.Status == 504
	}
	return true // cancelled in flight, or a 200 whose stream broke before its first event
}
