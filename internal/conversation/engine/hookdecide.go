package engine

import (
	"context"
	"strings"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/hooks"
	"github.com/toolgate/toolgate/internal/policy"
)

// NoticeDecisionHookFailed is the notice left next to a card when a
// decision hook was asked and failed (timeout, error status, bad answer):
// the request asks, and the notice says what went wrong.
const NoticeDecisionHookFailed = "decision_hook_failed"

// hookCheck asks the decision hooks about an approval request before the
// rules and the card: what they decided as the request's RuleCheck (By
// "hook"), or nil when they ask (none set, none decided, one failed, or
// the clamp turned an approval into ask), and the rules go on.
func (k *asker) hookCheck(ctx context.Context, r *relay, u *conversation.UpstreamItem, it conversation.Item) *conversation.RuleCheck {
	d := k.askHooks(ctx, r, u, it)
	if d.Decision != hooks.Approve && d.Decision != hooks.Deny {
		return nil
	}
	ref := &conversation.HookRef{Scope: d.Hook, Reason: d.Reason}
	if d.Hook == hooks.HookServer {
		ref.ServerLabel = u.ServerLabel
	}
	return &conversation.RuleCheck{By: ByHook, Decision: string(d.Decision), Hook: ref, Clamped: d.Clamped}
}

// askHooks puts an approval request to the decision hooks. The hook is
// sent the arguments redacted as the card shows them (it.Arguments): it
// decides in the person's place and sees what they would see, and a secret
// in the arguments never leaves for one more system. Whatever goes wrong
// asks; a hook that failed leaves a notice saying what went wrong.
func (k *asker) askHooks(ctx context.Context, r *relay, u *conversation.UpstreamItem, it conversation.Item) policy.HookDecision {
	t := r.t
	d, err := k.policies.Decisions.ByHooks(ctx, t.user, policy.HookCall{Server: u.ServerLabel, Tool: u.Name,
		Arguments: it.Arguments, Redacted: it.Redacted, ConversationID: t.conv.ID, ApprovalRequestID: u.ID})
	if err != nil {
		k.log.WarnContext(ctx, "the decision hooks could not be read, so the call asks", "conversation_id", t.conv.ID,
			"approval_request_id", u.ID, "error", err)
		d = policy.HookDecision{Decision: hooks.Ask, Errors: []string{"the decision hooks' settings could not be read"}}
	}
	if len(d.Errors) > 0 {
		r.notice(conversation.Notice{Code: NoticeDecisionHookFailed, ServerLabel: u.ServerLabel,
			Message: "A decision hook could not decide " + u.Name + " (" + strings.Join(d.Errors, "; ") + "), so it counts as ask."})
	}
	return d
}

// hookReason is the reason recorded (and, for a denial, sent upstream to
// the model) for a request a hook answered: "Approved by hook (server
// weather)", "Denied by hook (workspace): <the hook's reason>".
func hookReason(verb string, c *conversation.RuleCheck) string {
	var b strings.Builder
	b.WriteString(verb + " by hook (")
	if c.Hook.Scope == hooks.HookServer {
		b.WriteString("server " + c.Hook.ServerLabel)
	} else {
		b.WriteString("workspace")
	}
	b.WriteString(")")
	if c.Hook.Reason != "" {
		b.WriteString(": " + c.Hook.Reason)
	}
	if c.Clamped {
		b.WriteString("; the hook approved, but the tool is blocked, so it was denied")
	}
	return b.String()
}
