package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/policy"
)

// ConversationStore is the Postgres implementation of conversation.Store.
type ConversationStore struct{ pool *pgxpool.Pool }

var _ conversation.Store = (*ConversationStore)(nil)

// NewConversationStore returns a ConversationStore on pool.
func NewConversationStore(pool *pgxpool.Pool) *ConversationStore {
	return &ConversationStore{pool: pool}
}

// EventWriterConns is the size of the pool NewEventWriterStore opens.
const EventWriterConns = 2

// NewEventWriterStore opens a small pool of its own on pool's database,
// for the writes of streamed text deltas: they go on while the main pool is
// busy starting turns (a burst of new streams must not hold up the ones
// already streaming). Close it after the service using it has stopped.
func NewEventWriterStore(ctx context.Context, pool *pgxpool.Pool) (*ConversationStore, func(), error) {
	cfg := pool.Config().Copy()
	cfg.MaxConns, cfg.MinConns = EventWriterConns, 1
	own, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, nil, translate(err, "open the event writer's connections")
	}
	return &ConversationStore{pool: own}, own.Close, nil
}

// Tx runs fn in one transaction; ConversationPolicies, given fn's
// repository, works in it too.
func (s *ConversationStore) Tx(ctx context.Context, fn func(conversation.Repo) error) error {
	p := &pipeTx{pool: s.pool}
	defer p.rollback(context.WithoutCancel(ctx))
	if err := fn(convRepo{p}); err != nil {
		return err
	}
	return p.commit(ctx)
}

// Repo returns a repository that runs each statement on its own.
func (s *ConversationStore) Repo() conversation.Repo { return convRepo{s.pool} }

type convRepo struct{ q querier }

func conversationNotFound(id string) error {
	return apperr.NotFoundf("conversation_not_found", "there is no conversation with id %q", id)
}

// orMissing translates err, reporting a missing row or a foreign key
// violation (the conversation was deleted meanwhile) as conversation id not
// found.
func orMissing(err error, what, id string) error {
	err = translate(err, what)
	if apperr.KindOf(err) == apperr.NotFound {
		return apperr.Wrap(err, apperr.NotFound, "conversation_not_found", "there is no conversation with id %q", id)
	}
	return err
}

// convCols are a conversation's fields, on conversations aliased c.
const convCols = `c.id, coalesce(c.owner_id, ''), c.title, c.created_at, c.updated_at, c.last_response_id,
	c.active_turn IS NOT NULL,
	(SELECT count(*) FROM approval_requests a WHERE a.conversation_id = c.id AND a.state = 'pending'),
	coalesce(c.active_turn, ''), coalesce(c.lease_owner, ''),
	c.active_turn IS NOT NULL AND (c.lease_expires_at IS NULL OR c.lease_expires_at < clock_timestamp()), c.event_seq, c.tools`

// Every read and write a caller names a conversation for is scoped to its
// owner in SQL: another user's conversation, approvals and allowances are
// not found, exactly as if they did not exist. ownedBy is the condition
// that conversation_id (of approval_requests, conversation_items or
// conversation_grants) belongs to the owner in parameter $n.
func ownedBy(n int) string {
	return ` AND conversation_id IN (SELECT id FROM conversations WHERE owner_id = $` + strconv.Itoa(n) + `)`
}

// lockConversation is how Conversation(id, true) locks the row. FOR NO KEY
// UPDATE conflicts with itself, with FOR UPDATE and with the UPDATEs of
// StartTurn and EndTurn, so it serialises turns and decisions and waits for
// a concurrent delete. Unlike FOR UPDATE, it does not block inserts of
// items, approvals and grants of the conversation by other connections
// (their foreign key check takes FOR KEY SHARE), so a transaction holding
// the lock never waits for the turn it is waiting on to append an item.
const lockConversation = ` FOR NO KEY UPDATE`

