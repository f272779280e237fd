package postgres

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/internal/conversation"
)

// OpenTurn is StartTurn, MarkSent, AppendEvents, Grants and PolicyVersion
// in one statement (one round trip instead of five before the upstream
// call). The UPDATE of
// the conversation row claims the turn and raises the event counter at once
// (a statement may change a row only once), so the claim, the answers
// marked sent and the opening events commit together in the caller's
// transaction, as the four statements did. The policy read (policy_version
// and the owner's personal policies) is the one the turn's request would
// make right after the commit, made here instead: it sees what committed
// before the statement started, and this transaction's own changes (a
// policy a decision remembered). It is made when o.Policies asks for it.
func (r convRepo) OpenTurn(ctx context.Context, o conversation.TurnOpening) (int64, []conversation.Grant, error) {
	names := make([]string, len(o.Events))
	datas := make([]string, len(o.Events))
	for i, e := range o.Events {
		names[i], datas[i] = e.Name, string(e.Data)
	}
	sent := o.SentIDs
	if sent == nil {
		sent = []string{}
	}
	var (
		last       int64
		grants, pr []byte
	)
	// $1..$5 are AppendEvents' parameters, which webhookOutbox uses.
	err := r.q.QueryRow(ctx, `
		WITH seq AS (
			UPDATE conversations SET active_turn = $3, active_turn_at = now(), updated_at = now(),
				lease_owner = $6, lease_expires_at = clock_timestamp() + make_interval(secs => $7),
				event_seq = event_seq + $2
			WHERE id = $1 RETURNING event_seq - $2 AS base
		), pruned AS (
			-- The text deltas of the turns before go now (see StartTurn).
			DELETE FROM conversation_events WHERE conversation_id = $1 AND event = 'text.delta'
		), sent AS (
			UPDATE approval_requests SET sent_in_turn = $3 WHERE id = ANY($8::text[])
		), ins AS (
			INSERT INTO conversation_events (conversation_id, id, turn_id, event, data)
			SELECT $1, seq.base + e.ord, $3, e.name, e.data::json
			FROM seq, unnest($4::text[], $5::text[]) WITH ORDINALITY AS e(name, data, ord)
		)`+webhookOutbox+`
		SELECT seq.base + $2, pg_notify('`+EventsChannel+`', json_build_object('c', $1::text, 'id', seq.base + $2)::text),
			`+webhookWake+`,
			(SELECT coalesce(json_agg(json_build_object('id', g.id, 'conversation_id', g.conversation_id,
					'server_label', g.server_label, 'tool_name', g.tool_name, 'approval_request_id', g.approval_request_id,
					'created_at', g.created_at, 'expires_at', g.expires_at) ORDER BY g.created_at DESC, g.id), '[]')
				FROM grants g
				WHERE g.owner_id = $9 AND (g.conversation_id = $1 OR g.conversation_id IS NULL)
				  AND g.revoked_at IS NULL AND (g.expires_at IS NULL OR g.expires_at > $10)),
			CASE WHEN $11 THEN `+policyRead("$9")+` END
		FROM seq`, o.ConversationID, len(o.Events), o.TurnID, names, datas,
		o.Replica, o.LeaseTTL.Seconds(), sent, o.Owner, o.Now, o.Policies != nil).Scan(&last, new(any), new(any), &grants, &pr)
	if err == pgx.ErrNoRows {
		return 0, nil, conversationNotFound(o.ConversationID)
	}
	if err != nil {
		return 0, nil, translate(err, "start turn")
	}
	if o.Policies != nil {
		if *o.Policies, err = decodePolicyRead(pr, o.Owner); err != nil {
			return 0, nil, err
		}
	}
	var gs []struct {
		ID                string     `json:"id"`
		ConversationID    *string    `json:"conversation_id"`
		ServerLabel       string     `json:"server_label"`
		ToolName          string     `json:"tool_name"`
		ApprovalRequestID string     `json:"approval_request_id"`
		CreatedAt         time.Time  `json:"created_at"`
		ExpiresAt         *time.Time `json:"expires_at"`
	}
	if err := json.Unmarshal(grants, &gs); err != nil {
		return 0, nil, translate(err, "read grants")
	}
	out := make([]conversation.Grant, len(gs))
	for i, g := range gs {
		out[i] = conversation.Grant{ID: g.ID, OwnerID: o.Owner, ConversationID: g.ConversationID, ServerLabel: g.ServerLabel,
			ToolName: g.ToolName, ApprovalRequestID: g.ApprovalRequestID, CreatedAt: g.CreatedAt, ExpiresAt: g.ExpiresAt}
	}
	return last, out, nil
}
