package conversation

import (
	"context"
	"strings"

	"github.com/toolgate/toolgate/internal/hooks"
	"github.com/toolgate/toolgate/internal/policy"
)

// NoticeDecisionHookFailed is the notice left next to a card when a
// decision hook was asked and failed (timeout, error status, bad answer):
// the request asks, and the notice says what went wrong.
const NoticeDecisionHookFailed = "decision_hook_failed"

// askHooks puts an approval request to the decision hooks before its card
// shows. The hook is sent the arguments redacted as the card shows them
// (it.Arguments): it decides in the person's place and sees what they
// would see, and a secret in the arguments never leaves for one more
// system. Whatever goes wrong asks; a hook that failed leaves a notice.
func (r *relay) askHooks(ctx context.Context, u *UpstreamItem, it Item) policy.HookDecision {
	t, s := r.t, r.t.s
	d, err := s.policies.DecideByHooks(ctx, t.user, policy.HookCall{Server: u.ServerLabel, Tool: u.Name,
		Arguments: it.Arguments, Redacted: it.Redacted, ConversationID: t.conv.ID, ApprovalRequestID: u.ID})
	if err != nil {
		s.log.WarnContext(ctx, "the decision hooks could not be read, so the call asks", "conversation_id", t.conv.ID,
			"approval_request_id", u.ID, "error", err)
		d = policy.HookDecision{Decision: hooks.Ask, Errors: []string{"the decision hooks' settings could not be read"}}
	}
	if len(d.Errors) > 0 {
		r.notice(Notice{Code: NoticeDecisionHookFailed, ServerLabel: u.ServerLabel,
			Message: "A decision hook could not decide " + u.Name + " (" + strings.Join(d.Errors, "; ") + "), so it counts as ask."})
	}
	return d
}

// hookDecider names who decided for the transcript and the audit log:
// "hook (server weather)" or "hook (workspace)".
func hookDecider(d policy.HookDecision, server string) string {
	if d.Hook == hooks.HookServer {
		return "hook (server " + server + ")"
	}
	return "hook (workspace)"
}
