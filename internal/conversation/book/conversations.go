package book

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/conversation"
)

// Create starts an empty conversation.
func (b *Conversations) Create(ctx context.Context, title string) (conversation.Conversation, error) {
	u, err := conversation.Caller(ctx)
	if err != nil {
		return conversation.Conversation{}, err
	}
	if err := validTitle(title); err != nil {
		return conversation.Conversation{}, err
	}
	return b.store.Repo().Conversations.Create(ctx, u.ID, conversation.NewID("conv_"), strings.TrimSpace(conversation.StripNUL(title)))
}

// List returns the caller's conversations, most recently active first.
func (b *Conversations) List(ctx context.Context, limit int) ([]conversation.Conversation, error) {
	u, err := conversation.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = 100
	}
	if limit > 500 {
		return nil, apperr.Invalidf("invalid_limit", "limit", "limit must be between 1 and 500 (got %d)", limit)
	}
	cs, err := b.store.Repo().Conversations.List(ctx, u.ID, limit)
	ttl := b.turns.ApprovalTTL()
	for i := range cs {
		cs[i].PendingExpiresAt = b.pendingExpiry(cs[i], ttl)
	}
	return cs, err
}

// pendingExpiry is when the last of c's pending requests runs out of time
// (Conversation.PendingExpiresAt); nil when none is pending or one never
// expires.
func (b *Conversations) pendingExpiry(c conversation.Conversation, ttl time.Duration) *time.Time {
	pt := c.PendingTimes
	if c.PendingCount == 0 || pt.Never || (pt.DefaultLast != nil && ttl <= 0) {
		return nil
	}
	var last *time.Time
	if pt.DefaultLast != nil {
		at := pt.DefaultLast.Add(ttl)
		last = &at
	}
	if pt.ServerLast != nil && (last == nil || pt.ServerLast.After(*last)) {
		at := *pt.ServerLast
		last = &at
	}
	return last
}

// Rename changes a conversation's title.
func (b *Conversations) Rename(ctx context.Context, id, title string) (conversation.Conversation, error) {
	u, err := conversation.Caller(ctx)
	if err != nil {
		return conversation.Conversation{}, err
	}
	if err := validTitle(title); err != nil {
		return conversation.Conversation{}, err
	}
	return b.store.Repo().Conversations.Rename(ctx, u.ID, id, strings.TrimSpace(conversation.StripNUL(title)))
}

// Get returns the transcript: every item in order, approval requests with
// their current state, and the pending ones.
func (b *Conversations) Get(ctx context.Context, id string) (conversation.Transcript, error) {
	var t conversation.Transcript
	u, err := conversation.Caller(ctx)
	if err != nil {
		return t, err
	}
	err = b.store.Tx(ctx, func(r conversation.Repo) error {
		var err error
		if t.Conversation, err = r.Conversations.Get(ctx, u.ID, id, false); err != nil {
			return err
		}
		if t.Items, err = r.Conversations.Items(ctx, u.ID, id); err != nil {
			return err
		}
		aps, err := r.Approvals.List(ctx, u.ID, id, nil, false)
		if err != nil {
			return err
		}
		calls, err := r.Calls.OfConversation(ctx, u.ID, id)
		if err != nil {
			return err
		}
		ranOn, byCall := b.indexCalls(calls)
		byID := map[string]*conversation.Approval{}
		t.Pending = []conversation.Approval{}
		for i := range aps {
			aps[i] = b.turns.Approval(aps[i])
			if c, ok := ranOn[aps[i].ID]; ok {
				aps[i].Call = &c
			}
			byID[aps[i].ID] = &aps[i]
			if aps[i].State == conversation.Pending {
				t.Pending = append(t.Pending, aps[i])
			}
		}
		attach(t.Items, byID, byCall)
		if t.Items == nil {
			t.Items = []conversation.Item{}
		}
		return nil
	})
	return t, err
}

// indexCalls indexes the face's records of a conversation's calls, shown
// (secrets hidden): by the approval request each ran on, and by id.
func (b *Conversations) indexCalls(calls []conversation.GatewayCall) (ranOn, byCall map[string]conversation.GatewayCall) {
	ranOn, byCall = map[string]conversation.GatewayCall{}, map[string]conversation.GatewayCall{}
	for _, c := range calls {
		shown := b.turns.Call(c)
		byCall[c.ID] = shown
		if c.ApprovalRequestID != nil {
			ranOn[*c.ApprovalRequestID] = shown
		}
	}
	return ranOn, byCall
}

// attach gives the transcript's items what they show: an approval request
// its approval (byID), a call that passed the MCP face its record (byCall).
func attach(items []conversation.Item, byID map[string]*conversation.Approval, byCall map[string]conversation.GatewayCall) {
	for i := range items {
		if items[i].Type == conversation.ItemApprovalRequest {
			items[i].Approval = byID[items[i].ID]
		}
		// A call that passed the MCP face carries the face's record as
		// it is now (its state, result, refusal).
		if c, ok := byCall[items[i].GatewayCallID]; ok && items[i].GatewayCallID != "" {
			items[i].Call = &c
		}
	}
}

// Delete removes a conversation. A turn running in it, on any replica, is
// cancelled first (waiting a while for it to record how it ended), and the
// conversation's open event streams end with conversation.deleted.
func (b *Conversations) Delete(ctx context.Context, id string) error {
	u, err := conversation.Caller(ctx)
	if err != nil {
		return err
	}
	// Only the owner's turn is cancelled: the lookup is scoped to the owner.
	conv, err := b.store.Repo().Conversations.Get(ctx, u.ID, id, false)
	if err != nil {
		return err
	}
	if conv.ActiveTurn != "" {
		if err := b.turns.Signal(ctx, conversation.Signal{Op: conversation.SignalCancel, ConversationID: id, Turn: conv.ActiveTurn}); err != nil {
			b.log.WarnContext(ctx, "signalling the replicas to cancel a turn failed", "conversation_id", id, "error", err)
		}
		b.turns.AwaitEnd(ctx, u.ID, id, 10*time.Second)
	}
	if err := b.store.Repo().Conversations.Delete(ctx, u.ID, id); err != nil {
		return err
	}
	if err := b.turns.Signal(ctx, conversation.Signal{Op: conversation.SignalDeleted, ConversationID: id}); err != nil {
		b.log.WarnContext(ctx, "signalling the replicas that a conversation was deleted failed", "conversation_id", id, "error", err)
	}
	return nil
}

func validTitle(t string) error {
	if utf8.RuneCountInString(t) > conversation.MaxTitleLen {
		return apperr.Invalidf("invalid_title", "title", "title must be at most %d characters", conversation.MaxTitleLen)
	}
	return nil
}
