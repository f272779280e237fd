package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/conversation"
)

// grantCols are a grant's fields, on grants aliased g (conversations c
// left-joined for the title).
const grantCols = `g.id, g.owner_id, g.conversation_id, c.title, g.server_label, g.tool_name, g.approval_request_id,
	g.created_at, g.expires_at, g.revoked_at`

func scanGrant(row pgx.Row) (conversation.Grant, error) {
	var g conversation.Grant
	err := row.Scan(&g.ID, &g.OwnerID, &g.ConversationID, &g.ConversationTitle, &g.ServerLabel, &g.ToolName,
		&g.ApprovalRequestID, &g.CreatedAt, &g.ExpiresAt, &g.RevokedAt)
	return g, err
}

// List returns owner's grants as f says; none of another owner's. With a
// conversation: its own grants and the owner's timed ones (which cover
// every conversation of theirs).
func (r grantStore) List(ctx context.Context, owner string, f conversation.GrantFilter) ([]conversation.Grant, error) {
	rows, err := r.q.Query(ctx, `SELECT `+grantCols+` FROM grants g LEFT JOIN conversations c ON c.id = g.conversation_id
		WHERE g.owner_id = $1
		  AND ($2 = '' OR g.conversation_id = $2 OR g.conversation_id IS NULL)
		  AND ($4 OR (g.revoked_at IS NULL AND (g.expires_at IS NULL OR g.expires_at > $3)))
		ORDER BY g.created_at DESC, g.id`, owner, f.ConversationID, f.Now, f.Ended)
	if err != nil {
		return nil, translate(err, "read grants")
	}
	gs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (conversation.Grant, error) { return scanGrant(row) })
	if gs == nil {
		gs = []conversation.Grant{}
	}
	return gs, translate(err, "read grants")
}

// Add stores g for owner. A conversation grant names a conversation
// of owner's (the caller found it under owner's scope and holds it locked).
func (r grantStore) Add(ctx context.Context, owner string, g conversation.Grant) error {
	_, err := r.q.Exec(ctx, `INSERT INTO grants (id, owner_id, conversation_id, server_label, tool_name,
			approval_request_id, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		g.ID, owner, g.ConversationID, g.ServerLabel, g.ToolName, g.ApprovalRequestID, g.CreatedAt, g.ExpiresAt)
	conv := ""
	if g.ConversationID != nil {
		conv = *g.ConversationID
	}
	return orMissing(err, "store grant", conv)
}

// Revoke revokes owner's grant id at now, if it is still live.
func (r grantStore) Revoke(ctx context.Context, owner, id string, now time.Time) (conversation.Grant, bool, error) {
	g, err := scanGrant(r.q.QueryRow(ctx, `SELECT `+grantCols+` FROM grants g LEFT JOIN conversations c ON c.id = g.conversation_id
		WHERE g.id = $1 AND g.owner_id = $2 FOR UPDATE OF g`, id, owner))
	if noRows(err) {
		return g, false, apperr.NotFoundf("grant_not_found", "you have no grant with id %q", id)
	}
	if err != nil {
		return g, false, translate(err, "read grant")
	}
	if g.RevokedAt != nil || (g.ExpiresAt != nil && !g.ExpiresAt.After(now)) {
		return g, false, nil
	}
	_, err = r.q.Exec(ctx, `UPDATE grants SET revoked_at = $2 WHERE id = $1`, id, now)
	return g, true, translate(err, "revoke grant")
}
