package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/toolgate/toolgate/internal/conversation"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolgate/toolgate/internal/conversation/record"
	"github.com/toolgate/toolgate/internal/policy"
)

// DefaultLeaseTTL is TURN_LEASE_TTL's default: how long a turn outlives the
// replica running it before another replica closes it.
const DefaultLeaseTTL = 15 * time.Second

// ErrLeaseLost stops a turn whose lease this replica could not renew:
// another replica may have taken it over, so this one must stop.
var ErrLeaseLost = errors.New("this replica lost the turn's lease")

// setReplica names this process among the replicas sharing the database
// and sets the lease its turns hold (Options.Replica, Options.LeaseTTL).
func (s *Service) setReplica(id string, ttl time.Duration) {
	if id != "" {
		s.replica = id
	}
	if ttl > 0 {
		s.leaseTTL = ttl
	}
}

// Replica is this process's replica id.
func (s *Service) Replica() string { return s.replica }

// LeaseTTL is TURN_LEASE_TTL: how long a turn (and an Idempotency-Key's
// request) outlives the replica running it.
func (s *Service) LeaseTTL() time.Duration { return s.leaseTTL }

// StartRecovery runs, until ctx ends or Stop, what keeps turns honest across
// replicas: this replica's leases are renewed every third of the lease,
// turns whose lease expired (their replica died) are closed, and approval
// requests that waited longer than APPROVAL_TTL expire.
func (s *Service) StartRecovery(ctx context.Context) {
	go func() {
		renew := time.NewTicker(s.leaseTTL / 3)
		defer renew.Stop()
		last := s.now()
		sweep := time.NewTimer(s.leaseTTL/2 + rand.N(s.leaseTTL/4+1))
		defer sweep.Stop()
		for {
			select {
			case <-ctx.Done():
				sweep.Stop()
				return
			case <-s.stopping:
				sweep.Stop()
				return
			case <-renew.C:
				if s.renew(ctx) {
					last = s.now()
				} else if s.now().Sub(last) > s.leaseTTL*2/3 {
					// Unrenewed, the leases may expire and be taken over:
					// stop before another replica closes these turns.
					s.stopAllHere(ErrLeaseLost)
				}
			case <-sweep.C:
				s.Sweep(ctx)
				s.ExpireApprovals(ctx)
				sweep.Reset(s.leaseTTL/2 + rand.N(s.leaseTTL/4+1))
			}
		}
	}()
}

// renew extends the leases of this replica's turns and stops the turns it
// no longer holds; false when the database could not be asked.
func (s *Service) renew(ctx context.Context) bool {
	s.mu.Lock()
	turns := make([]string, 0, len(s.running))
	byTurn := map[string]*running{}
	for _, r := range s.running {
		turns = append(turns, r.turn)
		byTurn[r.turn] = r
	}
	s.mu.Unlock()
	// A turn whose end is still being stored keeps its lease: this replica
	// holds what it received and could not store yet.
	turns = append(turns, s.endingTurns()...)
	if len(turns) == 0 {
		return true
	}
	held, err := s.store.Repo().RenewLeases(ctx, s.replica, turns, s.leaseTTL)
	if err != nil {
		s.log.WarnContext(ctx, "renewing turn leases failed", "error", err)
		return false
	}
	for _, h := range held {
		delete(byTurn, h)
	}
	for turn, r := range byTurn {
		s.log.WarnContext(ctx, "a turn's lease was lost; stopping it here", "turn_id", turn)
		r.cancel(ErrLeaseLost)
	}
	return true
}

func (s *Service) stopAllHere(cause error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.running {
		r.cancel(cause)
	}
}

