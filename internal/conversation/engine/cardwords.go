package engine

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/policy"
)

// cardWords gives a new approval request its tool's words, filled from the
// arguments as the card shows them (redacted: a secret stays
// "[redacted]"), and the choices its card offers (less what a lock at Ask
// forbids). When the card cannot be read the request still asks, with
// every choice the lock allows: the decision reads the choices again.
func (k *asker) cardWords(ctx context.Context, a *conversation.Approval) {
	c, err := k.policies.Decisions.Card(ctx, k.store.Repo(), a.ServerLabel, a.ToolName)
	if err != nil {
		k.log.WarnContext(ctx, "the tool's approval card could not be read, so it shows the arguments and every choice",
			"conversation_id", a.ConversationID, "approval_request_id", a.ID, "error", err)
	}
	if c.Text != nil {
		shown, _ := conversation.Redact(a.StoredArguments)
		text := policy.RenderApprovalText(*c.Text, json.RawMessage(shown))
		a.ApprovalText = &text
	}
	a.Choices = c.Choices
	if a.Choices == nil {
		a.Choices = policy.AllChoices()
	}
	if a.AskLock != nil {
		a.Choices = policy.LockedChoices(a.Choices)
	}
}

// choiceAllowed refuses a person's decision d on a when the tool's card,
// read (read, by the transaction's first round trip) or read again now in
// r, does not offer its choice (an admin limited the
// tool's choices): 403 choice_not_allowed, nothing recorded. A request
// settled by another decision (a grant or remember covering it) is not
// the person's choice and passes.
func (k *asker) choiceAllowed(ctx context.Context, r conversation.Repo, a conversation.Approval, d conversation.Decision, read *policy.ApprovalCard) error {
	if d.CoveredBy != "" {
		return nil
	}
	if read == nil {
		c, err := k.policies.Decisions.Card(ctx, r, a.ServerLabel, a.ToolName)
		if err != nil {
			return err
		}
		read = &c
	}
	c := *read
	ch := d.Choice()
	if c.Allows(ch) {
		return nil
	}
	if a.AskLock != nil && c.Choices != nil && slices.Contains(policy.LockedChoices(c.Choices), ch) {
		// The lock took the card's grants away and it offered Approve
		// once in their place (policy.LockedChoices).
		return nil
	}
	if d.Wider() {
		return widerChoiceRefused(a, d, c)
	}
	return apperr.New(apperr.Forbidden, "choice_not_allowed",
		"an admin limited the choices for %s on server %s to %s, so %s is not one of them; decide with one of those; nothing was recorded",
		a.ToolName, a.ServerLabel, choiceList(c.Choices), ch)
}

func choiceList(cs []policy.Choice) string {
	out := ""
	for i, c := range cs {
		if i > 0 {
			out += ", "
		}
		out += string(c)
	}
	return out
}
