package gateway

import (
	"context"
	"time"

	"github.com/toolgate/toolgate/internal/policy"
)

// Agents is what the face needs to serve a person's own MCP clients
// (Claude Code, Codex, Cursor, VS Code, the OpenAI Agents SDK, their own
// apps) at /mcp and /mcp/{server_label} with the person's API token
// (tg_…): internal/conversation/agentgate implements it.
type Agents interface {
	// Person checks a personal API token: the person's id and a context
	// carrying them. An unknown, deleted or revoked token, or a disabled
	// account, is an *apperr.Error of kind Unauthenticated.
	Person(ctx context.Context, token string) (context.Context, string, error)
	// Servers lists the enabled servers (ctx carries the person).
	Servers(ctx context.Context) ([]policy.Server, error)
	// Session opens, once, the conversation (kind agent) that holds one
	// MCP session's held calls and receipts, and returns its id. The same
	// id for the same session; another person's session is NotFound.
	Session(ctx context.Context, sessionID string, client Client) (string, error)
	// Hold turns a call the Gate refused as not approved into an approval
	// request, as a chat's would be (rules and hooks first, the same card,
	// expiry, webhooks), and waits until it is decided, it expires, the
	// hold outlasts its limit, or ctx ends (the client went away): then
	// the request is withdrawn and nothing runs later.
	Hold(ctx context.Context, call Call, h HoldHooks) (HoldOutcome, error)
}

// HoldHooks are how a held call keeps its client informed and, where it
// can, asks it.
type HoldHooks struct {
	// Progress is called about every ProgressEvery while the call waits.
	Progress func(elapsed time.Duration, message string)
	// Ask, when the client can be asked (it declared elicitation), puts
	// the request to the person in the client itself; nil otherwise. It
	// returns the person's answer; ok is false when none came (declined,
	// cancelled, failed).
	Ask func(ctx context.Context, approvalRequestID, message string) (a AskAnswer, ok bool)
}

// AskAnswer is a person's answer given in their client.
type AskAnswer struct {
	Approve bool
	Reason  string
}

// HoldOutcome is how a held call's request ended.
type HoldOutcome struct {
	ApprovalRequestID string
	// Approved: the call runs now on its approval (Admit again).
	Approved bool
	// Refusal says why it does not run (denied, with the person's reason
	// and correction; expired; withdrawn).
	Refusal *Refusal
}

// Refusal codes of held calls.
const (
	RefusedDenied    = "denied"
	RefusedExpired   = "expired"
	RefusedWithdrawn = "withdrawn"
)