// scanConversation reads a row of convCols, then into extra the columns
// that follow them.
func scanConversation(row pgx.Row, extra ...any) (conversation.Conversation, error) {
	var c conversation.Conversation
	err := row.Scan(append([]any{&c.ID, &c.OwnerID, &c.Title, &c.CreatedAt, &c.UpdatedAt, &c.LastResponseID, &c.Streaming, &c.PendingCount,
		&c.ActiveTurn, &c.LeaseOwner, &c.LeaseExpired, &c.LastEventID, &c.Tools}, extra...)...)
	if c.Tools.Servers == nil {
		c.Tools.Servers = map[string]policy.ServerSelection{}
	}
	return c, err
}

func (r convRepo) CreateConversation(ctx context.Context, owner, id, title string) (conversation.Conversation, error) {
	c, err := scanConversation(r.q.QueryRow(ctx, `INSERT INTO conversations AS c (id, title, owner_id) VALUES ($1, $2, $3)
		RETURNING `+convCols, id, title, owner))
	err = translate(err, "create conversation")
	if err != nil && apperr.KindOf(err) == apperr.Conflict {
		return c, apperr.Wrap(err, apperr.Conflict, "duplicate_conversation", "a conversation with id %q already exists", id)
	}
	return c, err
}

// ListConversations returns up to limit of owner's conversations, most
// recently updated first; every one when limit is not positive.
func (r convRepo) ListConversations(ctx context.Context, owner string, limit int) ([]conversation.Conversation, error) {
	var lim any // NULL: LIMIT ALL
	if limit > 0 {
		lim = limit
	}
	// With when its pending requests run out of time (PendingTimes).
	rows, err := r.q.Query(ctx, `SELECT `+convCols+`, coalesce(x.never, false), x.default_last, x.server_last
		FROM conversations c
		LEFT JOIN LATERAL (SELECT bool_or(s.approval_ttl_seconds = 0) AS never,
				max(a.requested_at) FILTER (WHERE s.approval_ttl_seconds IS NULL) AS default_last,
				max(a.requested_at + make_interval(secs => s.approval_ttl_seconds)) FILTER (WHERE s.approval_ttl_seconds > 0) AS server_last
			FROM approval_requests a LEFT JOIN mcp_servers s ON s.label = a.server_label
			WHERE a.conversation_id = c.id AND a.state = 'pending') x ON true
		WHERE c.owner_id = $2
		ORDER BY c.updated_at DESC, c.id DESC LIMIT $1`, lim, owner)
	if err != nil {
		return nil, translate(err, "list conversations")
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (conversation.Conversation, error) {
		var pt conversation.PendingTimes
		c, err := scanConversation(row, &pt.Never, &pt.DefaultLast, &pt.ServerLast)
		c.PendingTimes = pt
		return c, err
	})
	if out == nil {
		out = []conversation.Conversation{}
	}
	return out, translate(err, "list conversations")
}

func (r convRepo) Conversation(ctx context.Context, owner, id string, lock bool) (conversation.Conversation, error) {
	q := `SELECT ` + convCols + ` FROM conversations c WHERE c.id = $1 AND c.owner_id = $2`
	if lock {
		q += lockConversation
	}
	c, err := scanConversation(r.q.QueryRow(ctx, q, id, owner))
	return c, orMissing(err, "read conversation", id)
}

func (r convRepo) RenameConversation(ctx context.Context, owner, id, title string) (conversation.Conversation, error) {
	c, err := scanConversation(r.q.QueryRow(ctx, `UPDATE conversations c SET title = $2, updated_at = now()
		WHERE c.id = $1 AND c.owner_id = $3 RETURNING `+convCols, id, title, owner))
	return c, orMissing(err, "rename conversation", id)
}

// SetConversationTools stores the conversation's choice of servers and
// tools. It does not count as activity: the conversation keeps its place in
// the list.
func (r convRepo) SetConversationTools(ctx context.Context, owner, id string, sel policy.Selection) (conversation.Conversation, error) {
	c, err := scanConversation(r.q.QueryRow(ctx, `UPDATE conversations c SET tools = $2
		WHERE c.id = $1 AND c.owner_id = $3 RETURNING `+convCols, id, sel, owner))
	return c, orMissing(err, "store the conversation's tools", id)
}

