package record

import (
	"context"
	"fmt"

	"github.com/toolgate/toolgate/internal/conversation"
)

// outcomeUnknownReason is recorded on an approval whose tool may have run.
const outcomeUnknownReason = "The approval was sent to the model's provider, but Toolgate could not learn whether the tool ran (%s); it may have run. It will not be sent again: ask again if it is still needed."

// MarkUnknown makes the approved requests among aps whose call was not
// seen to run outcome_unknown, each with its approval.decide audit entry
// (Toolgate closed it when the turn ended: by turn_end).
//
// In gateway mode the MCP face's records say what ran instead (settleCalls):
// outcome_unknown is left only for a call forwarded and never finished.
func (k *Keeper) MarkUnknown(ctx context.Context, repo conversation.Repo, owner string, aps []conversation.Approval, ran map[string]bool, code string) ([]conversation.DecisionEvent, error) {
	if k.gateway {
		return k.SettleCalls(ctx, repo, owner, aps, code)
	}
	var out []conversation.DecisionEvent
	for _, a := range aps {
		if a.State != conversation.Approved || ran[a.ID] {
			continue
		}
		reason := fmt.Sprintf(outcomeUnknownReason, code)
		a.State, a.DecisionReason = conversation.OutcomeUnknown, &reason
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
