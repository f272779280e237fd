package conversation_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/conversation"
)

// TestEndCodes_DatabaseGoneMidStreamIsStorageFailed: the database closes
// (its connections terminated, new sessions refused) while the model's
// answer streams. Requests outside a turn answer 503 database_unavailable;
// a turn that cannot store what the model sent still ends with its one
// terminal error, storage_failed (retryable), not with a new code.
func TestEndCodes_DatabaseGoneMidStreamIsStorageFailed(t *testing.T) {
	e := newEngine(t, engineOptions{})
	ctx := context.Background()
	cfg := e.pool.Config()
	name := cfg.ConnConfig.Database
	cfg.ConnConfig.Database = "postgres" // a database cannot close itself
	cfg.MaxConns = 1
	admin, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
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
	defer func() {
		if !reopened {
			exec(`ALTER DATABASE "` + name + `" ALLOW_CONNECTIONS true`)
		}
	}()
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
	_, err = e.chat.Get(as(ctx, ana), turn.ConversationID())
	wantCode(t, "reading the conversation while the database is closed", err, apperr.Unavailable, "database_unavailable")

	// Back: the conversation reads again, through the same pool.
	exec(`ALTER DATABASE "` + name + `" ALLOW_CONNECTIONS true`)
	reopened = true
	deadline := time.Now().Add(5 * time.Second)
	for {
		tr, err := e.chat.Get(as(ctx, ana), turn.ConversationID())
		if err == nil {
			t.Logf("after reopening: streaming %v, %d items", tr.Conversation.Streaming, len(tr.Items))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the conversation does not read within 5s of reopening: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
