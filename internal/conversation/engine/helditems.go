package engine

import (
	"github.com/toolgate/toolgate/internal/conversation"
)

// hold keeps a finished message item (it) of the response until the
// provider's next event. When that is the response's completion, the item
// and its event are stored in the transaction that ends the turn, with its
// terminal event (storeHeld): one commit for the two instead of three.
// Any other event first stores it as before (flushHeld), so the log keeps
// the order in which the provider sent them; so does a turn that ends
// otherwise (end). A message is not a call: nothing a person decides or
// what ran depends on it, and until it is stored its text is the turn's
// deltas, which a takeover keeps as a partial message.
func (h *heldMessages) hold(it conversation.Item) { *h = append(*h, it) }

// heldMessages are the finished messages of a response not stored yet
// (hold).
type heldMessages []conversation.Item

// flushHeld stores the held messages and relays them, in order; one whose
// write fails goes, with the rest, to r.unstored, which the turn's end
// stores.
func (h *heldMessages) flush(r *relay) error {
	held := *h
	*h = nil
	for i, it := range held {
		if _, err := r.w.storeItem(it); err != nil {
			r.unstored = append(r.unstored, held[i:]...)
			return err
		}
	}
	return nil
}

// storeHeld stores the held messages in repo, the transaction that ends
// the turn, and returns their item events, to store before its terminal
// one; heldStored, once it committed, lets go of them.
func (h heldMessages) store(r *relay, repo conversation.Repo) ([]conversation.NewEvent, error) {
	var evs []conversation.NewEvent
	for _, it := range h {
		stored, err := repo.Conversations.AppendItem(r.store, r.t.conv.ID, it)
		if err != nil {
			return nil, err
		}
		evs = append(evs, mustEvent(conversation.EventNameItem, conversation.ItemEvent{Item: stored}))
	}
	return evs, nil
}

// heldStored hands the held messages, stored with the turn's end, to the
// observer, and lets go of them.
func (h *heldMessages) stored(r *relay) {
	for _, it := range *h {
		r.log.Observe(conversation.EventNameItem, conversation.ItemEvent{Item: it})
	}
	*h = nil
}