func (r convRepo) DeleteConversation(ctx context.Context, owner, id string) error {
	tag, err := r.q.Exec(ctx, `DELETE FROM conversations WHERE id = $1 AND owner_id = $2`, id, owner)
	if err != nil {
		return translate(err, "delete conversation")
	}
	if tag.RowsAffected() == 0 {
		return conversationNotFound(id)
	}
	return nil
}

// StartTurn marks turn as running under owner's lease for ttl; NotFound if
// the conversation is missing.
func (r convRepo) StartTurn(ctx context.Context, id, turn, owner string, ttl time.Duration) error {
	// The text deltas of the turns before go now: every message they sent
	// is an item (whole, or partial when cut), which a stream replaying
	// them gets instead; the ids of the other events stay. Not at a turn's
	// end, when a stream may still be reading them.
	tag, err := r.q.Exec(ctx, `WITH pruned AS (
			DELETE FROM conversation_events WHERE conversation_id = $1 AND event = 'text.delta'
		)
		UPDATE conversations SET active_turn = $2, active_turn_at = now(), updated_at = now(),
			lease_owner = $3, lease_expires_at = clock_timestamp() + make_interval(secs => $4)
		WHERE id = $1`, id, turn, owner, ttl.Seconds())
	if err != nil {
		return translate(err, "start turn")
	}
	if tag.RowsAffected() == 0 {
		return conversationNotFound(id)
	}
	return nil
}

// EndTurn is not an error when the conversation was deleted meanwhile.
// ContinueTurn records that turn, still running, continues from
// response: the conversation's last response moves on while the turn keeps
// the conversation (and its lease). False when the turn no longer runs in it.
func (r convRepo) ContinueTurn(ctx context.Context, id, turn, response string) (bool, error) {
	tag, err := r.q.Exec(ctx, `UPDATE conversations SET last_response_id = $3, updated_at = now()
		WHERE id = $1 AND active_turn = $2`, id, turn, response)
	if err != nil {
		return false, translate(err, "continue turn")
	}
	return tag.RowsAffected() == 1, nil
}

func (r convRepo) EndTurn(ctx context.Context, id, turn, lastResponse string) error {
	// SET expressions see the row as it was, so each CASE tests the old turn.
	_, err := r.q.Exec(ctx, `UPDATE conversations SET
			active_turn      = CASE WHEN active_turn = $2 THEN NULL ELSE active_turn END,
			active_turn_at   = CASE WHEN active_turn = $2 THEN NULL ELSE active_turn_at END,
			lease_owner      = CASE WHEN active_turn = $2 THEN NULL ELSE lease_owner END,
			lease_expires_at = CASE WHEN active_turn = $2 THEN NULL ELSE lease_expires_at END,
			last_response_id = CASE WHEN active_turn = $2 AND $3 <> '' THEN $3 ELSE last_response_id END,
			updated_at       = now()
		WHERE id = $1`, id, turn, lastResponse)
	return translate(err, "end turn")
}

func (r convRepo) SupersedeOrphans(ctx context.Context, reason string) (int64, error) {
	// Each gets its approval.decide audit entry (Toolgate closed it) in
	// the same statement.
	tag, err := r.q.Exec(ctx, `WITH closed AS (
			UPDATE approval_requests a SET state = 'superseded', decided_at = now(), reason = $1
			FROM conversations c
			WHERE a.conversation_id = c.id AND a.state = 'pending' AND c.active_turn IS NULL
			  AND c.last_response_id IS DISTINCT FROM a.response_id
			RETURNING a.id, a.conversation_id, a.server_label, a.tool_name)
		INSERT INTO audit_log (actor, action, server_label, tool_name, before, after, conversation_id)
		SELECT 'toolgate', 'approval.decide', server_label, tool_name,
			jsonb_build_object('approval_request_id', id, 'state', 'pending'),
			jsonb_build_object('approval_request_id', id, 'conversation_id', conversation_id, 'state', 'superseded',
				'reason', $1::text, 'by', 'turn_end'),
			conversation_id
		FROM closed ORDER BY id`, reason)
	if err != nil {
		return 0, translate(err, "supersede approval requests of responses that never completed")
	}
	return tag.RowsAffected(), nil
}

