package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/internal/policy"
)

// auditStore is policy.AuditStore.
type auditStore struct{ q querier }

func (r auditStore) Insert(ctx context.Context, e policy.AuditEntry) error {
	// A receipt written without the actor's email (a turn taken over by
	// another replica knows only the owner's id) takes it from users; a
	// second receipt for one call is dropped.
	// In a conversation's transaction it goes with the next statement (pipeTx).
	return hold(ctx, r.q, "write audit entry", nil, `INSERT INTO audit_log (actor, actor_id, action, server_label, tool_name, before, after,
			call_id, conversation_id)
		VALUES (coalesce(nullif($1, ''), (SELECT email FROM users WHERE id = $2), 'toolgate'), nullif($2, ''), $3, $4, $5, $6, $7,
			nullif($8, ''), nullif($9, ''))
		ON CONFLICT (call_id) DO NOTHING`,
		e.Actor, e.ActorID, e.Action, e.ServerLabel, e.ToolName, e.Before, e.After, e.CallID, e.ConversationID)
}

func (r auditStore) List(ctx context.Context, q policy.AuditQuery) ([]policy.AuditEntry, error) {
	const cols = `id, at, actor, coalesce(actor_id, ''), action, server_label, tool_name, before, after`
	const filters = `($1 = 0 OR id < $1) AND ($2 = '' OR server_label = $2) AND (coalesce(cardinality($3::text[]), 0) = 0 OR action = ANY($3::text[]))`
	sql := `SELECT ` + cols + ` FROM audit_log WHERE ` + filters + ` ORDER BY id DESC LIMIT $4`
	args := []any{q.BeforeID, q.ServerLabel, q.Actions, q.Limit}
	if q.ActorID != "" {
		// A member's view: what they did, and the decisions and receipts
		// about their own conversations whoever made them (a request that
		// expired or a rule decided is Toolgate's entry). Each half reads
		// its own index (audit_log_actor, audit_log_conversation) newest
		// first; the union keeps the newest $4.
		sql = `SELECT ` + cols + ` FROM audit_log WHERE id IN (
				(SELECT id FROM audit_log WHERE actor_id = $5 AND ` + filters + ` ORDER BY id DESC LIMIT $4)
				UNION
				(SELECT a.id FROM conversations c CROSS JOIN LATERAL (
					SELECT id FROM audit_log WHERE conversation_id = c.id AND action IN ('approval.decide', 'tool.call') AND ` + filters + `
					ORDER BY id DESC LIMIT $4) a
				WHERE c.owner_id = $5 ORDER BY a.id DESC LIMIT $4))
			ORDER BY id DESC LIMIT $4`
		args = append(args, q.ActorID)
	}
	rows, err := r.q.Query(ctx, sql, args...)
	if err != nil {
		return nil, translate(err, "read audit log")
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (policy.AuditEntry, error) {
		var e policy.AuditEntry
		err := row.Scan(&e.ID, &e.At, &e.Actor, &e.ActorID, &e.Action, &e.ServerLabel, &e.ToolName, &e.Before, &e.After)
		return e, err
	})
	return out, translate(err, "read audit log")
}
