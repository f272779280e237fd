package gateway

import (
	"context"
	"encoding/json"
	"time"

	"github.com/toolgate/toolgate/internal/policy"
)

// Gate decides, where a call runs, whether it may run, and records what
// ran. The face (face.go) asks it about every tools/call and tools/list that
// reaches /mcp/{server_label}; internal/conversation implements it with
// Postgres. Every method fails closed: an error means nothing runs.
type Gate interface {
	// Authorize checks that claims (a verified token) still hold: the turn
	// is its conversation's running turn and the server exists and is
	// enabled. A refusal is returned as *Refusal (as the error).
	Authorize(ctx context.Context, c Claims) error
	// Listed records the tools the real server lists now (new tools are
	// stored, changed definitions flagged so that they ask from the next
	// request on) and returns the ones the conversation's owner may see:
	// blocked ones are left out.
	Listed(ctx context.Context, c Claims, tools []policy.DiscoveredTool) ([]policy.DiscoveredTool, error)
	// Admit decides on one call. When the verdict runs it, the approval it
	// uses (if any) is spent and the receipt written (state "running") in
	// one transaction before Admit returns; the face then forwards the call
	// and stores its result with Finish. A call identical to one already
	// admitted in the same turn (same server, tool and arguments digest) is
	// not run again: the verdict carries the stored result, or Pending when
	// the first has not finished (the face waits with Await).
	Admit(ctx context.Context, call Call) (Verdict, error)
	// Finish stores the result of an admitted call with its receipt.
	Finish(ctx context.Context, callID string, r Result) error
	// Await waits for the result of an admitted call (another request is
	// running it), until ctx ends.
	Await(ctx context.Context, callID string) (Result, error)
}

// Call is one tools/call that reached the face.
type Call struct {
	Claims   Claims
	ToolName string
	// Arguments are the canonical arguments (ArgumentsDigest) and
	// ArgumentsSHA256 their digest.
	Arguments       []byte
	ArgumentsSHA256 string
	// Definition is the tool as the real server lists it now (at most
	// DefinitionMaxAge old); nil when the server does not list it.
	Definition *policy.DiscoveredTool
	// ListedAt is when Definition was listed by the real server.
	ListedAt time.Time
}

// Verdict is the gate's answer to a call.
type Verdict struct {
	// CallID names the call's record (its receipt); set whenever the call
	// was recorded, refusals included.
	CallID string
	// Run: forward the call to the server, then Finish.
	Run bool
	// Stored is the result of the identical call that ran before (a
	// provider's retry): returned as it is, nothing runs.
	Stored *Result
	// Pending: the identical call is running; Await its result.
	Pending bool
	// Refusal says why the call does not run (nil when it runs).
	Refusal *Refusal
	// AllowedBy says what let it run: "policy", "grant", "conversation",
	// "approval", "rule", "hook" (for logs and the receipt).
	AllowedBy string
}

// Refusal is why a call or a token was refused: a machine code and a
// sentence the model and the person can act on.
type Refusal struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (r *Refusal) Error() string { return r.Message }

// Refusal codes.
const (
	// The tool's definition is not the one its policy, grant, rule or
	// approval was given for.
	RefusedChanged = "definition_changed"
	// Blocked by the workspace (or the person's own policy).
	RefusedBlocked = "blocked"
	// Asks, and no unused approval of this turn matches the call.
	RefusedNotApproved = "not_approved"
	// The server does not list the tool.
	RefusedUnknownTool = "unknown_tool"
	// The token's turn is no longer running, or its conversation is gone.
	RefusedTurnOver = "turn_over"
	// The server is disabled or gone.
	RefusedServer = "server_unavailable"
	// Toolgate could not check the call (its database is unreachable).
	RefusedUnavailable = "gate_unavailable"
)

// Result is what a forwarded call gave.
type Result struct {
	// JSON is the MCP CallToolResult as the server sent it (content,
	// structuredContent, isError); nil when the call did not reach the
	// server or failed below MCP.
	JSON json.RawMessage `json:"result,omitempty"`
	// IsError: the server's result says isError, or the call failed.
	IsError bool `json:"is_error"`
	// Failure says why no result came back (transport error, timeout,
	// too large); "" when the server answered.
	Failure string `json:"failure,omitempty"`
	// NotRun: the call provably never reached the server (the connection
	// was refused, the request was never written).
	NotRun bool `json:"not_run,omitempty"`
	// Masked is how many secret-looking values the face masked in the
	// result before the provider got it (JSON and IsError stay as the
	// server sent them); nil when the face did not check it (the server's
	// mask_results is off).
	Masked *int `json:"masked,omitempty"`
}
