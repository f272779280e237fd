package engine

import (
	"context"
	"fmt"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/policy"
)

// LayerWorkspace is the workspace's policy layer: a wider decision's
// policy_changed says so (tool_name "", server_label "" for the global
// default).
const LayerWorkspace = "workspace"

// widen makes the workspace default change an approving wider decision d
// on a asks for, in r (the decision's transaction): refused for a member
// (403 admin_only) and for a locked or blocked default, rolling the
// decision back with it.
func (dc *decider) widen(ctx context.Context, r conversation.Repo, u auth.User, a conversation.Approval, d conversation.Decision) (*conversation.PolicyChange, map[string]any, error) {
	label := a.ServerLabel
	if *d.Scope == conversation.ScopeEverything {
		label = ""
	}
	w, err := dc.policies.Decisions.WidenDefault(ctx, r, u, label)
	if err != nil {
		return nil, nil, err
	}
	audited := map[string]any{"default": "global", "default_before": w.Before, "default_changed": w.Changed}
	if label != "" {
		audited["default"] = "server"
	}
	return &conversation.PolicyChange{ServerLabel: label, Policy: string(policy.Never), Layer: LayerWorkspace}, audited, nil
}

// coversWider reports whether the wider decision c now lets a (pending in
// the same response) run without asking for u: on the same server (scope
// server) or anywhere (scope everything), its policy read in r, after the
// change, is never. A tool with its own policy, a lock, a block or the
// "ask for everything" switch keeps it asking: it stays pending.
func (dc *decider) coversWider(ctx context.Context, r conversation.Repo, u auth.User, c covering, a conversation.Approval) (bool, error) {
	if *c.d.Scope == conversation.ScopeServer && c.a.ServerLabel != a.ServerLabel {
		return false, nil
	}
	res, err := dc.policies.Decisions.ResolveIn(ctx, r, u.ID, a.ServerLabel, a.ToolName)
	return err == nil && res.Policy == policy.Never, err
}

// widerReason is what a request settled by a wider decision is told.
func widerReason(c covering) string {
	if *c.d.Scope == conversation.ScopeServer {
		return fmt.Sprintf("Covered by the decision to approve every tool of %s: its default policy is now to run without asking.", c.a.ServerLabel)
	}
	return "Covered by the decision to approve everything: the global default policy is now to run without asking."
}

// widerChoiceRefused is choice_not_allowed for a wider decision on a tool
// whose card an admin limited to choices without remember: a wider
// approval lasts, like remember, and goes further.
func widerChoiceRefused(a conversation.Approval, d conversation.Decision, c policy.ApprovalCard) error {
	return apperr.New(apperr.Forbidden, "choice_not_allowed",
		"an admin limited the choices for %s on server %s to %s, so approving with scope %q (which lasts, like remember, and goes further) is not one of them; decide with one of those; nothing was recorded",
		a.ToolName, a.ServerLabel, choiceList(c.Choices), *d.Scope)
}
