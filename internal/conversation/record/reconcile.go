package record

import (
	"context"
	"errors"
	"time"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/policy"
)

// AnsweredUnknown is answered_in for answers that may have reached the
// provider in a response whose id never came back.
const AnsweredUnknown = "unknown"

// DefaultReadBackWait bounds how long a turn's end waits for a response it
// reads back to finish; readBackPoll is how often it asks meanwhile.
const (
	DefaultReadBackWait = 3 * time.Second
	readBackPoll        = 200 * time.Millisecond
)

// ReadBack asks the provider what became of response id, which took a
// turn's answers but whose end the turn did not see. While the response
// still runs, or is not stored yet (a provider may store it only once it
// ends), it asks again, for up to the read-back wait. nil: the outcome
// stays unknown. It makes HTTP calls: never call it inside a transaction.
func (k *Keeper) ReadBack(ctx context.Context, id string) *conversation.StoredResponse {
	if id == "" || id == AnsweredUnknown {
		return nil
	}
	deadline := time.Now().Add(k.readBackWait)
	var last string
	for {
		left := time.Until(deadline)
		if left <= 0 {
			k.log.WarnContext(ctx, "a response read back did not finish in time; its outcome stays unknown", "response_id", id, "last", last)
			return nil
		}
		rctx, cancel := context.WithTimeout(ctx, left)
		sr, err := k.upstream.Retrieve(rctx, id)
		cancel()
		var ue *conversation.UpstreamError
		switch {
		case err == nil && sr.Finished():
			return &sr
		case err == nil:
			last = sr.Status
		case errors.As(err, &ue) && (ue.Status == 404 || ue.Retryable()):
			last = err.Error()
		default:
			k.log.WarnContext(ctx, "reading a response back failed; its outcome stays unknown", "response_id", id, "error", err)
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(min(readBackPoll, left)):
		}
	}
}

// SentResponse is the response that took the answers of aps, if its id
// came back (response.created): "" when none did.
func SentResponse(aps []conversation.Approval) string {
	for _, a := range aps {
		if a.AnsweredIn != nil && *a.AnsweredIn != AnsweredUnknown {
			return *a.AnsweredIn
		}
	}
	return ""
}

// Settled is what a response read back settles about a turn that ended
// without Toolgate seeing the response end.
type Settled struct {
	sr *conversation.StoredResponse // nil: nothing was read back
	// Known are the ids of the response's output items: the turn's end
	// writes no interrupted call or partial message in their place.
	Known map[string]bool
	// Ran are the approval requests whose mcp_call the response holds.
	Ran map[string]bool
	// adopted: the response completed and every approval request in it is
	// recorded, so the conversation goes on from it (its last response).
	Adopted bool
}

// Finished reports whether the response read back ended, so its items say
// which approved tools ran and which did not.
func (st Settled) Finished() bool { return st.sr != nil }

// LastResponse is the conversation's new last response: the one read back
// if adopted, else "" (unchanged).
func (st Settled) LastResponse() string {
	if st.Adopted {
		return st.sr.ID
	}
	return ""
}

// Explain adds to how the turn ended what the read-back learnt.
func (st Settled) Explain(e conversation.TurnError) conversation.TurnError {
	switch {
	case st.Adopted:
		e.Message += "; Toolgate then read the response back from the model's provider: it had completed, so its answer is kept and the conversation goes on from it"
		e.Retryable = false
	case st.Finished():
		e.Message += "; Toolgate then read the response back from the model's provider: it had ended (" + st.sr.Status + "), and its items say which tools ran"
	}
	return e
}

// ApplyReadBack stores, in the transaction that ends a turn, what the
// response read back holds and the transcript lacks (calls that ran, the
// answer), in its order, and returns what it settles with the item events
// to relay. sr nil settles nothing. groups say why a call ran.
func (k *Keeper) ApplyReadBack(ctx context.Context, repo conversation.Repo, owner, conversationID string, sr *conversation.StoredResponse,
	groups []policy.ServerTools) (Settled, []conversation.NewEvent, error) {
	st := Settled{sr: sr, Known: map[string]bool{}, Ran: map[string]bool{}}
	if sr == nil {
		return st, nil, nil
	}
	items, err := repo.Conversations.Items(ctx, owner, conversationID)
	if err != nil {
		return st, nil, err
	}
	have := map[string]bool{}
	for _, it := range items {
		have[it.ID] = true
	}
	st.Adopted = sr.Status == "completed"
	for _, u := range sr.Output {
		st.Known[u.ID] = true
		if u.Type == conversation.ItemCall && u.ApprovalID != "" {
			st.Ran[u.ApprovalID] = true
		}
		if u.Type == conversation.ItemApprovalRequest && !have[u.ID] {
			// Never relayed, so never recorded: the next request could not
			// answer it, so the conversation cannot go on from here.
			st.Adopted = false
		}
	}
	var evs []conversation.NewEvent
	for _, u := range sr.Output {
		it, ok := k.itemOf(&u, sr.ID, groups)
		if !ok || u.Type == conversation.ItemApprovalRequest {
			continue
		}
		// Every call read back has a receipt, also one the transcript holds
		// (as run or as interrupted): a second receipt for a call is dropped.
		// A call that passed the MCP face has the face's.
		linked, err := k.LinkCall(ctx, repo, conversationID, "", &it)
		if err != nil {
			return st, nil, err
		}
		if !linked {
			if err := k.RecordCall(ctx, repo, owner, "", conversationID, it); err != nil {
				return st, nil, err
			}
		}
		if have[u.ID] {
			continue
		}
		stored, err := repo.Conversations.AppendItem(ctx, conversationID, it)
		if err != nil {
			return st, nil, err
		}
		evs = append(evs, event(conversation.EventNameItem, conversation.ItemEvent{Item: stored}))
	}
	return st, evs, nil
}

// RequestGroups are the tools a request of owner's in the conversation
// would offer, to say why a call read back ran; nil when they cannot be
// read (the calls then say their policy is unknown).
func (k *Keeper) RequestGroups(ctx context.Context, owner, conversationID string) []policy.ServerTools {
	grants, err := k.grants(ctx, k.store.Repo(), owner, conversationID)
	if err != nil {
		return nil
	}
	groups, skipped, err := k.policies.Tools.Request(ctx, owner, grants, nil)
	if err != nil {
		return nil
	}
	for _, sk := range skipped { // a server down now may have run the call then
		groups = append(groups, sk.Tools)
	}
	return groups
}
