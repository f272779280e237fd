package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/policy"
)

// Open is Start, Approvals.MarkSent, Events.Append, Grants.List and PolicyVersion
// in one statement (one round trip instead of five before the upstream
// call), which also checks the per-user limits (o.Limits) against the
// owner's counters (00044): it updates their row (the message window),
// holding its lock until the transaction ends, and raises TG429 at a limit
// (the transaction fails whole); the counters' trigger counts the turn as
// running. The UPDATE of
// the conversation row claims the turn and raises the event counter at once
// (a statement may change a row only once), so the claim, the answers
// marked sent and the opening events commit together in the caller's
// transaction, as the four statements did. The policy read (policy_version
// and the owner's personal policies) is the one the turn's request would
// make right after the commit, made here instead: it sees what committed
// before the statement started, and this transaction's own changes (a
// policy a decision remembered). It is made when o.Policies asks for it.
// With o.Opened set, in a transaction the statement goes with the COMMIT
// (the counters' row is then locked only while Postgres runs the batch).
func (r turnStore) Open(ctx context.Context, o conversation.TurnOpening) (int64, []conversation.Grant, error) {
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
		last  int64
		out   []conversation.Grant
		check = o.Limits.MaxConcurrentTurns > 0 || (o.Message && o.Limits.MessagesPerMinute > 0)
	)
	scan := func(row pgx.Row) error {
		var grants, pr []byte
		err := row.Scan(&last, new(any), new(any), &grants, &pr)
		if noRows(err) {
			return conversationNotFound(o.ConversationID)
		}
		if err != nil {
			return limitReached(err)
		}
		if o.Policies != nil {
			if *o.Policies, err = decodePolicyRead(pr, o.Owner); err != nil {
				return err
			}
		}
		if out, err = decodeGrants(grants, o.Owner); err != nil {
			return err
		}
		if o.Opened != nil {
			o.Opened(last, out)
		}
		return nil
	}
	run := func(scan func(pgx.Row) error, sql string, args ...any) (bool, error) {
		return false, scan(r.q.QueryRow(ctx, sql, args...))
	}
	if o.Opened != nil {
		run = func(scan func(pgx.Row) error, sql string, args ...any) (bool, error) {
			return deferUntilCommit(ctx, r.q, scan, sql, args...)
		}
	}
	// $1..$5 are Events.Append's parameters, which webhookOutbox uses.
	deferred, err := run(scan, `
		WITH lim AS (
			UPDATE user_turn_counters u SET
				window_start = CASE WHEN NOT $14 THEN u.window_start
					WHEN u.window_start IS NULL OR u.window_start <= statement_timestamp() - interval '1 minute' THEN statement_timestamp()
					ELSE u.window_start END,
				window_count = CASE WHEN NOT $14 THEN u.window_count
					WHEN u.window_start IS NULL OR u.window_start <= statement_timestamp() - interval '1 minute' THEN 1
					ELSE u.window_count + 1 END
			WHERE u.user_id = $9 AND $15
			RETURNING u.running, u.window_start, u.window_count
		), ok AS (
			SELECT coalesce((SELECT CASE
				WHEN ($12 > 0 AND running >= $12) OR ($14 AND $13 > 0 AND window_count > $13)
				THEN toolgate_turn_refused(json_build_object('running', running, 'messages', window_count - 1,
					'oldest', window_start, 'now', statement_timestamp()))
				ELSE true END FROM lim), true) AS go
		), seq AS (
			UPDATE conversations SET active_turn = $3, active_turn_at = now(), updated_at = now(),
				lease_owner = $6, lease_expires_at = clock_timestamp() + make_interval(secs => $7),
				event_seq = event_seq + $2
			WHERE id = $1 AND (SELECT go FROM ok) RETURNING event_seq - $2 AS base
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
		o.Replica, o.LeaseTTL.Seconds(), sent, o.Owner, o.Now, o.Policies != nil,
		o.Limits.MaxConcurrentTurns, o.Limits.MessagesPerMinute, o.Message, check)
	if deferred || err != nil {
		return 0, nil, err
	}
	return last, out, nil
}

// limitReached is err, or the *conversation.LimitReached that Open's
// toolgate_turn_refused raised (TG429, what was counted in its detail).
func limitReached(err error) error {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "TG429" {
		return translate(err, "start turn")
	}
	var d struct {
		Running  int        `json:"running"`
		Messages int        `json:"messages"`
		Oldest   *time.Time `json:"oldest"`
		Now      time.Time  `json:"now"`
	}
	if jerr := json.Unmarshal([]byte(pe.Detail), &d); jerr != nil {
		return translate(jerr, "read a per-user limit's counts")
	}
	return &conversation.LimitReached{Load: conversation.UserLoad{Running: d.Running, Messages: d.Messages, OldestMessage: d.Oldest, Now: d.Now}}
}

// decodeGrants reads Open's grants of owner.
func decodeGrants(raw []byte, owner string) ([]conversation.Grant, error) {
	var gs []struct {
		ID                string     `json:"id"`
		ConversationID    *string    `json:"conversation_id"`
		ServerLabel       string     `json:"server_label"`
		ToolName          string     `json:"tool_name"`
		ApprovalRequestID string     `json:"approval_request_id"`
		CreatedAt         time.Time  `json:"created_at"`
		ExpiresAt         *time.Time `json:"expires_at"`
	}
	if err := json.Unmarshal(raw, &gs); err != nil {
		return nil, translate(err, "read grants")
	}
	out := make([]conversation.Grant, len(gs))
	for i, g := range gs {
		out[i] = conversation.Grant{ID: g.ID, OwnerID: owner, ConversationID: g.ConversationID, ServerLabel: g.ServerLabel,
			ToolName: g.ToolName, ApprovalRequestID: g.ApprovalRequestID, CreatedAt: g.CreatedAt, ExpiresAt: g.ExpiresAt}
	}
	return out, nil
}

// LockDecisions is Conversation (locked) and Approvals (ids, locked), in
// that order, the policy read of owner (as PolicyVersion) and the approval
// cards of the requests' tools, sent as one batch: one round trip. Each
// statement runs once the one before it finished, so the locks are taken in
// the order they were before.
func (r turnStore) LockDecisions(ctx context.Context, owner, conversationID string, ids []string) (conversation.DecisionsLocked, error) {
	var out conversation.DecisionsLocked
	b := &pgx.Batch{}
	b.Queue(`SELECT `+convCols+` FROM conversations c WHERE c.id = $1 AND c.owner_id = $2`+lockConversation, conversationID, owner)
	b.Queue(`SELECT `+approvalCols+` FROM approval_requests WHERE conversation_id = $1`+ownedBy(2)+
		` AND id = ANY($3) ORDER BY requested_at, id FOR UPDATE`, conversationID, owner, ids)
	// The database's clock, read once the conversation and its requests
	// are locked: whether a request's time is up is judged against it.
	b.Queue(`SELECT `+policyRead("$1")+`, clock_timestamp()`, owner)
	b.Queue(`SELECT `+cardCols+` FROM tool_approval_cards WHERE (server_label, tool_name) IN
		(SELECT server_label, tool_name FROM approval_requests WHERE conversation_id = $1 AND id = ANY($2))`, conversationID, ids)
	br := r.q.SendBatch(ctx, b)
	defer br.Close() //nolint:errcheck // every result's error is read below
	var err error
	if out.Conversation, err = scanConversation(br.QueryRow()); err != nil {
		return out, orMissing(err, "read conversation", conversationID)
	}
	rows, err := br.Query()
	if err != nil {
		return out, translate(err, "read approval requests")
	}
	if out.Approvals, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (conversation.Approval, error) { return scanApproval(row) }); err != nil {
		return out, translate(err, "read approval requests")
	}
	var raw []byte
	if err := br.QueryRow().Scan(&raw, &out.Now); err != nil {
		return out, translate(err, "read the policy version")
	}
	if out.Policies, err = decodePolicyRead(raw, owner); err != nil {
		return out, err
	}
	if rows, err = br.Query(); err != nil {
		return out, translate(err, "read approval cards")
	}
	if out.Cards, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (policy.ApprovalCard, error) { return scanCard(row) }); err != nil {
		return out, translate(err, "read approval cards")
	}
	return out, translate(br.Close(), "read conversation")
}

// StartMessage does in one round trip what a message's turn did in up to
// four before: the conversation locked (or created), the approval requests of the
// conversation's last response read and locked (Approvals.OfResponse), and
// the person's message appended (AppendItem). The statements are sent as
// one batch and run one after the other, in that order, in the caller's
// transaction; the caller judges what they read (a turn already running, a
// limit reached) and rolls back what they wrote if it refuses. The message
// is appended only to a conversation of m.Owner.
func (r turnStore) StartMessage(ctx context.Context, m conversation.MessageStart) (conversation.MessageStarted, error) {
	var out conversation.MessageStarted
	it := m.Item
	it.Seq, it.CreatedAt, it.Approval = 0, time.Time{}, nil
	data, err := encodeItem(it)
	if err != nil {
		return out, translate(err, "encode transcript item")
	}
	if p, ok := r.q.(*pipeTx); ok && m.ConversationID == "" {
		return startNewConversation(ctx, p, m, it, data)
	}
	id := m.ConversationID
	b := &pgx.Batch{}
	if m.ConversationID != "" {
		b.Queue(`SELECT `+convCols+` FROM conversations c WHERE c.id = $1 AND c.owner_id = $2`+lockConversation, id, m.Owner)
	}
	if m.ConversationID == "" {
		id = m.NewID
		b.Queue(`INSERT INTO conversations AS c (id, title, owner_id) VALUES ($1, $2, $3) RETURNING `+convCols, id, m.Title, m.Owner)
	} else {
		// With the database's clock once they are locked: a pending one
		// whose time is up expires rather than being superseded.
		b.Queue(`SELECT `+approvalCols+`, clock_timestamp() FROM approval_requests
			WHERE conversation_id = $1 AND response_id = (SELECT last_response_id FROM conversations WHERE id = $1 AND owner_id = $2)
			ORDER BY requested_at, id FOR UPDATE`, id, m.Owner)
	}
	b.Queue(`INSERT INTO conversation_items (conversation_id, seq, type, item_id, response_id, data)
		SELECT $1::text, coalesce(max(seq), 0) + 1, $2::text, nullif($3::text, ''), nullif($4::text, ''), $5::json
		FROM conversation_items WHERE conversation_id = $1
		HAVING EXISTS (SELECT 1 FROM conversations WHERE id = $1 AND owner_id = $6)
		RETURNING seq, created_at`, id, it.Type, it.ID, it.ResponseID, string(data), m.Owner)
	br := r.q.SendBatch(ctx, b)
	defer br.Close() //nolint:errcheck // every result's error is read below
	if m.ConversationID != "" {
		if out.Conversation, err = scanConversation(br.QueryRow()); err != nil {
			return out, orMissing(err, "read conversation", id)
		}
	}
	if m.ConversationID == "" {
		if out.Conversation, err = scanConversation(br.QueryRow()); err != nil {
			err = translate(err, "create conversation")
			if apperr.KindOf(err) == apperr.Conflict {
				err = apperr.Wrap(err, apperr.Conflict, "duplicate_conversation", "a conversation with id %q already exists", id)
			}
			return out, err
		}
	} else {
		rows, err := br.Query()
		if err != nil {
			return out, translate(err, "read a response's approval requests")
		}
		if out.Previous, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (conversation.Approval, error) {
			return scanApproval(row, &out.Now)
		}); err != nil {
			return out, translate(err, "read a response's approval requests")
		}
	}
	if err := br.QueryRow().Scan(&it.Seq, &it.CreatedAt); err != nil {
		return out, orMissing(err, "append transcript item", id)
	}
	out.Item = it
	return out, translate(br.Close(), "start a message's turn")
}

// startNewConversation is StartMessage's first message of a new
// conversation in a transaction that can hold writes back: nothing it does
// needs an answer before the turn's opening (the conversation is new, so
// no turn runs in it, its last response asked nothing, and the message is
// its first item), so the conversation and the message are written in the
// batch that carries the opening and the COMMIT, and the turn starts in
// one round trip instead of two. What they return is known beforehand:
// the conversation as created (its times set here rather than by the
// database's clock), the message as the first item. A failure of either
// write fails the batch, which then rolls back, as before.
func startNewConversation(ctx context.Context, p *pipeTx, m conversation.MessageStart, it conversation.Item, data []byte) (conversation.MessageStarted, error) {
	now := time.Now().Round(0).Truncate(time.Microsecond)
	id := m.NewID
	one := func(what string) func(pgconn.CommandTag) error {
		return func(tag pgconn.CommandTag) error {
			if tag.RowsAffected() != 1 {
				return translate(pgx.ErrNoRows, what)
			}
			return nil
		}
	}
	if err := hold(ctx, p, "create conversation", one("create conversation"), `INSERT INTO conversations (id, title, owner_id, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $4)`, id, m.Title, m.Owner, now); err != nil {
		return conversation.MessageStarted{}, err
	}
	it.Seq, it.CreatedAt = 1, now
	if err := hold(ctx, p, "append transcript item", one("append transcript item"), `INSERT INTO conversation_items
		(conversation_id, seq, type, item_id, response_id, data, created_at)
		VALUES ($1, 1, $2, nullif($3::text, ''), nullif($4::text, ''), $5::json, $6)`,
		id, it.Type, it.ID, it.ResponseID, string(data), now); err != nil {
		return conversation.MessageStarted{}, err
	}
	return conversation.MessageStarted{Item: it, Conversation: conversation.Conversation{ID: id, OwnerID: m.Owner, Title: m.Title,
		CreatedAt: now, UpdatedAt: now, Tools: policy.Selection{Servers: map[string]policy.ServerSelection{}}, Kind: "chat"}}, nil
}
