package engine

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/toolgate/toolgate/internal/conversation"

	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/rules"
)

// allowedBy says why a call ran, as the request built from groups treated it.
func allowedBy(groups []policy.ServerTools, u *conversation.UpstreamItem) *conversation.AllowedBy {
	if u.ApprovalID != "" {
		return &conversation.AllowedBy{Kind: "approval"}
	}
	p, src := lookup(groups, u.ServerLabel, u.Name)
	if src == policy.FromConversation || src == policy.FromGrant {
		return grantAllowedBy(groups, u.ServerLabel, u.Name)
	}
	return &conversation.AllowedBy{Kind: "policy", Policy: p, Source: src}
}

func lookup(groups []policy.ServerTools, server, tool string) (policy.Policy, policy.Source) {
	for _, g := range groups {
		if g.Server.Label == server {
			return g.Lookup(tool)
		}
	}
	return policy.Always, policy.FromUnknown
}

// askReason says why a tool asked, as the request built from the groups
// treated it: its policy's source and, where the policy layer knows, the
// reason (not read-only, new, changed with what changed).
func (k *asker) askReason(r *relay, server, tool string) conversation.AskReason {
	_, src := lookup(r.groups, server, tool)
	if src == policy.FromConversation { // allowed here, yet upstream asked: say so honestly
		src = policy.FromUnknown
	}
	why := conversation.AskReason{Policy: policy.Always, Source: src}
	for _, g := range r.groups {
		if g.Server.Label == server {
			if ab := g.AsksBecause(tool); ab != nil {
				why.Reason, why.Fields = ab.Reason, ab.Fields
			}
		}
	}
	return why
}

// askLock is the level of an admin's lock at Ask on the tool, as the
// request built from the groups treated it; nil when it is not locked.
func (k *asker) askLock(r *relay, server, tool string) *policy.Source {
	for _, g := range r.groups {
		if g.Server.Label == server {
			if l := g.AskLock(tool); l != "" {
				return &l
			}
		}
	}
	return nil
}

func (r *relay) approval(ctx context.Context, u *conversation.UpstreamItem, it conversation.Item) error {
	t, s := r.t, r.t.s
	a := conversation.Approval{ID: u.ID, ConversationID: t.conv.ID, ResponseID: r.response, ServerLabel: u.ServerLabel,
		UpstreamLabel: u.UpstreamLabel, ToolName: u.Name, Reason: s.asker.askReason(r, u.ServerLabel, u.Name),
		State: conversation.Pending, RequestedAt: s.now(), ServerTTLSeconds: r.serverTTL(u.ServerLabel)}
	a.StoredArguments = string(mustRedacted(u.Arguments))
	a.AskLock = s.asker.askLock(r, u.ServerLabel, u.Name)
	s.asker.cardWords(ctx, &a)
	a.Annotations, a.DefinitionDigest = s.asker.annotations(r, u.ServerLabel, u.Name)
	// Bound to the real arguments: a call through the MCP face runs on
	// this approval only with arguments of this digest.
	if _, sha, err := gateway.ArgumentsDigest([]byte(u.Arguments)); err == nil {
		a.ArgumentsSHA256 = sha
	}
	a.Corrects = s.asker.corrects(r, u.ServerLabel, u.Name, a.StoredArguments)
	// A decision hook is asked first; when it approves or denies, the rules
	// are not consulted (hookdecide.go).
	if a.Rules = s.asker.hookCheck(ctx, r, u, it); a.Rules == nil {
		a.Rules = s.asker.checkRules(r, u)
	}
	auto := a.Rules != nil && a.Rules.By != ""
	if auto {
		// Answered without a card: by a rule, or by the policy when no rule held.
		now, reason, scope := s.now(), autoReason(a.Rules, a.ToolName, a.ServerLabel), conversation.ScopeOnce
		a.State, a.DecidedAt, a.DecisionReason, a.Scope = conversation.Denied, &now, &reason, &scope
		if a.Rules.Decision == string(rules.Approve) {
			a.State = conversation.Approved
		}
	} else if a.Rules != nil {
		a.Reason.Reason = policy.ReasonRules
	}
	if !auto {
		// Asked of a person: stored with what the provider sends next,
		// mostly the response's end (helditems.go).
		r.held.holdApproval(a, it)
		r.asked = append(r.asked, a.ID)
		return nil
	}
	if err := r.w.withEvents(func(repo conversation.Repo) ([]namedEvent, error) { return r.storeApproval(repo, a, it) }); err != nil {
		return err
	}
	r.auto = append(r.auto, a.ID)
	return nil
}

// storeApproval stores approval request a in repo with its transcript item
// it and, when a rule or hook answered it, the decision and its audit
// entry; it returns the events that tell it, relayed once committed: an
// auto-answered request as its item and decision, any other as
// approval.required.
func (r *relay) storeApproval(repo conversation.Repo, a conversation.Approval, it conversation.Item) ([]namedEvent, error) {
	t, s := r.t, r.t.s
	auto := a.Rules != nil && a.Rules.By != ""
	if err := repo.Approvals.Insert(r.store, a); err != nil {
		return nil, err
	}
	if auto {
		if err := repo.Approvals.Decide(r.store, t.user.ID, a); err != nil {
			return nil, err
		}
		after, _ := json.Marshal(map[string]any{"approval_request_id": a.ID, "conversation_id": a.ConversationID,
			"state": a.State, "reason": a.DecisionReason, "rules": a.Rules, "by": a.Rules.By})
		before, _ := json.Marshal(map[string]any{"approval_request_id": a.ID, "state": conversation.Pending})
		if err := s.policies.Decisions.Audit(r.store, repo, policy.AuditEntry{Actor: "toolgate", Action: policy.ActionDecision,
			ServerLabel: &a.ServerLabel, ToolName: &a.ToolName, Before: before, After: after,
			ConversationID: a.ConversationID}); err != nil {
			return nil, err
		}
	}
	stored, err := repo.Conversations.AppendItem(r.store, t.conv.ID, it)
	if err != nil {
		return nil, err
	}
	if auto {
		p := present(a)
		stored.Approval = &p
		ev := decisionEvent(a, nil)
		ev.PendingApprovalIDs = nonNil(slices.Clone(r.asked))
		return []namedEvent{{conversation.EventNameItem, conversation.ItemEvent{Item: stored}}, {conversation.EventNameDecision, ev}}, nil
	}
	return []namedEvent{{conversation.EventNameApproval, s.keeper.WithExpiry(present(a))}}, nil
}

// mustRedacted is raw with its secrets hidden, as an approval request stores
// its arguments: Toolgate never needs the originals again (upstream keeps
// them and runs an approved call with them), so it does not keep them.
func mustRedacted(raw string) []byte {
	b, _ := conversation.Redact(raw)
	return b
}

// annotations are what the tool declared, as discovery stored it: shown to
// the person deciding, with the definition's digest (what an approval is
// given for). A tool Toolgate has not discovered declared nothing.
func (k *asker) annotations(r *relay, server, tool string) ([]byte, string) {
	t, ok, err := k.policies.Tools.Discovered(r.store, server, tool)
	if err == nil && ok {
		if b, err := json.Marshal(t.Annotations); err == nil {
			return b, t.Digest()
		}
	}
	return []byte("{}"), ""
}
