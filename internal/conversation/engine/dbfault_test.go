package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/conversation/engine"
)

// outage runs a turn of ana's during which the database closes (its
// connections terminated, new sessions refused) while the model's answer
// streams, and checks that the turn ends with its one terminal error,
// storage_failed (retryable), not with a new code, and that requests
// outside a turn answer 503 database_unavailable. It returns the
// conversation and reopen, which lets the database accept connections again.
func outage(t *testing.T, e *harness) (conv string, reopen func()) {
	t.Helper()
	ctx := context.Background()
	cfg := e.pool.Config()
	name := cfg.ConnConfig.Database
	cfg.ConnConfig.Database = "postgres" // a database cannot close itself
	cfg.MaxConns = 1
	admin, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(admin.Close)
	exec := func(sql string) {
		t.Helper()
		if _, err := admin.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}

	e.up.setBehavior("event-delay=150ms; deltas=6")
	turn := e.message(ana, "", "hello")
	rec := newRecorder()
	done := make(chan struct{})
	go func() {
		defer close(done)
		turn.Run(as(ctx, ana), rec)
	}()
	rec.waitFor(t, conversation.EventNameTextDelta)
	exec(`ALTER DATABASE "` + name + `" ALLOW_CONNECTIONS false`)
	reopened := false
	reopen = func() {
		t.Helper()
		if !reopened {
			exec(`ALTER DATABASE "` + name + `" ALLOW_CONNECTIONS true`)
			reopened = true
		}
	}
	t.Cleanup(reopen)
	exec(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '` + name + `'`)

	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the turn did not end within 30s; events %v", rec.names())
	}
	n := rec.count(conversation.EventNameError) + rec.count(conversation.EventNameFailed) + rec.count(conversation.EventNameCompleted)
	if rec.last() != conversation.EventNameError || n != 1 {
		t.Fatalf("events %v; want exactly one terminal event, error, last", rec.names())
	}
	if ev, _ := rec.lastData().(conversation.TurnError); ev.Code != "storage_failed" || !ev.Retryable {
		t.Errorf("error event %+v; want storage_failed, retryable", ev)
	}
	_, err = e.chat.Book().Get(as(ctx, ana), turn.ConversationID())
	wantCode(t, "reading the conversation while the database is closed", err, apperr.Unavailable, "database_unavailable")
	return turn.ConversationID(), reopen
}

// stopChat stops e's service when the test ends, before its database goes.
func stopChat(t *testing.T, e *harness) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		e.chat.Stop(ctx)
	})
}

// TestEndCodes_DatabaseGoneMidStreamIsStorageFailed: a turn that cannot
// store what the model sent ends with storage_failed; its end, which could
// not be stored either, is stored as soon as the database is back, so the
// conversation does not stay "streaming" (refusing every message) for good.
func TestEndCodes_DatabaseGoneMidStreamIsStorageFailed(t *testing.T) {
	e := newEngine(t, engineOptions{})
	stopChat(t, e)
	ctx := context.Background()
	conv, reopen := outage(t, e)

	// Back: the conversation reads again, through the same pool, and
	// within a few seconds no longer streams.
	reopen()
	deadline := time.Now().Add(10 * time.Second)
	for {
		tr, err := e.chat.Book().Get(as(ctx, ana), conv)
		if err == nil && !tr.Conversation.Streaming {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the conversation is not idle within 10s of reopening: err %v, streaming %v", err, tr.Conversation.Streaming)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// A new message runs a normal turn.
	e.up.setBehavior("")
	_, rec := e.send(ana, conv, "hello again")
	if rec.count(conversation.EventNameTextDelta) == 0 {
		t.Errorf("the new turn streamed no text: %v", rec.names())
	}
}

// TestEndCodes_DatabaseGoneTurnEndOnStop: a turn end still waiting to be
// retried gets one last attempt when the service stops; that late write
// clears only its own turn, never a newer one.
func TestEndCodes_DatabaseGoneTurnEndOnStop(t *testing.T) {
	for _, newer := range []bool{false, true} {
		name := map[bool]string{false: "own turn cleared", true: "newer turn kept"}[newer]
		t.Run(name, func(t *testing.T) {
			e := newEngine(t, engineOptions{})
			engine.SetEndRetry(e.chat, time.Hour, time.Hour) // only Stop's last attempt
			ctx := context.Background()
			conv, reopen := outage(t, e)
			reopen()
			streaming := func() (bool, *string) {
				t.Helper()
				var active *string
				var err error
				for range 100 { // the pool reconnects
					if err = e.pool.QueryRow(ctx, `SELECT active_turn FROM conversations WHERE id = $1`, conv).Scan(&active); err == nil {
						return active != nil, active
					}
					time.Sleep(50 * time.Millisecond)
				}
				t.Fatalf("reading the conversation after reopening: %v", err)
				return false, nil
			}
			if s, _ := streaming(); !s {
				t.Fatal("the conversation is idle before Stop; want the end still waiting to be retried")
			}
			if newer {
				// As if another process had cleared it (Recover) and started a turn.
				if _, err := e.pool.Exec(ctx, `UPDATE conversations SET active_turn = 'turn_newer' WHERE id = $1`, conv); err != nil {
					t.Fatal(err)
				}
			}
			sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			e.chat.Stop(sctx)
			s, active := streaming()
			switch {
			case newer && (!s || *active != "turn_newer"):
				t.Errorf("after Stop the conversation's turn is %v; the late end must leave turn_newer", active)
			case !newer && s:
				t.Errorf("after Stop the conversation still runs turn %q; Stop's last attempt must clear it", *active)
			}
		})
	}
}
