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

// Append numbers evs after the conversation's last event, stores them
// and announces them on EventsChannel, in one statement (which also queues
// their webhook deliveries, see webhookOutbox): the counter is
// raised under the conversation row's lock, so numbers commit in order and
// a reader that saw id n has seen every id below it. In a transaction, the
// announcement goes out when it commits. A deleted conversation stores
// nothing (last is 0).
func (r eventStore) Append(ctx context.Context, conversationID, turn string, evs []conversation.NewEvent) (int64, error) {
	return r.put(ctx, `UPDATE conversations SET event_seq = event_seq + $2 WHERE id = $1 RETURNING event_seq - $2 AS base`,
		conversationID, turn, 0, evs)
}

// Put stores evs with the ids first, first+1, … that the turn holding the
// conversation's lease gave them (eventlog numbers a running turn's events
// itself), raises the conversation's counter to the last of them, queues
// their webhook deliveries and announces them, in one statement. A
// deleted conversation stores nothing (last is 0); an id stored already
// is an error.
//
// In a transaction it goes with the COMMIT (its ids are known, nothing
// waits for its result), and returns the last id it will have stored.
func (r eventStore) Put(ctx context.Context, conversationID, turn string, first int64, evs []conversation.NewEvent) (int64, error) {
	return r.put(ctx, `UPDATE conversations SET event_seq = greatest(event_seq, $6 + $2 - 1) WHERE id = $1 RETURNING $6::bigint - 1 AS base`,
		conversationID, turn, first, evs)
}

// put is Append and Put: seq is the statement that gives the base the ids
// follow ($1 the conversation, $2 how many, $6 the first id, if given).
func (r eventStore) put(ctx context.Context, seq, conversationID, turn string, first int64, evs []conversation.NewEvent) (int64, error) {
	if len(evs) == 0 {
		return 0, nil
	}
	names := make([]string, len(evs))
	datas := make([]string, len(evs))
	for i, e := range evs {
		names[i], datas[i] = e.Name, string(e.Data)
	}
	args := []any{conversationID, len(evs), turn, names, datas}
	if first > 0 {
		args = append(args, first)
	}
	sql := `
		WITH seq AS (` + seq + `), ins AS (
			INSERT INTO conversation_events (conversation_id, id, turn_id, event, data)
			SELECT $1, seq.base + e.ord, nullif($3, ''), e.name, e.data::json
			FROM seq, unnest($4::text[], $5::text[]) WITH ORDINALITY AS e(name, data, ord)
		)` + webhookOutbox + `
		SELECT seq.base + $2, pg_notify('` + EventsChannel + `', json_build_object('c', $1::text, 'id', seq.base + $2)::text),
			` + webhookWake + `
		FROM seq`
	var last int64
	scan := func(row pgx.Row) error {
		if err := row.Scan(&last, new(any), new(any)); !noRows(err) {
			return translate(err, "store stream events")
		}
		return nil // the conversation is gone: nothing stored
	}
	if first == 0 {
		err := scan(r.q.QueryRow(ctx, sql, args...))
		return last, err
	}
	deferred, err := deferUntilCommit(ctx, r.q, scan, sql, args...)
	if deferred {
		last = first + int64(len(evs)) - 1
	}
	return last, err
}

// PutMany stores the events of many conversations in one statement (one
// round trip, one commit), each batch's with the ids from its First on as
// Put stores them, and announces each conversation's last id on
// EventsChannel (a notification names many). It queues no webhook
// deliveries: it is for events no webhook can subscribe to (text deltas).
// The conversation rows are locked in id order, so two of these never
// deadlock. A deleted conversation stores nothing (its last is 0).
func (r eventStore) PutMany(ctx context.Context, batches []conversation.ConvEvents) ([]int64, error) {
	// Per conversation (sorted, so rows are locked in id order): its last
	// id; per event: its conversation and id.
	order := make([]int, len(batches))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(batches[a].ConversationID, batches[b].ConversationID) })
	convs := make([]string, 0, len(batches))
	tops := make([]int64, 0, len(batches))
	var evConvs, turns, names, datas []string
	var ids []int64
	for _, i := range order {
		b := batches[i]
		if len(b.Events) == 0 {
			continue
		}
		convs = append(convs, b.ConversationID)
		tops = append(tops, b.First+int64(len(b.Events))-1)
		for k, e := range b.Events {
			evConvs = append(evConvs, b.ConversationID)
			ids = append(ids, b.First+int64(k))
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
			UPDATE conversations c SET event_seq = greatest(c.event_seq, x.top)
			FROM locked JOIN unnest($1::text[], $2::bigint[]) AS x(id, top) ON x.id = locked.id
			WHERE c.id = locked.id
			RETURNING c.id, x.top
		), ins AS (
			INSERT INTO conversation_events (conversation_id, id, turn_id, event, data)
			SELECT e.conv, e.id, nullif(e.turn, ''), e.name, e.data::json
			FROM unnest($3::text[], $4::bigint[], $5::text[], $6::text[], $7::text[]) AS e(conv, id, turn, name, data)
			JOIN seq ON seq.id = e.conv
		), lasts AS (
			SELECT id, top, (sum(octet_length(id) + 40) OVER (ORDER BY id) - 1) / `+notifyBytes+` AS chunk FROM seq
		), notes AS (
			SELECT pg_notify('`+EventsChannel+`', json_build_object('b', json_agg(json_build_object('c', id, 'id', top)))::text)
			FROM lasts GROUP BY chunk
		)
		SELECT seq.id, seq.top, (SELECT count(*) FROM notes) FROM seq`, convs, tops, evConvs, ids, turns, names, datas)
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

// After returns up to limit of the conversation's events after id
// after, in order.
func (r eventStore) After(ctx context.Context, conversationID string, after int64, limit int) ([]conversation.StoredEvent, error) {
	return r.events(ctx, `conversation_id = $1 AND id > $2 ORDER BY id LIMIT $3`, conversationID, after, limit)
}

// OfTurn returns every event of one turn, in order.
func (r eventStore) OfTurn(ctx context.Context, conversationID, turn string) ([]conversation.StoredEvent, error) {
	return r.events(ctx, `conversation_id = $1 AND turn_id = $2 ORDER BY id`, conversationID, turn)
}

func (r eventStore) events(ctx context.Context, where string, args ...any) ([]conversation.StoredEvent, error) {
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
func (r eventStore) TurnStart(ctx context.Context, conversationID, turn string) (int64, error) {
	var first *int64
	err := r.q.QueryRow(ctx, `SELECT min(id) FROM conversation_events WHERE conversation_id = $1 AND turn_id = $2`,
		conversationID, turn).Scan(&first)
	if err != nil || first == nil {
		return -1, translate(err, "find the running turn's first event")
	}
	return *first - 1, nil
}

// Notify sends payload on channel (NOTIFY), now.
func (r eventStore) Notify(ctx context.Context, channel, payload string) error {
	_, err := r.q.Exec(ctx, `SELECT pg_notify($1, $2)`, channel, payload)
	return translate(err, "send a notification")
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
