package postgres

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolgate/toolgate/internal/conversation"
)

// EventsChannel is the NOTIFY channel on which committed events are
// announced: {"c": conversation id, "id": last id} for one conversation's,
// {"b": [{"c": …, "id": …}, …]} for AppendMany's (as many conversations
// as fit in notifyBytes, under Postgres's 8000 bytes).
// conversation.ParseEventsNotification reads both.
const EventsChannel = conversation.ChannelEvents

// notifyBytes bounds what one AppendMany notification names (about 40
// bytes of JSON besides each id; Postgres refuses payloads of 8000 bytes).
const notifyBytes = "7000"

// SignalsChannel carries conversation.Signal as JSON: cancel a turn, a
// conversation deleted, an account's turns stopped.
const SignalsChannel = conversation.ChannelSignals

// AppendEvents numbers evs after the conversation's last event, stores them
// and announces them on EventsChannel, in one statement (which also queues
// their webhook deliveries, see webhookOutbox): the counter is
// raised under the conversation row's lock, so numbers commit in order and
// a reader that saw id n has seen every id below it. In a transaction, the
// announcement goes out when it commits. A deleted conversation stores
// nothing (last is 0).
func (r convRepo) AppendEvents(ctx context.Context, conversationID, turn string, evs []conversation.NewEvent) (int64, error) {
	if len(evs) == 0 {
		return 0, nil
	}
	names := make([]string, len(evs))
	datas := make([]string, len(evs))
	for i, e := range evs {
		names[i], datas[i] = e.Name, string(e.Data)
	}
	var last int64
	err := r.q.QueryRow(ctx, `
		WITH seq AS (
			UPDATE conversations SET event_seq = event_seq + $2 WHERE id = $1 RETURNING event_seq - $2 AS base
		), ins AS (
			INSERT INTO conversation_events (conversation_id, id, turn_id, event, data)
			SELECT $1, seq.base + e.ord, nullif($3, ''), e.name, e.data::json
			FROM seq, unnest($4::text[], $5::text[]) WITH ORDINALITY AS e(name, data, ord)
		)`+webhookOutbox+`
		SELECT seq.base + $2, pg_notify('`+EventsChannel+`', json_build_object('c', $1::text, 'id', seq.base + $2)::text),
			`+webhookWake+`
		FROM seq`, conversationID, len(evs), turn, names, datas).Scan(&last, new(any), new(any))
	if noRows(err) {
		return 0, nil
	}
	return last, translate(err, "store stream events")
}