// Sweep closes the turns whose lease expired, as interrupted; it reports
// how many it closed. A few at a time: closing one may wait a few seconds
// for its response to be read back.
func (s *Service) Sweep(ctx context.Context) int {
	expired, err := s.store.Repo().ExpiredTurns(ctx, 100)
	if err != nil {
		s.log.WarnContext(ctx, "looking for expired turn leases failed", "error", err)
		return 0
	}
	var n atomic.Int64
	var wg sync.WaitGroup
	slots := make(chan struct{}, sweepParallel)
	for _, rt := range expired {
		if rt.LeaseOwner == s.replica && (s.lookup(rt.ConversationID) != nil || s.isEnding(rt.Turn)) {
			continue // ours and running, or its end still being stored here: the renewal is late, not the replica dead
		}
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			ok, err := s.takeOver(ctx, rt)
			if err != nil {
				s.log.WarnContext(ctx, "closing a turn whose lease expired failed", "conversation_id", rt.ConversationID, "turn_id", rt.Turn, "error", err)
				return
			}
			if ok {
				n.Add(1)
				s.observer.LeaseTakeover()
				s.log.WarnContext(ctx, "closed a turn whose replica stopped renewing its lease", "conversation_id", rt.ConversationID,
					"turn_id", rt.Turn, "replica", rt.LeaseOwner)
			}
		}()
	}
	wg.Wait()
	return int(n.Load())
}

// sweepParallel is how many expired turns a sweep closes at once.
const sweepParallel = 8

// interruptedError is how a taken-over turn ends.
func interruptedError(replica string) conversation.TurnError {
	return conversation.TurnError{Code: "interrupted", Retryable: true, Message: fmt.Sprintf(
		"the Toolgate replica running this turn (%s) stopped before it finished, so another replica closed it; what arrived before is kept, and a tool that had started may have run", replica)}
}

// takeOver closes a turn whose lease expired, in one transaction, from
// what its events say: calls that started and never finished are kept as
// interrupted, text cut short as partial, requests it asked are superseded,
// approvals it carried whose call was not seen become outcome_unknown,
// and an error item and event (interrupted) end it. When the provider took
// the answers it carried (their response's id came back), the response is
// read back first: what it holds is stored, approvals keep their state as
// its items say what ran, and a completed response becomes the
// conversation's last.
func (s *Service) takeOver(ctx context.Context, rt conversation.RunningTurn) (bool, error) {
	e := interruptedError(rt.LeaseOwner)
	sent, err := s.store.Repo().SentApprovals(ctx, rt.ConversationID, rt.Turn)
	if err != nil {
		return false, err
	}
	sentIn := record.SentResponse(sent)
	var groups []policy.ServerTools
	sr := s.keeper.ReadBack(ctx, sentIn)
	if sr != nil {
		groups = s.keeper.RequestGroups(ctx, rt.OwnerID, rt.ConversationID)
	}
	taken := false
	err = s.store.Tx(ctx, func(repo conversation.Repo) error {
		ok, err := repo.LockExpiredTurn(ctx, rt.ConversationID, rt.Turn)
		if err != nil || !ok {
			return err
		}
		taken = true
		return s.closeExpired(ctx, repo, rt, e, sentIn, sr, groups)
	})
	if err == nil && taken {
		s.hub.poke(rt.ConversationID, false)
	}
	return taken && err == nil, err
}

