package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/postgres"
)

func deltas(conv string, n int) []conversation.NewEvent {
	out := make([]conversation.NewEvent, n)
	for i := range out {
		out[i] = conversation.NewEvent{Name: conversation.EventNameTextDelta, Data: fmt.Appendf(nil, `{"delta":"%s %d \"quoted\" ü"}`, conv, i)}
	}
	return out
}

// PutMany stores each conversation's events with the ids its running turn
// gave them (numbered after its last one), for several conversations in
// one statement: the counter is raised so Append goes on after them, data
// is kept byte for byte, a deleted conversation stores nothing (0), every
// conversation's last id is announced on toolgate_events, an id stored
// already is refused, and concurrent PutMany and Append on the same
// conversations, beside lease renewals, never deadlock.
func TestPutMany_StoresTheTurnsIdsAndAnnouncesThem(t *testing.T) {
	store, pool := newConversations(t)
	r := store.Repo()
	ctx := t.Context()
	for _, id := range []string{"conv_a", "conv_b", "conv_c"} {
		mustCreate(t, r, id)
	}
	if _, err := r.Events.Append(ctx, "conv_a", "turn_a", deltas("conv_a", 2)); err != nil {
		t.Fatal(err)
	}
	conn := listenEvents(t, pool)

	lasts, err := r.Events.PutMany(ctx, []conversation.ConvEvents{
		{ConversationID: "conv_a", Turn: "turn_a", First: 3, Events: deltas("conv_a", 3)},
		{ConversationID: "conv_gone", Turn: "turn_x", First: 1, Events: deltas("conv_gone", 2)},
		{ConversationID: "conv_b", Turn: "turn_b", First: 1, Events: deltas("conv_b", 1)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(lasts) != "[5 0 1]" {
		t.Fatalf("PutMany returned lasts %v; want [5 0 1] (a went on after its 2, the missing conversation stored nothing)", lasts)
	}
	if last, err := r.Events.Append(ctx, "conv_a", "turn_a", deltas("conv_a", 1)); err != nil || last != 6 {
		t.Fatalf("Append after PutMany gave id %d (%v); want 6: the counter follows what was put", last, err)
	}
	if _, err := r.Events.Put(ctx, "conv_a", "turn_a", 5, deltas("conv_a", 1)); err == nil {
		t.Fatal("Put of an id stored already succeeded; want an error (no id is given twice)")
	}
	evs, err := r.Events.After(ctx, "conv_a", 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	want := append(append(deltas("conv_a", 2), deltas("conv_a", 3)...), deltas("conv_a", 1)...)
	if len(evs) != 6 {
		t.Fatalf("conv_a holds %d events; want 6", len(evs))
	}
	for i, e := range evs {
		if e.ID != int64(i+1) || e.TurnID != "turn_a" || e.Name != conversation.EventNameTextDelta || string(e.Data) != string(want[i].Data) {
			t.Fatalf("conv_a event %d = %d %q %q %s; want %d turn_a text.delta %s", i, e.ID, e.TurnID, e.Name, e.Data, i+1, want[i].Data)
		}
	}
	n, err := conn.Conn().WaitForNotification(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var p conversation.EventsNotification
	if err := json.Unmarshal([]byte(n.Payload), &p); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, b := range p.B {
		got[b.C] = b.ID
	}
	if got["conv_a"] < 5 || got["conv_b"] != 1 || len(got) != 2 {
		t.Fatalf("announced %s; want one notification: conv_a up to 5 and conv_b up to 1", n.Payload)
	}
	var deliveries int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM conversation_events WHERE conversation_id = 'conv_gone'`).Scan(&deliveries); err != nil || deliveries != 0 {
		t.Fatalf("the missing conversation holds %d events (%v); want none", deliveries, err)
	}

	// Concurrent writers, both ways, over the same conversations in
	// different orders (each PutMany with ids of its own, far apart, as
	// turns of different leases would give them; Append goes on after the
	// highest), beside lease renewals of their turns (every
	// replica renews its leases while its turns' deltas are stored): every
	// id once, no deadlock.
	if _, err := pool.Exec(ctx, `UPDATE conversations SET active_turn = 'turn_' || id, lease_owner = 'rep_a',
		lease_expires_at = now() + interval '1 minute'`); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 80)
	for i := range 20 {
		wg.Add(3)
		go func() {
			defer wg.Done()
			_, err := r.Leases.Renew(ctx, "rep_a", []string{"turn_conv_c", "turn_conv_b", "turn_conv_a"}, time.Minute)
			errs <- err
		}()
		go func() {
			defer wg.Done()
			order := []string{"conv_a", "conv_b", "conv_c"}
			if i%2 == 1 {
				order = []string{"conv_c", "conv_b", "conv_a"}
			}
			var in []conversation.ConvEvents
			for _, c := range order {
				in = append(in, conversation.ConvEvents{ConversationID: c, Turn: "t", First: int64(100000 + 1000*i), Events: deltas(c, 2)})
			}
			_, err := r.Events.PutMany(context.WithoutCancel(ctx), in)
			errs <- err
		}()
		go func() {
			defer wg.Done()
			_, err := r.Events.Append(ctx, "conv_b", "t", deltas("conv_b", 1))
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent appends: %v", err)
		}
	}
	for c, n := range map[string]int{"conv_a": 6 + 40, "conv_b": 1 + 40 + 20, "conv_c": 40} {
		rows, err := pool.Query(ctx, `SELECT id FROM conversation_events WHERE conversation_id = $1 ORDER BY id`, c)
		if err != nil {
			t.Fatal(err)
		}
		got, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != n {
			t.Fatalf("%s holds %d events, ids %v; want %d", c, len(got), got, n)
		}
	}
}

// A write for many conversations announces them all, in notifications
// Postgres accepts (a payload is at most 8000 bytes): 250 conversations
// with long ids.
func TestPutMany_AnnouncesManyConversationsInPayloadsPostgresAccepts(t *testing.T) {
	store, pool := newConversations(t)
	r := store.Repo()
	ctx := t.Context()
	var in []conversation.ConvEvents
	for i := range 250 {
		id := fmt.Sprintf("conv_%060d", i)
		mustCreate(t, r, id)
		in = append(in, conversation.ConvEvents{ConversationID: id, Turn: "t", First: 1, Events: deltas(id, 1)})
	}
	conn := listenEvents(t, pool)
	if _, err := r.Events.PutMany(ctx, in); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for len(got) < 250 {
		wait, cancel := context.WithTimeout(ctx, 5*time.Second)
		n, err := conn.Conn().WaitForNotification(wait)
		cancel()
		if err != nil {
			t.Fatalf("after %d conversations announced: %v", len(got), err)
		}
		var p conversation.EventsNotification
		if err := json.Unmarshal([]byte(n.Payload), &p); err != nil {
			t.Fatal(err)
		}
		for _, b := range p.B {
			got[b.C] = b.ID
		}
	}
	for _, c := range in {
		if got[c.ConversationID] != 1 {
			t.Fatalf("%s announced up to %d; want 1", c.ConversationID, got[c.ConversationID])
		}
	}
}

// A takeover numbers its events past conversation.TakeoverGap ids beyond
// the last one stored: the dead replica may have streamed that many text
// deltas it never stored, and a client holding one of their ids must get
// the takeover's events after it.
func TestLockExpiredTurn_TakeoverNumbersPastWhatTheDeadReplicaMayHaveStreamed(t *testing.T) {
	store, pool := newConversations(t)
	ctx := t.Context()
	mustCreate(t, store.Repo(), "conv_a")
	if _, err := store.Repo().Events.Append(ctx, "conv_a", "turn_a", deltas("conv_a", 3)); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE conversations SET active_turn = 'turn_a', lease_owner = 'rep_dead',
		lease_expires_at = now() - interval '1 second' WHERE id = 'conv_a'`); err != nil {
		t.Fatal(err)
	}
	var last int64
	err := store.Tx(ctx, func(r conversation.Repo) error {
		ok, err := r.Leases.LockExpiredTurn(ctx, "conv_a", "turn_a")
		if err != nil || !ok {
			return fmt.Errorf("LockExpiredTurn = %v, %v; want the expired turn locked", ok, err)
		}
		last, err = r.Events.Append(ctx, "conv_a", "turn_a", deltas("conv_a", 1))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(3 + conversation.TakeoverGap + 1); last != want {
		t.Fatalf("the takeover's first event got id %d; want %d (3 stored, then the gap)", last, want)
	}
}

// listenEvents is a connection of pool listening on EventsChannel, released
// at the test's end.
func listenEvents(t *testing.T, pool *pgxpool.Pool) *pgxpool.Conn {
	t.Helper()
	conn, err := pool.Acquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Release)
	if _, err := conn.Exec(t.Context(), "LISTEN "+postgres.EventsChannel); err != nil {
		t.Fatal(err)
	}
	return conn
}
