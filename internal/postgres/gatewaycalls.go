package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/gateway"
)

// GateScope reads a conversation, whoever owns it, with its owner's email
// and the state of server label: the MCP face's token names both.
func (r callStore) GateScope(ctx context.Context, conversationID, label string) (conversation.GateScope, error) {
	var sc conversation.GateScope
	c, err := scanConversation(r.q.QueryRow(ctx, `SELECT `+convCols+`, coalesce(u.email, ''), s.label IS NOT NULL, coalesce(s.enabled, false)
		FROM conversations c LEFT JOIN users u ON u.id = c.owner_id LEFT JOIN mcp_servers s ON s.label = $2
		WHERE c.id = $1`, conversationID, label), &sc.OwnerEmail, &sc.ServerExists, &sc.ServerEnabled)
	sc.Conversation = c
	return sc, orMissing(err, "read the conversation of a call", conversationID)
}

// Begin takes a transaction-scoped advisory lock on k (identical calls
// wait for each other, so the second finds the first) and a share lock on
// the conversation (a turn's end, which takes FOR NO KEY UPDATE, waits for
// the call to be recorded, and a call waits for the end: it then finds the
// turn over).
func (r callStore) Begin(ctx context.Context, k conversation.CallKey) (string, *conversation.GatewayCall, error) {
	if !inTransaction(r.q) {
		return "", nil, errors.New("BeginCall must run in a transaction: its locks end with it")
	}
	key := k.ConversationID + "\x1f" + k.TurnID + "\x1f" + k.ServerLabel + "\x1f" + k.ToolName + "\x1f" + k.ArgumentsSHA256
	if _, err := r.q.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('toolgate.call:' || $1::text, 0))`, key); err != nil {
		return "", nil, translate(err, "lock the call")
	}
	var active string
	err := r.q.QueryRow(ctx, `SELECT coalesce(active_turn, '') FROM conversations WHERE id = $1 FOR SHARE`, k.ConversationID).Scan(&active)
	if noRows(err) {
		return "", nil, nil
	}
	if err != nil {
		return "", nil, translate(err, "lock the conversation of a call")
	}
	calls, err := r.gatewayCalls(ctx, "read an identical call", `g.conversation_id = $1 AND g.turn_id = $2 AND g.server_label = $3
		AND g.tool_name = $4 AND g.arguments_sha256 = $5 AND g.state <> 'refused'`,
		k.ConversationID, k.TurnID, k.ServerLabel, k.ToolName, k.ArgumentsSHA256)
	if err != nil || len(calls) == 0 {
		return active, nil, err
	}
	return active, &calls[0], nil
}

// UsableApproval locks the approval a call of k may run on.
func (r callStore) UsableApproval(ctx context.Context, k conversation.CallKey) (*conversation.Approval, error) {
	aps, err := approvalStore(r).approvals(ctx, "read the approval a call runs on", `conversation_id = $1 AND sent_in_turn = $2
		AND server_label = $3 AND tool_name = $4 AND arguments_sha256 = $5 AND state = 'approved'
		AND NOT EXISTS (SELECT 1 FROM gateway_calls g WHERE g.approval_request_id = approval_requests.id)
		ORDER BY requested_at, id LIMIT 1 FOR UPDATE`,
		k.ConversationID, k.TurnID, k.ServerLabel, k.ToolName, k.ArgumentsSHA256)
	if err != nil || len(aps) == 0 {
		return nil, err
	}
	return &aps[0], nil
}

// Insert stores c unless an identical call, or one using the
// same approval, is stored (the unique indexes; DO NOTHING covers both).
func (r callStore) Insert(ctx context.Context, c conversation.GatewayCall) (bool, error) {
	allowed, err := nullJSONOf(c.AllowedBy)
	if err != nil {
		return false, err
	}
	refusal, err := nullJSONOf(c.Refusal)
	if err != nil {
		return false, err
	}
	client, err := nullJSONOf(c.Client)
	if err != nil {
		return false, err
	}
	tag, err := r.q.Exec(ctx, `INSERT INTO gateway_calls (id, conversation_id, turn_id, server_label, tool_name, arguments,
			arguments_sha256, definition_digest, allowed_by, approval_request_id, state, refusal, finished_at, client)
		VALUES ($1, $2, $3, $4, $5, $6, $7, nullif($8, ''), $9::jsonb, $10, $11, $12::jsonb,
			CASE WHEN $11 = 'running' THEN NULL ELSE clock_timestamp() END, $13::jsonb)
		ON CONFLICT DO NOTHING`,
		c.ID, c.ConversationID, c.TurnID, c.ServerLabel, c.ToolName, c.StoredArguments, c.ArgumentsSHA256,
		c.DefinitionDigest, allowed, c.ApprovalRequestID, c.State, refusal, client)
	if err != nil {
		return false, translate(err, "record a call")
	}
	return tag.RowsAffected() == 1, nil
}

// Finish stores c's state, result and failure on its running row.
func (r callStore) Finish(ctx context.Context, c conversation.GatewayCall) (conversation.GatewayCall, bool, error) {
	var result any
	if len(c.Result) > 0 {
		result = string(c.Result)
	}
	// One statement: the update, then the row as it is now with its owner.
	rows, err := r.q.Query(ctx, `WITH upd AS (
			UPDATE gateway_calls SET state = $2, result = $3::json, is_error = $4, failure = nullif($5, ''),
				output_sha256 = $6, masked = $7, finished_at = clock_timestamp()
			WHERE id = $1 AND state = 'running'
			RETURNING *)
		SELECT `+gatewayCallCols+` FROM upd g LEFT JOIN conversations c ON c.id = g.conversation_id
			LEFT JOIN users u ON u.id = c.owner_id`,
		c.ID, c.State, result, c.IsError, c.Failure, c.OutputSHA256, c.Masked)
	if err != nil {
		return c, false, translate(err, "store a call's result")
	}
	out, err := pgx.CollectRows(rows, scanGatewayCall)
	if err != nil {
		return c, false, translate(err, "store a call's result")
	}
	if len(out) == 0 {
		return c, false, nil
	}
	return out[0], true, nil
}

// Get returns one call.
func (r callStore) Get(ctx context.Context, id string) (conversation.GatewayCall, error) {
	calls, err := r.gatewayCalls(ctx, "read a call", `g.id = $1`, id)
	if err != nil {
		return conversation.GatewayCall{}, err
	}
	if len(calls) == 0 {
		return conversation.GatewayCall{}, missingRow(fmt.Sprintf("read call %q", id))
	}
	return calls[0], nil
}

// OfApprovals returns the calls that used approvals ids.
func (r callStore) OfApprovals(ctx context.Context, ids []string) (map[string]conversation.GatewayCall, error) {
	out := map[string]conversation.GatewayCall{}
	if len(ids) == 0 {
		return out, nil
	}
	calls, err := r.gatewayCalls(ctx, "read the calls of approvals", `g.approval_request_id = ANY($1)`, ids)
	for _, c := range calls {
		out[*c.ApprovalRequestID] = c
	}
	return out, err
}

// OfConversation returns owner's conversation's calls, oldest first.
func (r callStore) OfConversation(ctx context.Context, owner, conversationID string) ([]conversation.GatewayCall, error) {
	return r.gatewayCalls(ctx, "read a conversation's calls", `g.conversation_id = $1 AND c.owner_id = $2 ORDER BY g.created_at, g.id`,
		conversationID, owner)
}

// Link links the oldest unreported call of k to item itemID.
func (r callStore) Link(ctx context.Context, k conversation.CallKey, itemID, response string) (conversation.GatewayCall, bool, error) {
	rows, err := r.q.Query(ctx, `WITH upd AS (
			UPDATE gateway_calls SET item_id = $6, response_id = nullif($7, '')
			WHERE id = (SELECT id FROM gateway_calls
				WHERE conversation_id = $1 AND ($2 = '' OR turn_id = $2) AND server_label = $3 AND tool_name = $4
				  AND arguments_sha256 = $5 AND (item_id IS NULL OR item_id = $6)
				ORDER BY (item_id IS NULL), state = 'refused', created_at DESC, id LIMIT 1 FOR UPDATE)
			RETURNING *)
		SELECT `+gatewayCallCols+` FROM upd g LEFT JOIN conversations c ON c.id = g.conversation_id
			LEFT JOIN users u ON u.id = c.owner_id`,
		k.ConversationID, k.TurnID, k.ServerLabel, k.ToolName, k.ArgumentsSHA256, itemID, response)
	if err != nil {
		return conversation.GatewayCall{}, false, translate(err, "link a call to its item")
	}
	out, err := pgx.CollectRows(rows, scanGatewayCall)
	if err != nil || len(out) == 0 {
		return conversation.GatewayCall{}, false, translate(err, "link a call to its item")
	}
	return out[0], true, nil
}

// gatewayCallCols are a call's columns on gateway_calls g, with its
// conversation's owner (conversations c, users u left-joined).
const gatewayCallCols = `g.id, g.conversation_id, g.turn_id, g.server_label, g.tool_name, g.arguments, g.arguments_sha256,
	coalesce(g.definition_digest, ''), g.allowed_by, g.approval_request_id, g.state, g.result, g.is_error, coalesce(g.failure, ''),
	g.output_sha256, g.refusal, coalesce(g.item_id, ''), coalesce(g.response_id, ''), g.created_at, g.finished_at,
	coalesce(c.owner_id, ''), coalesce(u.email, ''), g.masked, g.client`

func (r callStore) gatewayCalls(ctx context.Context, what, where string, args ...any) ([]conversation.GatewayCall, error) {
	rows, err := r.q.Query(ctx, `SELECT `+gatewayCallCols+` FROM gateway_calls g
		LEFT JOIN conversations c ON c.id = g.conversation_id LEFT JOIN users u ON u.id = c.owner_id
		WHERE `+where, args...)
	if err != nil {
		return nil, translate(err, what)
	}
	out, err := pgx.CollectRows(rows, scanGatewayCall)
	if out == nil {
		out = []conversation.GatewayCall{}
	}
	return out, translate(err, what)
}

func scanGatewayCall(row pgx.CollectableRow) (conversation.GatewayCall, error) {
	var (
		c       conversation.GatewayCall
		allowed []byte
		result  []byte
		refusal []byte
	)
	err := row.Scan(&c.ID, &c.ConversationID, &c.TurnID, &c.ServerLabel, &c.ToolName, &c.StoredArguments, &c.ArgumentsSHA256,
		&c.DefinitionDigest, &allowed, &c.ApprovalRequestID, &c.State, &result, &c.IsError, &c.Failure, &c.OutputSHA256,
		&refusal, &c.ItemID, &c.ResponseID, &c.CreatedAt, &c.FinishedAt, &c.OwnerID, &c.OwnerEmail, &c.Masked, &c.Client)
	if err != nil {
		return c, err
	}
	c.Via = conversation.ViaGateway
	if len(result) > 0 {
		c.Result = json.RawMessage(result)
	}
	if len(allowed) > 0 {
		c.AllowedBy = new(conversation.AllowedBy)
		if err := json.Unmarshal(allowed, c.AllowedBy); err != nil {
			return c, fmt.Errorf("decode allowed_by of call %s: %w", c.ID, err)
		}
	}
	if len(refusal) > 0 {
		c.Refusal = new(gateway.Refusal)
		if err := json.Unmarshal(refusal, c.Refusal); err != nil {
			return c, fmt.Errorf("decode refusal of call %s: %w", c.ID, err)
		}
	}
	return c, nil
}

// nullJSONOf is v as JSON text, or NULL for a nil pointer.
func nullJSONOf[T any](v *T) (any, error) {
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode %T: %w", v, err)
	}
	return string(b), nil
}
