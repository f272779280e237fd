package engine

import (
	"context"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/conversation/record"

	"github.com/toolgate/toolgate/internal/apperr"
)

// fail ends the turn with an error event.
func (r *relay) fail(e conversation.TurnError) {
	r.end(e, conversation.EventNameError, conversation.ErrorEvent(e))
}

// end records how the turn ended without completing: an error item in the
// transcript, after the calls that began and never finished (interrupted)
// and the text of messages cut short; the approval requests it made are
// superseded, since a
// response that did not complete cannot be continued; the conversation's
// last response stays where it was.
//
// When the end cannot be stored (the database went away mid-turn), the
// whole of it is kept in memory and stored as soon as the database is
// back (keepEnding): the items the turn could not store (a call that ran,
// with its output and receipt), what the provider's response read back
// holds, how the answers it carried ended, the error item and the events.
func (r *relay) end(e conversation.TurnError, terminal string, data any) {
	t, s := r.t, r.t.s
	_ = r.held.flush(r) // one that fails is in r.unstored: the end stores it
	// The answers reached the provider in a response whose end was not
	// seen, or the provider's answer could not be stored: read it back
	// (outside the transaction) to learn what ran.
	readBack := r.response != "" && r.delivery != deliveryFinished && (len(t.answerIDs) > 0 || e.Code == conversation.CodeStorageFailed)
	var sr *conversation.StoredResponse
	if readBack {
		sr = s.keeper.ReadBack(r.store, r.response)
	}
	r.log.Flush() // the terminal event comes after every delta the turn stored
	res, err := r.storeWhole(r.store, e, terminal, data, sr)
	for _, d := range res.decided {
		r.log.Observe(conversation.EventNameDecision, d)
	}
	r.log.Observe(terminal, res.lastData)
	if res.gone && err == nil {
		return // deleted, or taken over by another replica, which ended it
	}
	if err != nil {
		// The conversation must not stay marked as streaming, and what the
		// turn learnt must not be lost: the whole end is stored once the
		// database is back, the response read back again if it was not.
		s.keepEnding(r.store, t.conv.ID, t.id, func(ctx context.Context) error {
			if readBack && sr == nil {
				sr = s.keeper.ReadBack(ctx, r.response)
			}
			_, err := r.storeWhole(ctx, e, terminal, data, sr)
			return err
		}, err)
		return
	}
	s.hub.Poke(t.conv.ID, false)
}

// ended is what storeEnd stored.
type ended struct {
	decided  []conversation.DecisionEvent
	lastData any
	gone     bool // the turn no longer runs in the conversation: nothing was written
}

// storeWhole stores the turn's end with what it kept and what was read
// back. When the database answers but refuses that (a write that can never
// succeed, not an outage), the end is stored without them, so the
// conversation does not stay streaming for good.
func (r *relay) storeWhole(ctx context.Context, e conversation.TurnError, terminal string, data any, sr *conversation.StoredResponse) (ended, error) {
	res, err := r.storeEnd(ctx, e, terminal, data, sr, true)
	if err != nil && apperr.KindOf(err) != apperr.Unavailable && (sr != nil || len(r.unstored) > 0) {
		r.t.s.log.WarnContext(ctx, "storing the end of a turn with what it received failed; storing the end alone",
			"conversation_id", r.t.conv.ID, "turn_id", r.t.id, "error", err)
		res, err = r.storeEnd(ctx, e, terminal, data, nil, false)
	}
	return res, err
}

// storeEnd writes the turn's end, in one transaction: see end. kept: with
// the items the turn received and could not store.
func (r *relay) storeEnd(ctx context.Context, e conversation.TurnError, terminal string, data any, sr *conversation.StoredResponse, kept bool) (ended, error) {
	s := r.t.s
	var res ended
	res.lastData = data
	err := s.store.Tx(ctx, func(repo conversation.Repo) error {
		res = ended{lastData: data}
		if still, err := r.t.stillOursCtx(ctx, repo); err != nil || !still {
			res.gone = true
			return err
		}
		return r.writeEnd(ctx, repo, e, terminal, data, sr, kept, &res)
	})
	return res, err
}

