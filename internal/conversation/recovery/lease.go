package recovery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/conversation/record"
	"github.com/toolgate/toolgate/internal/policy"
)

// ErrLeaseLost stops a turn whose lease this replica could not renew:
// another replica may have taken it over, so this one must stop.
var ErrLeaseLost = errors.New("this replica lost the turn's lease")

// InterruptedError is how a taken-over turn ends.
func InterruptedError(replica string) conversation.TurnError {
	return conversation.TurnError{Code: "interrupted", Retryable: true, Message: fmt.Sprintf(
		"the Toolgate replica running this turn (%s) stopped before it finished, so another replica closed it; what arrived before is kept, and a tool that had started may have run", replica)}
}

// Close closes a turn whose lease expired, in one transaction, from
// what its events say: calls that started and never finished are kept as
// interrupted, text cut short as partial, requests it asked are superseded,
// approvals it carried whose call was not seen become outcome_unknown,
// and an error item and event (interrupted) end it. When the provider took
// the answers it carried (their response's id came back), the response is
// read back first: what it holds is stored, approvals keep their state as
// its items say what ran, and a completed response becomes the
// conversation's last.
func (c *Closer) Close(ctx context.Context, rt conversation.RunningTurn) (bool, error) {
	e := InterruptedError(rt.LeaseOwner)
	sent, err := c.store.Repo().Approvals.Sent(ctx, rt.ConversationID, rt.Turn)
	if err != nil {
		return false, err
	}
	sentIn := record.SentResponse(sent)
	var groups []policy.ServerTools
	sr := c.keeper.ReadBack(ctx, sentIn)
	if sr != nil {
		groups = c.keeper.RequestGroups(ctx, rt.OwnerID, rt.ConversationID)
	}
	taken := false
	err = c.store.Tx(ctx, func(repo conversation.Repo) error {
		ok, err := repo.Leases.LockExpiredTurn(ctx, rt.ConversationID, rt.Turn)
		if err != nil || !ok {
			return err
		}
		taken = true
		return c.closeExpired(ctx, repo, rt, e, sentIn, sr, groups)
	})
	if err == nil && taken {
		c.poke(rt.ConversationID)
	}
	return taken && err == nil, err
}

// closeExpired is Close's transaction once the turn is locked: read what
// the turn's events say ran, store what the response read back holds,
// supersede the requests it asked, keep what it left unfinished, settle the
// approvals it carried, and store its end (interrupted).
func (c *Closer) closeExpired(ctx context.Context, repo conversation.Repo, rt conversation.RunningTurn, e conversation.TurnError, sentIn string,
	sr *conversation.StoredResponse, groups []policy.ServerTools) error {
	evs, err := repo.Events.OfTurn(ctx, rt.ConversationID, rt.Turn)
	if err != nil {
		return err
	}
	tr := replay(evs)
	tr.response = or(tr.response, sentIn)
	now := c.now()
	st, out, err := c.keeper.ApplyReadBack(ctx, repo, rt.OwnerID, rt.ConversationID, sr, groups)
	if err != nil {
		return err
	}
	e = st.Explain(e)
	if len(tr.asked) > 0 && !st.Adopted {
		superseded, err := c.supersedeAsked(ctx, repo, rt, tr.asked, now)
		if err != nil {
			return err
		}
		out = append(out, superseded...)
	}
	kept, err := tr.keepUnfinished(ctx, repo, rt.ConversationID, st.Known)
	if err != nil {
		return err
	}
	out = append(out, kept...)
	decided, err := c.settleCarried(ctx, repo, rt, tr, st, e.Code)
	if err != nil {
		return err
	}
	out = append(out, decided...)
	return storeInterrupted(ctx, repo, rt, tr.response, st.LastResponse(), e, out)
}

