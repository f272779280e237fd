package engine

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/rules"
)

// Who answers an approval request without a card (RuleCheck.By).
const (
	ByRule   = "rule"
	ByPolicy = "policy"
	ByHook   = "hook"
)

// maxAutoFollowUps bounds how many follow-ups one turn sends on its own
// for requests that rules answered: a model that keeps asking for calls
// the rules approve cannot keep a turn (and its bill) running forever.
// Past it the turn ends; the decisions are kept and go upstream with the
// person's next message.
const maxAutoFollowUps = 10

// NoticeAutoLimit says a turn stopped answering by rules on its own.
const NoticeAutoLimit = "auto_follow_up_limit"

// checkRules is what the argument rules make of an approval request: nil
// when no rules apply to the tool. Rules see the call's real arguments
// (Toolgate stores only the redacted ones). A rule that cannot be
// evaluated, or rules that cannot be read, ask: they never approve.
func (k *asker) checkRules(r *relay, u *conversation.UpstreamItem) *conversation.RuleCheck {
	var rt policy.RuledTool
	ruled := false
	for _, g := range r.groups {
		if g.Server.Label == u.ServerLabel {
			rt, ruled = g.HasRules(u.Name)
		}
	}
	if !ruled {
		return nil
	}
	var args map[string]any
	if err := json.Unmarshal([]byte(u.Arguments), &args); err != nil {
		args = nil // not a JSON object: rules over args fail to evaluate, so they ask
	}
	d, err := k.policies.Decisions.ByRules(r.store, k.store.Repo(), r.t.user, u.ServerLabel, u.Name, args)
	if err != nil {
		return &conversation.RuleCheck{Decision: string(rules.Ask), Error: "the rules could not be read: " + err.Error()}
	}
	c := &conversation.RuleCheck{Checked: d.Checked, Decision: string(d.Decision), Error: d.Error, Clamped: d.Clamped}
	if d.Scope != "" {
		own := d.Decision
		if d.Clamped {
			own = rules.Approve // only an approving rule is clamped
		}
		c.Rule = &conversation.RuleRef{Scope: string(d.Scope), Index: d.Index, When: d.When, Decision: string(own), Reason: d.Reason}
		switch d.Scope {
		case rules.ScopeTool:
			c.Rule.ServerLabel, c.Rule.ToolName = u.ServerLabel, u.Name
		case rules.ScopeServer:
			c.Rule.ServerLabel = u.ServerLabel
		}
	}
	switch {
	case c.Error != "":
		c.Decision = string(rules.Ask)
	case c.Rule != nil && (d.Decision == rules.Approve || d.Decision == rules.Deny):
		c.By = ByRule
	case c.Rule == nil && rt.Policy == policy.Never:
		// No rule held: the tool's own policy lets it run without asking.
		c.By, c.Decision, c.Policy, c.Source = ByPolicy, string(rules.Approve), rt.Policy, rt.Source
		if rt.Grant != nil { // the policy is never because of a grant: the call names it
			c.GrantID, c.GrantExpiresAt = rt.Grant.ID, rt.Grant.ExpiresAt
		}
	}
	return c
}

// autoReason is the reason recorded (and, for a denial, sent upstream to
// the model) for a request answered without a card.
func autoReason(c *conversation.RuleCheck, tool, server string) string {
	if c.By == ByPolicy && c.GrantID != "" {
		return fmt.Sprintf("No argument rule held, and grant %s (from %s) lets %s on %s run without asking.",
			c.GrantID, c.Source, tool, server)
	}
	if c.By == ByPolicy {
		return fmt.Sprintf("No argument rule held, and the policy of %s on %s (%s, from %s) lets it run without asking.",
			tool, server, c.Policy, c.Source)
	}
	verb := "Approved"
	if c.Decision == string(rules.Deny) {
		verb = "Denied"
	}
	if c.By == ByHook {
		return hookReason(verb, c)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s by rule %d of %s: %s", verb, c.Rule.Index+1, ruleListName(c.Rule), c.Rule.When)
	if c.Rule.Reason != "" {
		fmt.Fprintf(&b, " (%s)", c.Rule.Reason)
	}
	if c.Clamped {
		b.WriteString("; the rule approved, but the tool is blocked, so it was denied")
	}
	return b.String()
}

func ruleListName(r *conversation.RuleRef) string {
	switch r.Scope {
	case string(rules.ScopeTool):
		return fmt.Sprintf("the rules of %s on %s", r.ToolName, r.ServerLabel)
	case string(rules.ScopeServer):
		return fmt.Sprintf("the rules of server %s", r.ServerLabel)
	}
	return "the workspace rules"
}

// ruleAllowedBy says why a call that answered approval request id ran when
// no person decided it: the rule that approved it, or the policy that let
// it run once no rule held. Nil when a person decided (or the request is
// not known).
func (k *asker) ruleAllowedBy(r *relay, id string) *conversation.AllowedBy {
	t := r.t
	aps, err := k.store.Repo().Approvals.List(r.store, t.user.ID, t.conv.ID, []string{id}, false)
	if err != nil || len(aps) != 1 || aps[0].Rules == nil {
		return nil
	}
	return checkAllowedBy(aps[0].Rules)
}

// checkAllowedBy is what let a call run on a request that c (the rules, a
// hook or the policy) answered without a card; nil when the person did.
func checkAllowedBy(c *conversation.RuleCheck) *conversation.AllowedBy {
	switch c.By {
	case ByRule:
		return &conversation.AllowedBy{Kind: "rule", Rule: c.Rule}
	case ByPolicy:
		if c.GrantID != "" {
			kind := "grant"
			if c.Source == policy.FromConversation {
				kind = "conversation"
			}
			return &conversation.AllowedBy{Kind: kind, GrantID: c.GrantID, ExpiresAt: c.GrantExpiresAt}
		}
		return &conversation.AllowedBy{Kind: "policy", Policy: c.Policy, Source: c.Source}
	case ByHook:
		return &conversation.AllowedBy{Kind: "hook", Hook: c.Hook}
	}
	return nil
}
