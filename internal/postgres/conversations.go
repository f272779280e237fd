package postgres

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/policy"
)

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
	c.active_turn IS NOT NULL AND (c.lease_expires_at IS NULL OR c.lease_expires_at < clock_timestamp()), c.event_seq, c.tools,
	c.kind, c.client`

// Every read and write a caller names a conversation for is scoped to its
// owner in SQL: another user's conversation, approvals and allowances are
// not found, exactly as if they did not exist. ownedBy is the condition
// that conversation_id (of approval_requests, conversation_items or
// conversation_grants) belongs to the owner in parameter $n.
func ownedBy(n int) string {
	return ` AND conversation_id IN (SELECT id FROM conversations WHERE owner_id = $` + strconv.Itoa(n) + `)`
}

// lockConversation is how Conversations.Get(id, true) locks the row. FOR NO KEY
// UPDATE conflicts with itself, with FOR UPDATE and with the UPDATEs of
// Turns.Start and Turns.End, so it serialises turns and decisions and waits for
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
		&c.ActiveTurn, &c.LeaseOwner, &c.LeaseExpired, &c.LastEventID, &c.Tools, &c.Kind, &c.Client}, extra...)...)
	if c.Tools.Servers == nil {
		c.Tools.Servers = map[string]policy.ServerSelection{}
	}
	return c, err
}

func (r conversationStore) Create(ctx context.Context, owner, id, title string) (conversation.Conversation, error) {
	c, err := scanConversation(r.q.QueryRow(ctx, `INSERT INTO conversations AS c (id, title, owner_id) VALUES ($1, $2, $3)
		RETURNING `+convCols, id, title, owner))
	err = translate(err, "create conversation")
	if err != nil && apperr.KindOf(err) == apperr.Conflict {
		return c, apperr.Wrap(err, apperr.Conflict, "duplicate_conversation", "a conversation with id %q already exists", id)
	}
	return c, err
}

// OpenAgent stores, once, the conversation of an agent's MCP session.
func (r conversationStore) OpenAgent(ctx context.Context, owner, id, title string, client conversation.ClientInfo) (conversation.Conversation, error) {
	c, err := json.Marshal(client)
	if err != nil {
		return conversation.Conversation{}, err
	}
	if _, err := r.q.Exec(ctx, `INSERT INTO conversations (id, title, owner_id, kind, client) VALUES ($1, $2, $3, 'agent', $4::jsonb)
		ON CONFLICT (id) DO NOTHING`, id, title, owner, string(c)); err != nil {
		return conversation.Conversation{}, translate(err, "open an agent's session")
	}
	return r.Get(ctx, owner, id, false)
}

// List returns up to limit of owner's chats, most recently updated first;
// every one when limit is not positive. An agent's MCP sessions
// (kind agent) are not chats: the inbox shows their requests.
func (r conversationStore) List(ctx context.Context, owner string, limit int) ([]conversation.Conversation, error) {
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
		WHERE c.owner_id = $2 AND c.kind = 'chat'
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

func (r conversationStore) Get(ctx context.Context, owner, id string, lock bool) (conversation.Conversation, error) {
	q := `SELECT ` + convCols + ` FROM conversations c WHERE c.id = $1 AND c.owner_id = $2`
	if lock {
		q += lockConversation
	}
	c, err := scanConversation(r.q.QueryRow(ctx, q, id, owner))
	return c, orMissing(err, "read conversation", id)
}

func (r conversationStore) Rename(ctx context.Context, owner, id, title string) (conversation.Conversation, error) {
	c, err := scanConversation(r.q.QueryRow(ctx, `UPDATE conversations c SET title = $2, updated_at = now()
		WHERE c.id = $1 AND c.owner_id = $3 RETURNING `+convCols, id, title, owner))
	return c, orMissing(err, "rename conversation", id)
}

// SetTools stores the conversation's choice of servers and
// tools. It does not count as activity: the conversation keeps its place in
// the list.
func (r conversationStore) SetTools(ctx context.Context, owner, id string, sel policy.Selection) (conversation.Conversation, error) {
	c, err := scanConversation(r.q.QueryRow(ctx, `UPDATE conversations c SET tools = $2
		WHERE c.id = $1 AND c.owner_id = $3 RETURNING `+convCols, id, sel, owner))
	return c, orMissing(err, "store the conversation's tools", id)
}

func (r conversationStore) Delete(ctx context.Context, owner, id string) error {
	tag, err := r.q.Exec(ctx, `DELETE FROM conversations WHERE id = $1 AND owner_id = $2`, id, owner)
	if err != nil {
		return translate(err, "delete conversation")
	}
	if tag.RowsAffected() == 0 {
		return conversationNotFound(id)
	}
	return nil
}

// User returns an account by id (a conversation's owner, for a turn
// Toolgate starts on the owner's behalf).
func (r conversationStore) User(ctx context.Context, id string) (auth.User, error) {
	var u auth.User
	err := r.q.QueryRow(ctx, `SELECT id, email, role, disabled FROM users WHERE id = $1`, id).Scan(&u.ID, &u.Email, &u.Role, &u.Disabled)
	if noRows(err) {
		return u, apperr.NotFoundf("user_not_found", "there is no user with id %q", id)
	}
	return u, translate(err, "read a user")
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
func (r conversationStore) AppendItem(ctx context.Context, conversationID string, it conversation.Item) (conversation.Item, error) {
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
func (r conversationStore) Items(ctx context.Context, owner, conversationID string) ([]conversation.Item, error) {
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
