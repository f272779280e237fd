// Package eventdb is the statement that stores the text deltas of many
// conversations at once (the event log's group write), apart from the
// store's other statements. The caller translates its errors.
package eventdb

import (
	"context"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/internal/conversation"
)

// Querier runs a statement: the pool or a transaction.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// notifyBytes bounds what one notification names (about 40 bytes of JSON
// besides each id; Postgres refuses payloads of 8000 bytes).
const notifyBytes = "7000"

// PutMany stores the events of many conversations in one statement (one
// round trip, one commit), each batch's with the ids from its First on as
// the store's Put stores them, and announces each conversation's last id on
// channel (a notification names many, each at most notifyBytes). It queues no webhook
// deliveries: it is for events no webhook can subscribe to (text deltas).
// The conversation rows are locked in id order, so two of these never
// deadlock. A deleted conversation stores nothing (its last is 0).
func PutMany(ctx context.Context, q Querier, channel string, batches []conversation.ConvEvents) ([]int64, error) {
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
	rows, err := q.Query(ctx, `
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
			SELECT pg_notify('`+channel+`', json_build_object('b', json_agg(json_build_object('c', id, 'id', top)))::text)
			FROM lasts GROUP BY chunk
		)
		SELECT seq.id, seq.top, (SELECT count(*) FROM notes) FROM seq`, convs, tops, evConvs, ids, turns, names, datas)
	if err != nil {
		return nil, err
	}
	last := make(map[string]int64, len(convs))
	for rows.Next() {
		var id string
		var n int64
		if err := rows.Scan(&id, &n, new(any)); err != nil {
			rows.Close()
			return nil, err
		}
		last[id] = n
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for i, b := range batches {
		lasts[i] = last[b.ConversationID]
	}
	return lasts, nil
}