// AppendMany stores the events of many conversations in one statement
// (one round trip, one commit), each conversation's numbered after its last
// event exactly as AppendEvents numbers them, and announces each
// conversation's last id on EventsChannel (a notification names many). It queues no webhook deliveries:
// it is for events no webhook can subscribe to (text deltas). The
// conversation rows are locked in id order, so two of these never
// deadlock. A deleted conversation stores nothing (its last is 0).
func (r convRepo) AppendMany(ctx context.Context, batches []conversation.ConvEvents) ([]int64, error) {
	// Per conversation (sorted, so rows are locked in id order): how many
	// events; per event: its conversation, its place among them (1..n).
	order := make([]int, len(batches))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(batches[a].ConversationID, batches[b].ConversationID) })
	convs := make([]string, 0, len(batches))
	counts := make([]int32, 0, len(batches))
	var evConvs, turns, names, datas []string
	var places []int32
	for _, i := range order {
		b := batches[i]
		if len(b.Events) == 0 {
			continue
		}
		convs = append(convs, b.ConversationID)
		counts = append(counts, int32(len(b.Events)))
		for k, e := range b.Events {
			evConvs = append(evConvs, b.ConversationID)
			places = append(places, int32(k+1))
			turns = append(turns, b.Turn)
			names = append(names, e.Name)
			datas = append(datas, string(e.Data))
		}
	}
	lasts := make([]int64, len(batches))
	if len(convs) == 0 {
		return lasts, nil
	}
	rows, err := r.q.Query(ctx, `
		WITH locked AS (
			SELECT c.id FROM conversations c WHERE c.id = ANY($1::text[]) ORDER BY c.id FOR UPDATE
		), seq AS (
			UPDATE conversations c SET event_seq = c.event_seq + x.n
			FROM locked JOIN unnest($1::text[], $2::int[]) AS x(id, n) ON x.id = locked.id
			WHERE c.id = locked.id
			RETURNING c.id, c.event_seq - x.n AS base, x.n
		), ins AS (
			INSERT INTO conversation_events (conversation_id, id, turn_id, event, data)
			SELECT e.conv, seq.base + e.k, nullif(e.turn, ''), e.name, e.data::json
			FROM unnest($3::text[], $4::int[], $5::text[], $6::text[], $7::text[]) AS e(conv, k, turn, name, data)
			JOIN seq ON seq.id = e.conv
		), lasts AS (
			SELECT id, base + n AS last, (sum(octet_length(id) + 40) OVER (ORDER BY id) - 1) / `+notifyBytes+` AS chunk FROM seq
		), notes AS (
			SELECT pg_notify('`+EventsChannel+`', json_build_object('b', json_agg(json_build_object('c', id, 'id', last)))::text)
			FROM lasts GROUP BY chunk
		)
		SELECT seq.id, seq.base + seq.n, (SELECT count(*) FROM notes) FROM seq`, convs, counts, evConvs, places, turns, names, datas)
	if err != nil {
		return nil, translate(err, "store stream events")
	}
	last := make(map[string]int64, len(convs))
	for rows.Next() {
		var id string
		var n int64
		if err := rows.Scan(&id, &n, new(any)); err != nil {
			rows.Close()
			return nil, translate(err, "store stream events")
		}
		last[id] = n
	}
	if err := rows.Err(); err != nil {
		return nil, translate(err, "store stream events")
	}
	for i, b := range batches {
		lasts[i] = last[b.ConversationID]
	}
	return lasts, nil
}

// EventsAfter returns up to limit of the conversation's events after id
// after, in order.
func (r convRepo) EventsAfter(ctx context.Context, conversationID string, after int64, limit int) ([]conversation.StoredEvent, error) {
	return r.events(ctx, `conversation_id = $1 AND id > $2 ORDER BY id LIMIT $3`, conversationID, after, limit)
}

// TurnEvents returns every event of one turn, in order.
func (r convRepo) TurnEvents(ctx context.Context, conversationID, turn string) ([]conversation.StoredEvent, error) {
	return r.events(ctx, `conversation_id = $1 AND turn_id = $2 ORDER BY id`, conversationID, turn)
}

func (r convRepo) events(ctx context.Context, where string, args ...any) ([]conversation.StoredEvent, error) {
	rows, err := r.q.Query(ctx, `SELECT id, coalesce(turn_id, ''), event, data FROM conversation_events WHERE `+where, args...)
	if err != nil {
		return nil, translate(err, "read stream events")
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (conversation.StoredEvent, error) {
		var e conversation.StoredEvent
		var data []byte
		err := row.Scan(&e.ID, &e.TurnID, &e.Name, &data)
		e.Data = json.RawMessage(data)
		return e, err
	})
	return out, translate(err, "read stream events")
}

// TurnStart is the id just before the running turn's first event: a stream
// opened without Last-Event-ID while a turn runs starts there, so a page
// reloaded mid-answer sees the answer so far.
func (r convRepo) TurnStart(ctx context.Context, conversationID, turn string) (int64, error) {
	var first *int64
	err := r.q.QueryRow(ctx, `SELECT min(id) FROM conversation_events WHERE conversation_id = $1 AND turn_id = $2`,
		conversationID, turn).Scan(&first)
	if err != nil || first == nil {
		return -1, translate(err, "find the running turn's first event")
	}
	return *first - 1, nil
}

// Notify sends payload on channel (NOTIFY), now.
func (r convRepo) Notify(ctx context.Context, channel, payload string) error {
	_, err := r.q.Exec(ctx, `SELECT pg_notify($1, $2)`, channel, payload)
	return translate(err, "send a notification")
}

