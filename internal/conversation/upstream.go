package conversation

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/toolgate/toolgate/internal/policy"
)

// Upstream is the model provider: OpenAI's Responses API or anything that
// speaks it. internal/responses implements it.
type Upstream interface {
	// Stream sends one request and returns its event stream. An error means
	// nothing was streamed; it is an *UpstreamError when the provider
	// answered with an HTTP error.
	Stream(ctx context.Context, req UpstreamRequest) (EventStream, error)
	// Retrieve reads a stored response back (GET /v1/responses/{id}), to
	// learn what became of a request whose stream Toolgate did not see to
	// its end. An error is an *UpstreamError when the provider answered
	// with an HTTP error (404: it does not have the response, or not yet).
	Retrieve(ctx context.Context, id string) (StoredResponse, error)
}

// StoredResponse is a response as the provider stored it.
type StoredResponse struct {
	ID string
	// Status is the provider's: completed, failed, incomplete, cancelled,
	// or in_progress and queued while it still runs.
	Status string
	// Output are its output items that a turn acts on, converted as the
	// stream's are (EventItemDone), in order.
	Output []UpstreamItem
}

// Finished reports whether the response ended: its output is final and
// says what ran.
func (r StoredResponse) Finished() bool {
	return r.Status != "" && r.Status != "in_progress" && r.Status != "queued"
}

// UpstreamRequest is one responses.create call.
type UpstreamRequest struct {
	// ConversationID and TurnID tag the request (its metadata), so that a
	// stored response can be matched to the turn that sent it.
	ConversationID     string
	TurnID             string
	PreviousResponseID string
	UserText           string   // "" when the request only answers approvals
	Answers            []Answer // one per approval request of PreviousResponseID still open upstream
	Tools              []policy.ServerTools
	// History, when set, is the conversation's own transcript, sent as input
	// because the provider lost PreviousResponseID (which is then empty, as
	// are UserText and Answers: the person's messages are in the history).
	History []HistoryMessage
	// Retry allows bounded retries of 429 and 5xx answers. Requests that
	// carry decisions never retry on their own.
	Retry bool
}

// Answer is one mcp_approval_response.
type Answer struct {
	ApprovalRequestID string
	Approve           bool
	Reason            string
	ServerLabel       string // the server and the label upstream knows it by,
	UpstreamLabel     string // so the request offers the tool being answered
	ToolName          string
}

// EventStream is a response being streamed. Next blocks for the next event;
// when it returns false, Err says why (nil: the stream ended).
type EventStream interface {
	Next() bool
	Event() Event
	Err() error
	Close() error
}

// EventKind classifies upstream events; everything else is dropped before
// it reaches the turn.
type EventKind int

// The upstream events a turn acts on.
const (
	EventCreated     EventKind = iota + 1 // the response exists upstream: ResponseID
	EventTextDelta                        // ItemID, Delta
	EventItemDone                         // Item
	EventCompleted                        // ResponseID
	EventFailed                           // ResponseID, Error (response.failed)
	EventIncomplete                       // ResponseID, Error (response.incomplete)
	EventError                            // Error (the top-level error event)
	EventItemStarted                      // Item: an mcp_call began (its name and labels; no arguments, output or error yet)
)

// Event is one upstream event, with labels already mapped back to servers.
type Event struct {
	Kind       EventKind
	ResponseID string
	ItemID     string
	Delta      string
	Item       *UpstreamItem
	Error      *UpstreamError
}

// UpstreamItem is an output item: finished (EventItemDone), or, for an
// mcp_call, as it began (EventItemStarted).
type UpstreamItem struct {
	Type          string // message, mcp_list_tools, mcp_call, mcp_approval_request (others are dropped)
	ID            string
	ServerLabel   string
	UpstreamLabel string
	Text          string // message
	Tools         []policy.DiscoveredTool
	ListError     json.RawMessage
	Name          string
	Arguments     string
	Output        *string
	CallError     json.RawMessage
	ApprovalID    string
}

// CodeUnreachable is the UpstreamError code for a provider that could not be
// reached at all (connection refused, DNS, TLS): Status is 0.
const CodeUnreachable = "upstream_unreachable"

// The UpstreamError codes (Status 0) of a provider that went silent: no
// event within UPSTREAM_FIRST_BYTE_TIMEOUT of sending the request, or none
// for UPSTREAM_IDLE_TIMEOUT once the answer streams. The turn ends with the
// same code; the request was sent, so it may have been acted on.
const (
	CodeFirstByteTimeout = "upstream_first_byte_timeout"
	CodeIdleTimeout      = "upstream_idle_timeout"
)

// CodeRequestTooLarge is the UpstreamError code (Status 0) of a request
// Toolgate did not send because the provider would refuse it: more mcp
// tools entries than the provider accepts (responses.MaxTools). Nothing
// reached the provider; the turn ends with this code and a sentence saying
// what to turn off.
const CodeRequestTooLarge = "request_too_large"

// ProviderCodeInsufficientQuota is the code (and type) of OpenAI's 429 for
// an account out of quota or credit: unlike a rate limit, waiting does not
// help, so it is never retried.
const ProviderCodeInsufficientQuota = "insufficient_quota"

// UpstreamError is an error the provider reported: an HTTP error status, an
// error event, or a failed response.
type UpstreamError struct {
	Status  int    // HTTP status, 0 for errors inside a stream
	Code    string // the provider's code, e.g. rate_limit_exceeded, previous_response_not_found
	Message string
	// MaybeDelivered says the request may have reached the provider although
	// no answer came back (the connection broke after it was sent).
	MaybeDelivered bool
	// ServerLabel is the MCP server a 424 names (the provider could not
	// list its tools), mapped back to its Toolgate label; "" if none.
	ServerLabel string
}

func (e *UpstreamError) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("upstream answered %d %s: %s", e.Status, e.Code, e.Message)
	}
	return fmt.Sprintf("upstream error %s: %s", e.Code, e.Message)
}

// Retryable reports whether sending the same request again later may work.
func (e *UpstreamError) Retryable() bool {
	if e.QuotaExceeded() {
		return false
	}
	return e.Status == 408 || e.Status == 409 || e.Status == 429 || e.Status >= 500 ||
		(e.Status == 0 && (e.Code == CodeUnreachable || e.Code == CodeFirstByteTimeout || e.Code == CodeIdleTimeout ||
			e.Code == "rate_limit_exceeded" || e.Code == "server_error"))
}

// QuotaExceeded reports whether the provider refused because the account
// has no quota or credit left (OpenAI's insufficient_quota).
func (e *UpstreamError) QuotaExceeded() bool { return e.Code == ProviderCodeInsufficientQuota }
