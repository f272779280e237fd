package record

import (
	"context"
	"fmt"

	"github.com/toolgate/toolgate/internal/conversation"
)

// The reasons an approval's state records once the MCP face's records
// settle whether its call ran (MCP_ROUTE=gateway).
const (
	// notRunReason: no call on the approval reached the server.
	notRunReason = "It was approved, but it did not run: %s. Nothing was sent to the MCP server with this approval; the conversation can go on, and the model can ask again if it is still needed."
	// forwardedUnknownReason: the one case whether it ran stays unknown.
	forwardedUnknownReason = "Toolgate forwarded the approved call to the MCP server, then stopped before it could store the result (%s), so whether the tool ran is unknown: it may have run. It will not be sent again: ask again if it is still needed."
)

// SettleCalls records, in the transaction that ends the turn that carried
// aps' answers (holding the conversation's lock, so no call on them can be
// admitted any more), what the MCP face's records say of each approved
// one: a call on it that finished ran, and the approval stays approved
// (the call's record holds its result); a call admitted and never finished
// (Toolgate stopped between forwarding it and storing its result) is
// outcome_unknown; no call, or one that never reached the server, is
// not_run. code says how the turn ended. It returns the decisions that
// changed.
func (k *Keeper) SettleCalls(ctx context.Context, repo conversation.Repo, owner string, aps []conversation.Approval, code string) ([]conversation.DecisionEvent, error) {
	var ids []string
	for _, a := range aps {
		if a.State == conversation.Approved {
			ids = append(ids, a.ID)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	calls, err := repo.Calls.OfApprovals(ctx, ids)
	if err != nil {
		return nil, err
	}
	var out []conversation.DecisionEvent
	for _, a := range aps {
		if a.State != conversation.Approved {
			continue
		}
		c, ok := calls[a.ID]
		var reason string
		switch {
		case ok && (c.State == conversation.CallDone || c.State == conversation.CallFailed):
			continue // it ran: its record has the result
		case ok && c.State == conversation.CallRunning:
			a.State, reason = conversation.OutcomeUnknown, fmt.Sprintf(forwardedUnknownReason, code)
		case ok: // not_run
			a.State, reason = conversation.NotRun, fmt.Sprintf(notRunReason, "the call failed before it reached the MCP server ("+c.Failure+")")
		case code == "":
			a.State, reason = conversation.NotRun, fmt.Sprintf(notRunReason, "the model did not call the tool with the approved arguments, or Toolgate refused the call")
		default:
			a.State, reason = conversation.NotRun, fmt.Sprintf(notRunReason, "the model's provider did not call the tool before the turn ended ("+code+")")
		}
		a.DecisionReason = &reason
		if err := repo.Approvals.Decide(ctx, owner, a); err != nil {
			return nil, err
		}
		if err := k.AuditClosed(ctx, repo, a, conversation.Approved, ClosedByTurnEnd, nil); err != nil {
			return nil, err
		}
		out = append(out, k.decision(a))
	}
	return out, nil
}