// RenewLeases extends the leases owner holds on turns by ttl and returns
// the turns it still holds: a turn missing from the answer was taken over
// (or ended) and must stop.
func (r convRepo) RenewLeases(ctx context.Context, owner string, turns []string, ttl time.Duration) ([]string, error) {
	if len(turns) == 0 {
		return nil, nil
	}
	// The rows are locked in id order, as AppendMany locks them: the two
	// run side by side on every replica and must not deadlock.
	rows, err := r.q.Query(ctx, `WITH held AS (
			SELECT id FROM conversations WHERE lease_owner = $1 AND active_turn = ANY($2) ORDER BY id FOR UPDATE
		)
		UPDATE conversations c SET lease_expires_at = clock_timestamp() + make_interval(secs => $3)
		FROM held WHERE c.id = held.id AND c.lease_owner = $1 AND c.active_turn = ANY($2) RETURNING c.active_turn`, owner, turns, ttl.Seconds())
	if err != nil {
		return nil, translate(err, "renew turn leases")
	}
	held, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return held, translate(err, "renew turn leases")
}

// ExpiredTurns lists up to limit running turns whose lease ran out (or
// that an older Toolgate started without one).
func (r convRepo) ExpiredTurns(ctx context.Context, limit int) ([]conversation.RunningTurn, error) {
	rows, err := r.q.Query(ctx, `SELECT id, coalesce(owner_id, ''), active_turn, coalesce(lease_owner, '') FROM conversations
		WHERE active_turn IS NOT NULL AND (lease_expires_at IS NULL OR lease_expires_at < clock_timestamp())
		ORDER BY lease_expires_at NULLS FIRST LIMIT $1`, limit)
	if err != nil {
		return nil, translate(err, "list expired turn leases")
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (conversation.RunningTurn, error) {
		var t conversation.RunningTurn
		err := row.Scan(&t.ConversationID, &t.OwnerID, &t.Turn, &t.LeaseOwner)
		return t, err
	})
	return out, translate(err, "list expired turn leases")
}

// LockExpiredTurn locks the conversation if turn still runs in it on an
// expired lease; false when another replica took it over, it ended, or its
// lease was renewed. Call it in a transaction.
func (r convRepo) LockExpiredTurn(ctx context.Context, conversationID, turn string) (bool, error) {
	var ok bool
	err := r.q.QueryRow(ctx, `SELECT true FROM conversations WHERE id = $1 AND active_turn = $2
		AND (lease_expires_at IS NULL OR lease_expires_at < clock_timestamp())`+lockConversation, conversationID, turn).Scan(&ok)
	if noRows(err) {
		return false, nil
	}
	return ok, translate(err, "lock an expired turn")
}

// MarkSent records, before the request leaves, that turn carries the
// answers to ids.
func (r convRepo) MarkSent(ctx context.Context, ids []string, turn string) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := r.q.Exec(ctx, `UPDATE approval_requests SET sent_in_turn = $2 WHERE id = ANY($1)`, ids, turn)
	return translate(err, "record answers being sent")
}

// UnmarkSent forgets that turn carried answers the provider is known not
// to have received (it refused the request), so they can be sent again.
func (r convRepo) UnmarkSent(ctx context.Context, turn string) error {
	_, err := r.q.Exec(ctx, `UPDATE approval_requests SET sent_in_turn = NULL WHERE sent_in_turn = $1 AND answered_in IS NULL`, turn)
	return translate(err, "record answers not sent")
}

// SentApprovals returns the approval requests whose answers turn carried.
func (r convRepo) SentApprovals(ctx context.Context, conversationID, turn string) ([]conversation.Approval, error) {
	return r.approvals(ctx, "read the approval requests a turn answered",
		`conversation_id = $1 AND sent_in_turn = $2 ORDER BY requested_at, id FOR UPDATE`, conversationID, turn)
}

// PendingApprovals counts the approval requests waiting for a decision, in
// the whole database (a metric).
func PendingApprovals(ctx context.Context, pool *pgxpool.Pool) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var n int64
	err := pool.QueryRow(ctx, `SELECT count(*) FROM approval_requests WHERE state = 'pending'`).Scan(&n)
	return n, translate(err, "count pending approvals")
}
