package engine

import (
	"github.com/toolgate/toolgate/internal/conversation"
)

// corrects links a new approval request of server's tool to the request
// just before it of the same tool in the conversation, when the person
// denied that one with a correction: the model asked again, and the card
// shows what changed. storedArgs are the new request's arguments, redacted.
// Nil when there is no such denial (or it cannot be read: the card then
// only lacks the comparison).
func (k *asker) corrects(r *relay, server, tool, storedArgs string) *conversation.Corrects {
	t := r.t
	prev, ok, err := k.store.Repo().Approvals.Last(r.store, t.user.ID, t.conv.ID, server, tool)
	if err != nil {
		k.log.WarnContext(r.store, "reading the request a new one may correct failed", "conversation_id", t.conv.ID, "error", err)
		return nil
	}
	if !ok || prev.State != conversation.Denied || len(prev.StoredCorrection) == 0 {
		return nil
	}
	return compareCorrected(prev, storedArgs)
}