// supersedeAsked closes as superseded the requests a taken-over turn asked
// that are still pending: the response that asked did not complete.
func (c *Closer) supersedeAsked(ctx context.Context, repo conversation.Repo, rt conversation.RunningTurn, asked []string, now time.Time) ([]conversation.NewEvent, error) {
	aps, err := repo.Approvals.List(ctx, rt.OwnerID, rt.ConversationID, asked, true)
	if err != nil {
		return nil, err
	}
	var out []conversation.NewEvent
	reason := "The response that asked did not complete (interrupted), so this request can no longer be answered."
	for _, a := range aps {
		if a.State == conversation.Pending {
			a.State, a.DecidedAt, a.DecisionReason = conversation.Superseded, &now, &reason
			if err := repo.Approvals.Decide(ctx, rt.OwnerID, a); err != nil {
				return nil, err
			}
			if err := c.keeper.AuditClosed(ctx, repo, a, conversation.Pending, record.ClosedByTurnEnd, nil); err != nil {
				return nil, err
			}
			out = append(out, event(conversation.EventNameDecision, c.keeper.Decision(a)))
		}
	}
	return out, nil
}

// keepUnfinished stores what a taken-over turn left unfinished and the
// response read back does not say (known): calls that started and never
// finished as interrupted, then text cut short as partial messages.
func (tr turnReplay) keepUnfinished(ctx context.Context, repo conversation.Repo, conversationID string, known map[string]bool) ([]conversation.NewEvent, error) {
	var out []conversation.NewEvent
	for _, u := range tr.running {
		if known[u.ItemID] {
			continue // the response read back says how it ended
		}
		it, err := repo.Conversations.AppendItem(ctx, conversationID, conversation.Item{Type: conversation.ItemCall, ID: u.ItemID, ResponseID: u.ResponseID,
			ServerLabel: u.ServerLabel, UpstreamLabel: u.UpstreamLabel, Name: u.ToolName, ApprovalRequestID: deref(u.ApprovalRequestID),
			Interrupted: true})
		if err != nil {
			return nil, err
		}
		out = append(out, event(conversation.EventNameItem, conversation.ItemEvent{Item: it}))
	}
	for _, id := range tr.textOrder {
		if known[id] {
			continue
		}
		it, err := repo.Conversations.AppendItem(ctx, conversationID, conversation.Item{Type: conversation.ItemMessage, ID: id, ResponseID: tr.response, Text: tr.texts[id], Partial: true})
		if err != nil {
			return nil, err
		}
		out = append(out, event(conversation.EventNameItem, conversation.ItemEvent{Item: it}))
	}
	return out, nil
}

// settleCarried marks the approvals a taken-over turn carried to the provider
// as answered by the response it reached and, unless the response read back
// says what ran (outside gateway mode), makes the approved ones whose call
// was not seen outcome_unknown.
func (c *Closer) settleCarried(ctx context.Context, repo conversation.Repo, rt conversation.RunningTurn, tr turnReplay, st record.Settled, code string) ([]conversation.NewEvent, error) {
	sent, err := repo.Approvals.Sent(ctx, rt.ConversationID, rt.Turn)
	if err != nil {
		return nil, err
	}
	if len(sent) == 0 {
		return nil, nil
	}
	ids := make([]string, len(sent))
	for i, a := range sent {
		ids[i] = a.ID
	}
	answered := tr.response
	if answered == "" {
		answered = record.AnsweredUnknown
	}
	if err := repo.Approvals.MarkAnswered(ctx, ids, answered); err != nil {
		return nil, err
	}
	var out []conversation.NewEvent
	if c.keeper.Gateway() || !st.Finished() {
		decided, err := c.keeper.MarkUnknown(ctx, repo, rt.OwnerID, sent, tr.ran, code)
		if err != nil {
			return nil, err
		}
		for _, d := range decided {
			out = append(out, event(conversation.EventNameDecision, d))
		}
	}
	return out, nil
}