// appendRetries bounds how often AppendItem outside a transaction tries
// again when a concurrent append took the same sequence number. Each failed
// attempt means another append succeeded, so this many appends at once to
// one conversation all succeed: far more than a conversation ever sees.
const appendRetries = 20

// AppendItem numbers it one past the conversation's last item in the INSERT
// itself. Two appends at once can still compute the same number; the
// primary key rejects the second. Outside a transaction it is retried;
// inside one, the caller holds the conversation's lock, as the turn engine
// does, and it is reported as a Conflict.
func (r convRepo) AppendItem(ctx context.Context, conversationID string, it conversation.Item) (conversation.Item, error) {
	it.Seq, it.CreatedAt, it.Approval = 0, time.Time{}, nil // the row's columns; joined in when read
	data, err := encodeItem(it)
	if err != nil {
		return it, translate(err, "encode transcript item")
	}
	inTx := inTransaction(r.q)
	for attempt := 1; ; attempt++ {
		err = r.q.QueryRow(ctx, `
			INSERT INTO conversation_items (conversation_id, seq, type, item_id, response_id, data)
			SELECT $1::text, coalesce(max(seq), 0) + 1, $2::text, nullif($3::text, ''), nullif($4::text, ''), $5::json
			FROM conversation_items WHERE conversation_id = $1
			RETURNING seq, created_at`,
			conversationID, it.Type, it.ID, it.ResponseID, string(data)).Scan(&it.Seq, &it.CreatedAt)
		if err == nil || inTx || attempt == appendRetries || apperr.KindOf(translate(err, "")) != apperr.Conflict {
			break
		}
	}
	return it, orMissing(err, "append transcript item", conversationID)
}

// Items returns the transcript in order, empty for a missing conversation
// or another owner's. Approval requests come without their Approval, which
// the service joins in.
func (r convRepo) Items(ctx context.Context, owner, conversationID string) ([]conversation.Item, error) {
	rows, err := r.q.Query(ctx, `SELECT seq, created_at, data FROM conversation_items
		WHERE conversation_id = $1`+ownedBy(2)+` ORDER BY seq`, conversationID, owner)
	if err != nil {
		return nil, translate(err, "read transcript")
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (conversation.Item, error) {
		var (
			seq  int
			at   time.Time
			data []byte
		)
		if err := row.Scan(&seq, &at, &data); err != nil {
			return conversation.Item{}, err
		}
		it, err := decodeItem(data)
		it.Seq, it.CreatedAt = seq, at
		return it, err
	})
	if out == nil {
		out = []conversation.Item{}
	}
	return out, translate(err, "read transcript")
}

