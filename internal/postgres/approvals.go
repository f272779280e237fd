package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/policy"
)

// Insert stores a as pending; storing an id again does nothing.
func (r approvalStore) Insert(ctx context.Context, a conversation.Approval) error {
	ann := []byte(a.Annotations)
	if len(ann) == 0 {
		ann = []byte(`{}`)
	}
	var rules []byte
	if a.Rules != nil {
		var err error
		if rules, err = json.Marshal(a.Rules); err != nil {
			return fmt.Errorf("encode rule check: %w", err)
		}
	}
	_, err := r.q.Exec(ctx, `INSERT INTO approval_requests (id, conversation_id, response_id, server_label,
			upstream_label, tool_name, arguments, annotations, reason_source, asks_reason, asks_fields, rules, corrects, ask_lock,
			arguments_sha256, definition_digest, approval_text, choices)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9, nullif($10, ''), $11, $12::jsonb, $13::jsonb, $14,
			nullif($15, ''), nullif($16, ''), $17, $18)
		ON CONFLICT (id) DO NOTHING`,
		a.ID, a.ConversationID, a.ResponseID, a.ServerLabel, a.UpstreamLabel, a.ToolName, a.StoredArguments,
		string(ann), string(a.Reason.Source), a.Reason.Reason, a.Reason.Fields, rules, encodeCorrects(a.Corrects), a.AskLock,
		a.ArgumentsSHA256, a.DefinitionDigest, a.ApprovalText, fromChoices(a.Choices))
	return orMissing(err, "store approval request", a.ConversationID)
}

// approvalCols are an approval request's columns, with its server's
// approval_ttl_seconds last (server_label there is the outer row's:
// mcp_servers has none, so it works on approval_requests and on the rows
// of a subselect of it alike).
const approvalCols = `id, conversation_id, response_id, server_label, upstream_label, tool_name, arguments,
	annotations, reason_source, coalesce(asks_reason, ''), asks_fields, requested_at, state, decided_at, decided_by,
	decided_by_id, reason, scope, remember, answered_in, sent_in_turn, rules, correction, corrects, ask_lock,
	coalesce(arguments_sha256, ''), coalesce(definition_digest, ''), approval_text, choices, stopped,
	(SELECT s.approval_ttl_seconds FROM mcp_servers s WHERE s.label = server_label)`

func (r approvalStore) approvals(ctx context.Context, what, where string, args ...any) ([]conversation.Approval, error) {
	rows, err := r.q.Query(ctx, `SELECT `+approvalCols+` FROM approval_requests WHERE `+where, args...)
	if err != nil {
		return nil, translate(err, what)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (conversation.Approval, error) {
		return scanApproval(row)
	})
	if out == nil {
		out = []conversation.Approval{}
	}
	return out, translate(err, what)
}

// scanApproval reads a row of approvalCols, then into extra the columns
// that follow them.
func scanApproval(row pgx.CollectableRow, extra ...any) (conversation.Approval, error) {
	var (
		a      conversation.Approval
		ann    []byte
		source string
		why    string
		fields []string
		rules  []byte
		corr   []byte
		cs     []byte
		chs    []string
	)
	err := row.Scan(append([]any{&a.ID, &a.ConversationID, &a.ResponseID, &a.ServerLabel, &a.UpstreamLabel, &a.ToolName,
		&a.StoredArguments, &ann, &source, &why, &fields, &a.RequestedAt, &a.State, &a.DecidedAt, &a.DecidedBy,
		&a.DecidedByID, &a.DecisionReason, &a.Scope, &a.Remember, &a.AnsweredIn, &a.SentInTurn, &rules, &corr, &cs, &a.AskLock,
		&a.ArgumentsSHA256, &a.DefinitionDigest, &a.ApprovalText, &chs, &a.Stopped, &a.ServerTTLSeconds}, extra...)...)
	a.Choices = toChoices(chs)
	if err == nil && rules != nil {
		a.Rules = new(conversation.RuleCheck)
		if err := json.Unmarshal(rules, a.Rules); err != nil {
			return a, fmt.Errorf("decode rule check of %s: %w", a.ID, err)
		}
	}
	a.Annotations = json.RawMessage(ann)
	if len(corr) > 0 {
		a.StoredCorrection = json.RawMessage(corr)
	}
	if err == nil {
		a.Corrects, err = decodeCorrects(cs)
	}
	// Only tools whose policy is always ask (or unknown tools) are asked about.
	a.Reason = conversation.AskReason{Policy: policy.Always, Source: policy.Source(source), Reason: why, Fields: fields}
	return a, err
}

