package engine

import (
	"github.com/toolgate/toolgate/internal/conversation"
)

// hold keeps a finished message item (it) of the response until the
// provider's next event. When that is the response's completion, the item
// and its event are stored in the transaction that ends the turn, with its
// terminal event (store): one commit for the two instead of three. Any
// other event first stores it as before (flush), so the log keeps the
// order in which the provider sent them; so does a turn that ends
// otherwise (end). A message is not a call: nothing a person decides or
// what ran depends on it, and until it is stored its text is the turn's
// deltas, which a takeover keeps as a partial message.
func (h *heldWrites) hold(it conversation.Item) { *h = append(*h, heldWrite{item: it}) }

// holdApproval keeps an approval request a person is asked (a, its
// pending request, and it, its transcript item) the same way: the provider
// ends its response right after asking, so the request, its item and its
// approval.required event commit with the turn's end (issue 26: one commit
// fewer per approval flow). Nothing depends on it before then: the
// provider cannot be answered before the response that asks has ended,
// and a response that never ends (its replica died, its stream was cut)
// cannot be continued, so a request it asked could never be answered; a
// turn that ends otherwise stores it first (end), as before. The request
// is asked (r.asked) from now: the terminal event names it.
func (h *heldWrites) holdApproval(a conversation.Approval, it conversation.Item) {
	*h = append(*h, heldWrite{item: it, approval: &a})
}

// heldWrite is a finished item not stored yet: a message, or an approval
// request with its item.
type heldWrite struct {
	item     conversation.Item
	approval *conversation.Approval
}

// heldWrites are the finished messages and approval requests of a
// response not stored yet (hold, holdApproval), in the provider's order.
type heldWrites []heldWrite

// flush stores the held writes and relays them, in order, each in its own
// transaction. A message whose write fails goes, with the messages after
// it, to r.unstored, which the turn's end stores; an approval request
// whose write fails fails the turn, as it did when it was stored at once.
func (h *heldWrites) flush(r *relay) error {
	held := *h
	*h = nil
	for i, w := range held {
		var err error
		if w.approval != nil {
			a, it := *w.approval, w.item
			err = r.w.withEvents(func(repo conversation.Repo) ([]namedEvent, error) { return r.storeApproval(repo, a, it) })
		} else {
			_, err = r.w.storeItem(w.item)
		}
		if err != nil {
			for _, rest := range held[i:] {
				if rest.approval == nil {
					r.unstored = append(r.unstored, rest.item)
				}
			}
			return err
		}
	}
	return nil
}

// store stores the held writes in repo, the transaction that ends the
// turn, and returns their events (item events, approval.required), to
// store before its terminal one; stored, once it committed, lets go of
// them.
func (h heldWrites) store(r *relay, repo conversation.Repo) ([]conversation.NewEvent, error) {
	var evs []conversation.NewEvent
	for _, w := range h {
		if w.approval != nil {
			named, err := r.storeApproval(repo, *w.approval, w.item)
			if err != nil {
				return nil, err
			}
			evs = append(evs, encodeAll(named)...)
			continue
		}
		stored, err := repo.Conversations.AppendItem(r.store, r.t.conv.ID, w.item)
		if err != nil {
			return nil, err
		}
		evs = append(evs, mustEvent(conversation.EventNameItem, conversation.ItemEvent{Item: stored}))
	}
	return evs, nil
}

// stored hands the held writes, stored with the turn's end, to the
// observer, and lets go of them.
func (h *heldWrites) stored(r *relay) {
	for _, w := range *h {
		if w.approval != nil {
			r.log.Observe(conversation.EventNameApproval, r.t.s.keeper.WithExpiry(present(*w.approval)))
			continue
		}
		r.log.Observe(conversation.EventNameItem, conversation.ItemEvent{Item: w.item})
	}
	*h = nil
}
