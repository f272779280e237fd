package conversation

import (
	"context"

	"github.com/toolgate/toolgate/internal/hooks"
	"github.com/toolgate/toolgate/internal/policy"
)

// askHooks puts an approval request to the decision hooks before its card
// shows. The hook is sent the arguments redacted as the card shows them
// (it.Arguments): it decides in the person's place and sees what they
// would see, and a secret in the arguments never leaves for one more
// system. Whatever goes wrong asks.
func (r *relay) askHooks(ctx context.Context, u *UpstreamItem, it Item) policy.HookDecision {
	t, s := r.t, r.t.s
	d, err := s.policies.DecideByHooks(ctx, t.user, policy.HookCall{Server: u.ServerLabel, Tool: u.Name,
		Arguments: it.Arguments, Redacted: it.Redacted, ConversationID: t.conv.ID, ApprovalRequestID: u.ID})
	if err != nil {
		s.log.WarnContext(ctx, "the decision hooks could not be read, so the call asks", "conversation_id", t.conv.ID,
			"approval_request_id", u.ID, "error", err)
		return policy.HookDecision{Decision: hooks.Ask, Errors: []string{"the decision hooks could not be read: " + err.Error()}}
	}
	return d
}