// closeExpired is takeOver's transaction once the turn is locked: read what
// the turn's events say ran, store what the response read back holds,
// supersede the requests it asked, keep what it left unfinished, settle the
// approvals it carried, and store its end (interrupted).
func (s *Service) closeExpired(ctx context.Context, repo conversation.Repo, rt conversation.RunningTurn, e conversation.TurnError, sentIn string,
	sr *conversation.StoredResponse, groups []policy.ServerTools) error {
	evs, err := repo.TurnEvents(ctx, rt.ConversationID, rt.Turn)
	if err != nil {
		return err
	}
	tr := replay(evs)
	tr.response = or(tr.response, sentIn)
	now := s.now()
	st, out, err := s.keeper.ApplyReadBack(ctx, repo, rt.OwnerID, rt.ConversationID, sr, groups)
	if err != nil {
		return err
	}
	e = st.Explain(e)
	if len(tr.asked) > 0 && !st.Adopted {
		superseded, err := s.supersedeAsked(ctx, repo, rt, tr.asked, now)
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
	decided, err := s.settleCarried(ctx, repo, rt, tr, st, e.Code)
	if err != nil {
		return err
	}
	out = append(out, decided...)
	return storeInterrupted(ctx, repo, rt, tr.response, st.LastResponse(), e, out)
}

// supersedeAsked closes as superseded the requests a taken-over turn asked
// that are still pending: the response that asked did not complete.
func (s *Service) supersedeAsked(ctx context.Context, repo conversation.Repo, rt conversation.RunningTurn, asked []string, now time.Time) ([]conversation.NewEvent, error) {
	aps, err := repo.Approvals(ctx, rt.OwnerID, rt.ConversationID, asked, true)
	if err != nil {
		return nil, err
	}
	var out []conversation.NewEvent
	reason := "The response that asked did not complete (interrupted), so this request can no longer be answered."
	for _, a := range aps {
		if a.State == conversation.Pending {
			a.State, a.DecidedAt, a.DecisionReason = conversation.Superseded, &now, &reason
			if err := repo.Decide(ctx, rt.OwnerID, a); err != nil {
				return nil, err
			}
			if err := s.keeper.AuditClosed(ctx, repo, a, conversation.Pending, record.ClosedByTurnEnd, nil); err != nil {
				return nil, err
			}
			out = append(out, mustEvent(conversation.EventNameDecision, decisionEvent(a, nil)))
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
		it, err := repo.AppendItem(ctx, conversationID, conversation.Item{Type: conversation.ItemCall, ID: u.ItemID, ResponseID: u.ResponseID,
			ServerLabel: u.ServerLabel, UpstreamLabel: u.UpstreamLabel, Name: u.ToolName, ApprovalRequestID: deref(u.ApprovalRequestID),
			Interrupted: true})
		if err != nil {
			return nil, err
		}
		out = append(out, mustEvent(conversation.EventNameItem, conversation.ItemEvent{Item: it}))
	}
	for _, id := range tr.textOrder {
		if known[id] {
			continue
		}
		it, err := repo.AppendItem(ctx, conversationID, conversation.Item{Type: conversation.ItemMessage, ID: id, ResponseID: tr.response, Text: tr.texts[id], Partial: true})
		if err != nil {
			return nil, err
		}
		out = append(out, mustEvent(conversation.EventNameItem, conversation.ItemEvent{Item: it}))
	}
	return out, nil
}

// settleCarried marks the approvals a taken-over turn carried to the provider
// as answered by the response it reached and, unless the response read back
// says what ran (outside gateway mode), makes the approved ones whose call
// was not seen outcome_unknown.
func (s *Service) settleCarried(ctx context.Context, repo conversation.Repo, rt conversation.RunningTurn, tr turnReplay, st record.Settled, code string) ([]conversation.NewEvent, error) {
	sent, err := repo.SentApprovals(ctx, rt.ConversationID, rt.Turn)
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
	if err := repo.MarkAnswered(ctx, ids, answered); err != nil {
		return nil, err
	}
	var out []conversation.NewEvent
	if s.gateway || !st.Finished() {
		decided, err := s.keeper.MarkUnknown(ctx, repo, rt.OwnerID, sent, tr.ran, code)
		if err != nil {
			return nil, err
		}
		for _, d := range decided {
			out = append(out, mustEvent(conversation.EventNameDecision, d))
		}
	}
	return out, nil
}

// storeInterrupted ends a taken-over turn: its error item, the turn's end
// (last is the conversation's new last response, "" unchanged), and the
// events to relay followed by the error event.
func storeInterrupted(ctx context.Context, repo conversation.Repo, rt conversation.RunningTurn, response, last string, e conversation.TurnError, out []conversation.NewEvent) error {
	if _, err := repo.AppendItem(ctx, rt.ConversationID, conversation.Item{Type: conversation.ItemError, ID: newID("err_"), ResponseID: response, Error: &e}); err != nil {
		return err
	}
	if err := repo.EndTurn(ctx, rt.ConversationID, rt.Turn, last); err != nil {
		return err
	}
	_, err := repo.AppendEvents(ctx, rt.ConversationID, rt.Turn, append(out, mustEvent(conversation.EventNameError, conversation.ErrorEvent(e))))
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
