package engine

import (
	"context"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/conversation/eventlog"
	"github.com/toolgate/toolgate/internal/conversation/record"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/policy"
)

// itemWriter stores a turn's transcript items with the events that tell
// them, in one transaction each (one commit for the two).
type itemWriter struct {
	t   *Turn
	log *eventlog.TurnLog
	ctx context.Context // for writes: they happen even when the turn is cancelled
}

// storeItem appends it to the transcript (a finished call together with
// its receipt) and its item.done event to the log, in one transaction, and
// relays the event.
func (w itemWriter) storeItem(it conversation.Item) (stored conversation.Item, err error) {
	err = w.withEvents(func(repo conversation.Repo) ([]namedEvent, error) {
		var err error
		stored, err = w.appendItem(repo, it)
		return []namedEvent{{conversation.EventNameItem, conversation.ItemEvent{Item: stored}}}, err
	})
	return stored, err
}

// withEvents runs fn in one transaction with the events it returns, stored
// by the turn's log after what fn stored: one commit for the two, after
// every delta the turn sent. Once committed, the events go to the streams
// and the observer.
func (w itemWriter) withEvents(fn func(conversation.Repo) ([]namedEvent, error)) error {
	t, s := w.t, w.t.s
	w.log.Flush()
	var named []namedEvent
	var evs []conversation.NewEvent
	var last int64
	s.hub.Begin(t.conv.ID)
	err := s.store.Tx(w.ctx, func(repo conversation.Repo) error {
		var err error
		if named, err = fn(repo); err != nil {
			return err
		}
		evs = encodeAll(named)
		last, err = w.log.Put(w.ctx, repo, evs)
		return err
	})
	if err != nil || last == 0 {
		s.hub.End(t.conv.ID)
		return err
	}
	s.hub.Publish(t.conv.ID, eventlog.Stored(t.id, last, evs))
	for _, e := range named {
		w.log.Observe(e.name, e.data)
	}
	return nil
}

// appendItem appends it to the transcript in repo, a finished call with its
// receipt (a call through the MCP face has its receipt from the face).
func (w itemWriter) appendItem(repo conversation.Repo, it conversation.Item) (conversation.Item, error) {
	t, s, ctx := w.t, w.t.s, w.ctx
	if it.Type != conversation.ItemCall || it.Interrupted {
		return repo.Conversations.AppendItem(ctx, t.conv.ID, it)
	}
	linked, err := s.keeper.LinkCall(ctx, repo, t.conv.ID, t.id, &it)
	if err != nil {
		return conversation.Item{}, err
	}
	stored, err := repo.Conversations.AppendItem(ctx, t.conv.ID, it)
	if err != nil || linked {
		return stored, err
	}
	return stored, s.keeper.RecordCall(ctx, repo, t.user.ID, t.user.Email, t.conv.ID, it)
}

// itemOf is the transcript item of a finished output item of response;
// false for the types a transcript does not keep. Arguments are redacted;
// groups (the request's) say why a call ran.
func itemOf(u *conversation.UpstreamItem, response string, groups []policy.ServerTools) (conversation.Item, bool) {
	it := conversation.Item{Type: u.Type, ID: u.ID, ResponseID: response, ServerLabel: u.ServerLabel, UpstreamLabel: u.UpstreamLabel}
	switch u.Type {
	case conversation.ItemMessage:
		it.Text = u.Text
	case conversation.ItemListTools:
		it.Tools, it.ListError = u.Tools, u.ListError
	case conversation.ItemCall:
		it.Name, it.Output, it.CallError, it.ApprovalRequestID = u.Name, u.Output, u.CallError, u.ApprovalID
		it.Arguments, it.Redacted = conversation.Redact(u.Arguments)
		it.ArgumentsSHA256 = record.Digest([]byte(u.Arguments))
		if _, sha, err := gateway.ArgumentsDigest([]byte(u.Arguments)); err == nil {
			it.CanonicalSHA256 = sha
		}
		it.AllowedBy = allowedBy(groups, u)
	case conversation.ItemApprovalRequest:
		it.Name = u.Name
		it.Arguments, it.Redacted = conversation.Redact(u.Arguments)
	default:
		return conversation.Item{}, false
	}
	return it, true
}