// storeInterrupted ends a taken-over turn: its error item, the turn's end
// (last is the conversation's new last response, "" unchanged), and the
// events to relay followed by the error event.
func storeInterrupted(ctx context.Context, repo conversation.Repo, rt conversation.RunningTurn, response, last string, e conversation.TurnError, out []conversation.NewEvent) error {
	if _, err := repo.Conversations.AppendItem(ctx, rt.ConversationID, conversation.Item{Type: conversation.ItemError, ID: conversation.NewID("err_"), ResponseID: response, Error: &e}); err != nil {
		return err
	}
	if err := repo.Turns.End(ctx, rt.ConversationID, rt.Turn, last); err != nil {
		return err
	}
	_, err := repo.Events.Append(ctx, rt.ConversationID, rt.Turn, append(out, event(conversation.EventNameError, conversation.ErrorEvent(e))))
	return err
}

// turnReplay is what a turn's stored events say about it.
type turnReplay struct {
	response  string
	texts     map[string]string // message item id -> text streamed, for messages not finished
	textOrder []string
	running   []conversation.ToolStartedEvent // calls started and not finished
	asked     []string                        // approval requests the turn relayed
	ran       map[string]bool                 // approval request ids whose call finished
}

func replay(evs []conversation.StoredEvent) turnReplay {
	tr := turnReplay{texts: map[string]string{}, ran: map[string]bool{}}
	for _, ev := range evs {
		switch ev.Name {
		case conversation.EventNameTextDelta:
			tr.textDelta(ev.Data)
		case conversation.EventNameToolStarted:
			tr.toolStarted(ev.Data)
		case conversation.EventNameApproval:
			tr.approval(ev.Data)
		case conversation.EventNameItem:
			tr.item(ev.Data)
		}
	}
	tr.dropFinishedTexts()
	return tr
}

// textDelta adds a delta to the text of its message.
func (tr *turnReplay) textDelta(data []byte) {
	var d conversation.TextDeltaEvent
	if json.Unmarshal(data, &d) == nil {
		if _, ok := tr.texts[d.ItemID]; !ok {
			tr.textOrder = append(tr.textOrder, d.ItemID)
		}
		tr.texts[d.ItemID] += d.Delta
		tr.response = or(d.ResponseID, tr.response)
	}
}

// toolStarted counts a call as running.
func (tr *turnReplay) toolStarted(data []byte) {
	var d conversation.ToolStartedEvent
	if json.Unmarshal(data, &d) == nil {
		tr.running = append(tr.running, d)
		tr.response = or(d.ResponseID, tr.response)
	}
}

// approval notes a request the turn relayed.
func (tr *turnReplay) approval(data []byte) {
	var a conversation.Approval
	if json.Unmarshal(data, &a) == nil {
		tr.asked = append(tr.asked, a.ID)
		tr.response = or(a.ResponseID, tr.response)
	}
}

// item finishes what a stored item ends: a message's text, a running
// call (and its approval request ran, unless interrupted).
func (tr *turnReplay) item(data []byte) {
	var d conversation.ItemEvent
	if json.Unmarshal(data, &d) != nil {
		return
	}
	it := d.Item
	tr.response = or(it.ResponseID, tr.response)
	if it.Type == conversation.ItemMessage {
		delete(tr.texts, it.ID)
	}
	if it.Type == conversation.ItemCall {
		for i, u := range tr.running {
			if u.ItemID == it.ID {
				tr.running = append(tr.running[:i], tr.running[i+1:]...)
				break
			}
		}
		if it.ApprovalRequestID != "" && !it.Interrupted {
			tr.ran[it.ApprovalRequestID] = true
		}
	}
}

// dropFinishedTexts keeps in textOrder only the messages not finished.
func (tr *turnReplay) dropFinishedTexts() {
	order := tr.textOrder[:0]
	for _, id := range tr.textOrder {
		if _, ok := tr.texts[id]; ok {
			order = append(order, id)
		}
	}
	tr.textOrder = order
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
