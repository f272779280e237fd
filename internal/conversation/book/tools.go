package book

import (
	"context"
	"strings"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/policy"
)

// Per conversation, the person chooses which servers and tools are offered
// at all. The choice (Conversation.Tools) is applied to every request the
// conversation's turns build (requestTools): a deselected server is not
// sent, a deselected tool is left out of its server's allowed_tools, so
// upstream never offers it to the model and it cannot run. Servers the
// choice does not name offer everything their policies allow.

// Tools is a conversation's choice of tools with what it is chosen from
// (the API's ConversationTools).
type Tools struct {
	policy.Selection
	// Available are the enabled servers whose policies offer the caller
	// something, with their tools and what the conversation offers of them.
	Available []policy.ServerChoice `json:"available"`
}

// Tools returns the caller's conversation's choice of servers and tools.
func (b *Conversations) Tools(ctx context.Context, id string) (Tools, error) {
	u, err := conversation.Caller(ctx)
	if err != nil {
		return Tools{}, err
	}
	c, err := b.store.Repo().Conversations.Get(ctx, u.ID, id, false)
	if err != nil {
		return Tools{}, err
	}
	groups, err := b.policies.Tools.Choices(ctx, u.ID)
	if err != nil {
		return Tools{}, err
	}
	return Tools{Selection: c.Tools, Available: c.Tools.Choices(groups)}, nil
}

// SetTools replaces the caller's conversation's choice of servers and tools.
// A server or tool Toolgate does not know is refused (unknown_server,
// unknown_tool) and nothing changes. A turn running now keeps the tools its
// request offered; the next request uses the new choice.
func (b *Conversations) SetTools(ctx context.Context, id string, sel policy.Selection) (Tools, error) {
	u, err := conversation.Caller(ctx)
	if err != nil {
		return Tools{}, err
	}
	// Another user's conversation is not found before anything about the choice is said.
	if _, err := b.store.Repo().Conversations.Get(ctx, u.ID, id, false); err != nil {
		return Tools{}, err
	}
	groups, err := b.policies.Tools.Choices(ctx, u.ID)
	if err != nil {
		return Tools{}, err
	}
	if err := sel.Check(groups); err != nil {
		return Tools{}, err
	}
	c, err := b.store.Repo().Conversations.SetTools(ctx, u.ID, id, sel.Normalized())
	if err != nil {
		return Tools{}, err
	}
	return Tools{Selection: c.Tools, Available: c.Tools.Choices(groups)}, nil
}

// CreateWith starts an empty conversation that offers the tools chosen
// (nil: all), so the choice can be made before the first message.
func (b *Conversations) CreateWith(ctx context.Context, title string, tools *policy.Selection) (conversation.Conversation, error) {
	u, err := conversation.Caller(ctx)
	if err != nil {
		return conversation.Conversation{}, err
	}
	if err := validTitle(title); err != nil {
		return conversation.Conversation{}, err
	}
	if tools == nil {
		return b.store.Repo().Conversations.Create(ctx, u.ID, conversation.NewID("conv_"), strings.TrimSpace(conversation.StripNUL(title)))
	}
	groups, err := b.policies.Tools.Choices(ctx, u.ID)
	if err != nil {
		return conversation.Conversation{}, err
	}
	if err := tools.Check(groups); err != nil {
		return conversation.Conversation{}, err
	}
	var c conversation.Conversation
	err = b.store.Tx(ctx, func(r conversation.Repo) error {
		created, err := r.Conversations.Create(ctx, u.ID, conversation.NewID("conv_"), strings.TrimSpace(conversation.StripNUL(title)))
		if err != nil {
			return err
		}
		c, err = r.Conversations.SetTools(ctx, u.ID, created.ID, tools.Normalized())
		return err
	})
	return c, err
}
