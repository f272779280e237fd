package engine

import (
	"github.com/toolgate/toolgate/internal/conversation"
)

// storeItem appends it to the transcript; a finished call is stored
// together with its receipt, in one transaction.
func (r *relay) storeItem(it conversation.Item) (conversation.Item, error) {
	t, s := r.t, r.t.s
	if it.Type != conversation.ItemCall || it.Interrupted {
		return s.store.Repo().Conversations.AppendItem(r.store, t.conv.ID, it)
	}
	var stored conversation.Item
	err := s.store.Tx(r.store, func(repo conversation.Repo) error {
		it := it
		linked, err := s.keeper.LinkCall(r.store, repo, t.conv.ID, t.id, &it)
		if err != nil {
			return err
		}
		if stored, err = repo.Conversations.AppendItem(r.store, t.conv.ID, it); err != nil || linked {
			return err // a call through the MCP face has its receipt from the face
		}
		return s.keeper.RecordCall(r.store, repo, t.user.ID, t.user.Email, t.conv.ID, it)
	})
	return stored, err
}