// List returns the conversation's approval requests, or with ids only
// those of them, oldest first; none of another owner's. Arguments and
// Redacted are left for the service to fill from StoredArguments (stored
// redacted).
// Owned returns owner's approval request id with its conversation's kind.
func (r approvalStore) Owned(ctx context.Context, owner, id string, lock bool) (conversation.Approval, conversation.HeldState, error) {
	where := `id = $1 AND conversation_id IN (SELECT id FROM conversations WHERE owner_id = $2)`
	if lock {
		where += ` FOR UPDATE`
	}
	var hs conversation.HeldState
	aps, err := r.approvals(ctx, "read an approval request", where, id, owner)
	if err != nil {
		return conversation.Approval{}, hs, err
	}
	if len(aps) == 0 {
		return conversation.Approval{}, hs, apperr.NotFoundf("approval_not_found", "you have no approval request %q", id)
	}
	if err := r.q.QueryRow(ctx, `SELECT c.kind, coalesce(a.held_until < clock_timestamp(), false)
		FROM approval_requests a JOIN conversations c ON c.id = a.conversation_id WHERE a.id = $1`, id).Scan(&hs.Kind, &hs.HolderGone); err != nil {
		return conversation.Approval{}, hs, translate(err, "read an approval request's conversation")
	}
	return aps[0], hs, nil
}

// Hold extends a held call's lease while it is pending.
func (r approvalStore) Hold(ctx context.Context, id string, d time.Duration) error {
	_, err := r.q.Exec(ctx, `UPDATE approval_requests SET held_until = clock_timestamp() + make_interval(secs => $2)
		WHERE id = $1 AND state = 'pending'`, id, d.Seconds())
	return translate(err, "renew a held call's lease")
}

func (r approvalStore) List(ctx context.Context, owner, conversationID string, ids []string, lock bool) ([]conversation.Approval, error) {
	where, args := `conversation_id = $1`+ownedBy(2), []any{conversationID, owner}
	if len(ids) > 0 {
		where, args = where+` AND id = ANY($3)`, append(args, ids)
	}
	where += ` ORDER BY requested_at, id`
	if lock {
		where += ` FOR UPDATE`
	}
	return r.approvals(ctx, "read approval requests", where, args...)
}

// Last returns the conversation's latest approval request of
// server's tool; none of another owner's.
func (r approvalStore) Last(ctx context.Context, owner, conversationID, server, tool string) (conversation.Approval, bool, error) {
	aps, err := r.approvals(ctx, "read the last approval request of a tool",
		`conversation_id = $1 AND server_label = $2 AND tool_name = $3`+ownedBy(4)+` ORDER BY requested_at DESC, id DESC LIMIT 1`,
		conversationID, server, tool, owner)
	if err != nil || len(aps) == 0 {
		return conversation.Approval{}, false, err
	}
	return aps[0], true, nil
}

func (r approvalStore) OfResponse(ctx context.Context, owner, conversationID, response string) ([]conversation.Approval, error) {
	return r.approvals(ctx, "read a response's approval requests",
		`conversation_id = $1 AND response_id = $2`+ownedBy(3)+` ORDER BY requested_at, id FOR UPDATE`,
		conversationID, response, owner)
}

// Decide stores a's state and decision. A decided state without DecidedAt
// is stored as decided now; NotFound if owner has no request with a's id.
//
// In a transaction it is held back and sent with the next statement
// (pipeTx): a missing request then fails that statement, and the
// transaction.
func (r approvalStore) Decide(ctx context.Context, owner string, a conversation.Approval) error {
	return hold(ctx, r.q, "store decision", func(tag pgconn.CommandTag) error {
		if tag.RowsAffected() == 0 {
			return apperr.NotFoundf("approval_not_found", "there is no approval request with id %q", a.ID)
		}
		return nil
	}, `UPDATE approval_requests SET state = $2,
			decided_at = CASE WHEN $2 = 'pending' THEN NULL ELSE coalesce($3, now()) END,
			decided_by = $4, decided_by_id = $8, reason = $5, scope = $6, remember = $7, correction = $10::jsonb,
			stopped = $11
		WHERE id = $1`+ownedBy(9), a.ID, a.State, a.DecidedAt, a.DecidedBy, a.DecisionReason, a.Scope, a.Remember,
		a.DecidedByID, owner, nullJSON(a.StoredCorrection), a.Stopped)
}

func (r approvalStore) MarkAnswered(ctx context.Context, ids []string, response string) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := r.q.Exec(ctx, `UPDATE approval_requests SET answered_in = $2
		WHERE id = ANY($1) AND answered_in IS NULL`, ids, response)
	return translate(err, "record answered approval requests")
}

// MarkSent records, before the request leaves, that turn carries the
// answers to ids.
func (r approvalStore) MarkSent(ctx context.Context, ids []string, turn string) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := r.q.Exec(ctx, `UPDATE approval_requests SET sent_in_turn = $2 WHERE id = ANY($1)`, ids, turn)
	return translate(err, "record answers being sent")
}

// UnmarkSent forgets that turn carried answers the provider is known not
// to have received (it refused the request), so they can be sent again.
func (r approvalStore) UnmarkSent(ctx context.Context, turn string) error {
	_, err := r.q.Exec(ctx, `UPDATE approval_requests SET sent_in_turn = NULL WHERE sent_in_turn = $1 AND answered_in IS NULL`, turn)
	return translate(err, "record answers not sent")
}

// Sent returns the approval requests whose answers turn carried.
func (r approvalStore) Sent(ctx context.Context, conversationID, turn string) ([]conversation.Approval, error) {
	return r.approvals(ctx, "read the approval requests a turn answered",
		`conversation_id = $1 AND sent_in_turn = $2 ORDER BY requested_at, id FOR UPDATE`, conversationID, turn)
}