// writeEnd is storeEnd's transaction once the turn is still ours: store
// what the turn kept and what the response read back holds, supersede the
// requests it asked, keep what it left unfinished, settle the answers it
// carried, and store its end with its events. res gets what was stored.
func (r *relay) writeEnd(ctx context.Context, repo conversation.Repo, e conversation.TurnError, terminal string, data any, sr *conversation.StoredResponse, kept bool,
	res *ended) error {
	t, s := r.t, r.t.s
	var evs []conversation.NewEvent
	stored := map[string]bool{}
	var err error
	if kept {
		if evs, stored, err = r.storeKept(ctx, repo); err != nil {
			return err
		}
	}
	st, more, err := s.keeper.ApplyReadBack(ctx, repo, t.user.ID, t.conv.ID, sr, r.groups)
	if err != nil {
		return err
	}
	evs = append(evs, more...)
	for id := range stored {
		st.Known[id] = true
	}
	e = st.Explain(e)
	if _, ok := data.(conversation.TurnError); ok {
		res.lastData = e // an error event says how the turn ended, read-back included
	}
	last := mustEvent(terminal, res.lastData)
	if len(r.asked) > 0 && !st.Adopted {
		if err := s.decider.supersedeAsked(ctx, r, repo, e.Code); err != nil {
			return err
		}
	}
	if err := r.keepUnfinished(ctx, repo, st.Known); err != nil {
		return err
	}
	if res.decided, err = r.settleSent(ctx, repo, e, st); err != nil {
		return err
	}
	if _, err := repo.Conversations.AppendItem(ctx, t.conv.ID, conversation.Item{Type: conversation.ItemError, ID: newID("err_"), ResponseID: r.response, Error: &e}); err != nil {
		return err
	}
	if err := repo.Turns.End(ctx, t.conv.ID, t.id, st.LastResponse()); err != nil {
		return err
	}
	for _, d := range res.decided {
		evs = append(evs, mustEvent(conversation.EventNameDecision, d))
	}
	_, err = r.log.Put(ctx, repo, append(evs, last))
	return err
}

// supersedeAsked closes as superseded the requests this response asked
// that are still pending: it did not complete (code says how it ended).
func (dc *decider) supersedeAsked(ctx context.Context, r *relay, repo conversation.Repo, code string) error {
	t, s := r.t, r.t.s
	aps, err := repo.Approvals.List(ctx, t.user.ID, t.conv.ID, r.asked, true)
	if err != nil {
		return err
	}
	now := s.now()
	reason := "The response that asked did not complete (" + code + "), so this request can no longer be answered."
	for _, a := range aps {
		if a.State == conversation.Pending {
			a.State, a.DecidedAt, a.DecisionReason = conversation.Superseded, &now, &reason
			if err := repo.Approvals.Decide(ctx, t.user.ID, a); err != nil {
				return err
			}
			if err := s.keeper.AuditClosed(r.store, repo, a, conversation.Pending, record.ClosedByTurnEnd, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// keepUnfinished stores what the turn left unfinished and known (the
// response read back, the items kept) does not say: calls that may or may
// not have run as interrupted, then messages cut short as partial.
func (r *relay) keepUnfinished(ctx context.Context, repo conversation.Repo, known map[string]bool) error {
	t := r.t
	for _, u := range r.running { // calls that may or may not have run
		if known[u.ID] {
			continue // the response read back (or the item kept) says how it ended
		}
		if _, err := repo.Conversations.AppendItem(ctx, t.conv.ID, r.interrupted(u)); err != nil {
			return err
		}
	}
	for id, text := range r.texts { // what the browser saw of a message cut short
		if known[id] {
			continue
		}
		if _, err := repo.Conversations.AppendItem(ctx, t.conv.ID, conversation.Item{Type: conversation.ItemMessage, ID: id, ResponseID: r.response, Text: text.String(), Partial: true}); err != nil {
			return err
		}
	}
	return nil
}

// storeKept stores, in the transaction that ends the turn, the items the
// turn received whole but could not store (the database failed): a call
// with its output and receipt, a message. It returns their item events and
// the ids of the items the transcript now holds.
func (r *relay) storeKept(ctx context.Context, repo conversation.Repo) ([]conversation.NewEvent, map[string]bool, error) {
	t, s := r.t, r.t.s
	kept := map[string]bool{}
	if len(r.unstored) == 0 {
		return nil, kept, nil
	}
	items, err := repo.Conversations.Items(ctx, t.user.ID, t.conv.ID)
	if err != nil {
		return nil, nil, err
	}
	have := map[string]bool{}
	for _, it := range items {
		have[it.ID] = true
	}
	var evs []conversation.NewEvent
	for _, it := range r.unstored {
		kept[it.ID] = true
		if have[it.ID] {
			continue
		}
		linked, err := s.keeper.LinkCall(ctx, repo, t.conv.ID, t.id, &it)
		if err != nil {
			return nil, nil, err
		}
		stored, err := repo.Conversations.AppendItem(ctx, t.conv.ID, it)
		if err != nil {
			return nil, nil, err
		}
		if linked {
			evs = append(evs, mustEvent(conversation.EventNameItem, conversation.ItemEvent{Item: stored}))
			continue
		}
		if err := s.keeper.RecordCall(ctx, repo, t.user.ID, t.user.Email, t.conv.ID, it); err != nil {
			return nil, nil, err
		}
		evs = append(evs, mustEvent(conversation.EventNameItem, conversation.ItemEvent{Item: stored}))
	}
	return evs, kept, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
