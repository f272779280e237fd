package decide

import (
	"context"
	"github.com/toolgate/toolgate/internal/policy"
	"strings"
)

// ApprovalCards lists a server's approval cards (the tools whose words or
// choices an admin set). Every signed-in user may read them: they say
// what a card will show.
func (s *Cards) ApprovalCards(ctx context.Context, label string) ([]policy.ApprovalCard, error) {
	if _, err := policy.Caller(ctx); err != nil {
		return nil, err
	}
	var out []policy.ApprovalCard
	err := s.store.Tx(ctx, func(r policy.Repo) error {
		if _, err := r.Servers.Get(ctx, label, false); err != nil {
			return err
		}
		var err error
		out, err = r.Cards.List(ctx, label)
		return err
	})
	return out, err
}

// SetApprovalCard sets a tool's words and choices, admins only, audited.
// Nil choices offer every choice.
func (s *Cards) SetApprovalCard(ctx context.Context, c policy.ApprovalCard) (policy.ApprovalCard, error) {
	u, err := policy.RequireAdmin(ctx, "approval cards")
	if err != nil {
		return policy.ApprovalCard{}, err
	}
	if err := policy.ValidateToolName("tool_name", c.ToolName); err != nil {
		return policy.ApprovalCard{}, err
	}
	if c.Text != nil && strings.TrimSpace(*c.Text) == "" {
		c.Text = nil
	}
	if err := c.Validate(); err != nil {
		return policy.ApprovalCard{}, err
	}
	err = s.store.Tx(ctx, func(r policy.Repo) error {
		if _, err := r.Servers.Get(ctx, c.ServerLabel, true); err != nil {
			return err
		}
		old, had, err := r.Cards.Get(ctx, c.ServerLabel, c.ToolName)
		if err != nil {
			return err
		}
		if c, err = r.Cards.Put(ctx, c, u.Email); err != nil {
			return err
		}
		var before any
		if had {
			before = cardAudit(old)
		}
		return policy.WriteAudit(ctx, r, u, policy.ActionApprovalCardSet, &c.ServerLabel, &c.ToolName, before, cardAudit(c))
	})
	return c, err
}

// DeleteApprovalCard removes a tool's words and choices (its card shows
// the arguments and every choice again), admins only, audited.
func (s *Cards) DeleteApprovalCard(ctx context.Context, label, tool string) error {
	u, err := policy.RequireAdmin(ctx, "approval cards")
	if err != nil {
		return err
	}
	return s.store.Tx(ctx, func(r policy.Repo) error {
		if _, err := r.Servers.Get(ctx, label, true); err != nil {
			return err
		}
		old, had, err := r.Cards.Get(ctx, label, tool)
		if err != nil || !had {
			return err
		}
		if err := r.Cards.Delete(ctx, label, tool); err != nil {
			return err
		}
		return policy.WriteAudit(ctx, r, u, policy.ActionApprovalCardDelete, &label, &tool, cardAudit(old), nil)
	})
}

func cardAudit(c policy.ApprovalCard) map[string]any {
	return map[string]any{"approval_text": c.Text, "choices": c.Choices}
}
