package postgres

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/postgres/eventdb"
)

// EventsChannel is the NOTIFY channel on which committed events are
// announced: {"c": conversation id, "id": last id} for one conversation's,
// {"b": [{"c": …, "id": …}, …]} for PutMany's (as many conversations
// as fit in 7000 bytes, under Postgres's 8000: eventdb).
// conversation.ParseEventsNotification reads both.
const EventsChannel = conversation.ChannelEvents

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
// round trip, one commit): eventdb.PutMany, announced on EventsChannel.
func (r eventStore) PutMany(ctx context.Context, batches []conversation.ConvEvents) ([]int64, error) {
	lasts, err := eventdb.PutMany(ctx, r.q, EventsChannel, batches)
	return lasts, translate(err, "store stream events")
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
