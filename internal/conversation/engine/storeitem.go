package engine

import (
	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/conversation/record"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/policy"
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