// InsertApproval stores a as pending; storing an id again does nothing.
func (r convRepo) InsertApproval(ctx context.Context, a conversation.Approval) error {
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

func (r convRepo) approvals(ctx context.Context, what, where string, args ...any) ([]conversation.Approval, error) {
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

// Approvals returns the conversation's approval requests, or with ids only
// those of them, oldest first; none of another owner's. Arguments and
// Redacted are left for the service to fill from StoredArguments (stored
// redacted).
func (r convRepo) Approvals(ctx context.Context, owner, conversationID string, ids []string, lock bool) ([]conversation.Approval, error) {
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

// LastApproval returns the conversation's latest approval request of
// server's tool; none of another owner's.
func (r convRepo) LastApproval(ctx context.Context, owner, conversationID, server, tool string) (conversation.Approval, bool, error) {
	aps, err := r.approvals(ctx, "read the last approval request of a tool",
		`conversation_id = $1 AND server_label = $2 AND tool_name = $3`+ownedBy(4)+` ORDER BY requested_at DESC, id DESC LIMIT 1`,
		conversationID, server, tool, owner)
	if err != nil || len(aps) == 0 {
		return conversation.Approval{}, false, err
	}
	return aps[0], true, nil
}

func (r convRepo) ResponseApprovals(ctx context.Context, owner, conversationID, response string) ([]conversation.Approval, error) {
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
func (r convRepo) Decide(ctx context.Context, owner string, a conversation.Approval) error {
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

func (r convRepo) MarkAnswered(ctx context.Context, ids []string, response string) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := r.q.Exec(ctx, `UPDATE approval_requests SET answered_in = $2
		WHERE id = ANY($1) AND answered_in IS NULL`, ids, response)
	return translate(err, "record answered approval requests")
}

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

// Grants returns owner's grants as f says; none of another owner's. With a
// conversation: its own grants and the owner's timed ones (which cover
// every conversation of theirs).
func (r convRepo) Grants(ctx context.Context, owner string, f conversation.GrantFilter) ([]conversation.Grant, error) {
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

// AddGrant stores g for owner. A conversation grant names a conversation
// of owner's (the caller found it under owner's scope and holds it locked).
func (r convRepo) AddGrant(ctx context.Context, owner string, g conversation.Grant) error {
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

// RevokeGrant revokes owner's grant id at now, if it is still live.
func (r convRepo) RevokeGrant(ctx context.Context, owner, id string, now time.Time) (conversation.Grant, bool, error) {
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

// UserLoad serialises the turns owner starts: it takes a lock on owner
// that the transaction holds until it ends, then counts, so two requests
// starting turns at once are counted one after the other. It must run in a
// transaction (outside one the lock would end with the statement).
func (r convRepo) UserLoad(ctx context.Context, owner string, window time.Duration) (conversation.UserLoad, error) {
	b := &pgx.Batch{}
	queueUserLoad(b, owner, window)
	br := r.q.SendBatch(ctx, b)
	defer br.Close() //nolint:errcheck // the results' errors are read below
	l, err := readUserLoad(br)
	if err != nil {
		return l, err
	}
	return l, translate(br.Close(), "count the user's turns and messages")
}

// queueUserLoad queues UserLoad's two statements on b: the lock and the
// count are two, so the count's snapshot is taken once the lock is held (a
// turn start that committed while this one waited is counted), sent
// together: one round trip. readUserLoad reads their results.
func queueUserLoad(b *pgx.Batch, owner string, window time.Duration) {
	b.Queue(`SELECT pg_advisory_xact_lock(hashtextextended('toolgate.turns:' || $1::text, 0))`, owner)
	// Both counts have an index of their own (00025): the user's running
	// conversations, and the messages sent inside the window (joined to
	// their conversation for its owner). The window ends at
	// statement_timestamp(), which an index can use (clock_timestamp() is
	// volatile: with it every message was read).
	b.Queue(`SELECT
			(SELECT count(*) FROM conversations WHERE owner_id = $1 AND active_turn IS NOT NULL),
			count(i.*), min(i.created_at), clock_timestamp()
		FROM conversation_items i JOIN conversations c ON c.id = i.conversation_id
		WHERE i.type = 'user_message' AND i.created_at > statement_timestamp() - make_interval(secs => $2)
		  AND c.owner_id = $1`,
		owner, window.Seconds())
}

func readUserLoad(br pgx.BatchResults) (conversation.UserLoad, error) {
	var l conversation.UserLoad
	if _, err := br.Exec(); err != nil {
		return l, translate(err, "lock the user's turns")
	}
	err := br.QueryRow().Scan(&l.Running, &l.Messages, &l.OldestMessage, &l.Now)
	return l, translate(err, "count the user's turns and messages")
}

// User returns an account by id (a conversation's owner, for a turn
// Toolgate starts on the owner's behalf).
func (r convRepo) User(ctx context.Context, id string) (auth.User, error) {
	var u auth.User
	err := r.q.QueryRow(ctx, `SELECT id, email, role, disabled FROM users WHERE id = $1`, id).Scan(&u.ID, &u.Email, &u.Role, &u.Disabled)
	if noRows(err) {
		return u, apperr.NotFoundf("user_not_found", "there is no user with id %q", id)
	}
	return u, translate(err, "read a user")
}
