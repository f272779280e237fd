package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/conversation"
)

// A turn whose conversation another replica took over while it streamed
// writes nothing when its response completes: the check that it still
// runs goes in one batch with its end's writes and aborts them all (no
// message item, no terminal event, the conversation's last response and
// running turn left as the takeover has them).
func TestEnd_ATurnTakenOverWritesNothingAtItsEnd(t *testing.T) {
	e := newEngine(t, engineOptions{})
	e.up.setBehavior("event-delay=20ms; deltas=20")
	ctx := as(t.Context(), ana)
	turn, err := e.chat.StartMessage(ctx, "", "hello")
	if err != nil {
		t.Fatal(err)
	}
	conv := turn.ConversationID()
	sub := e.chat.Follow(turn)
	defer sub.Close()
	done := make(chan struct{})
	go func() { defer close(done); turn.Run(ctx, nil) }()

	wait, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for seen := false; !seen; {
		evs, err := sub.Next(wait)
		if err != nil {
			t.Fatalf("waiting for the first delta: %v", err)
		}
		for _, ev := range evs {
			seen = seen || ev.Name == conversation.EventNameTextDelta
		}
	}
	// Another replica's takeover, as the sweep makes it.
	if _, err := e.pool.Exec(ctx, `UPDATE conversations SET active_turn = 'turn_takeover', lease_owner = 'rep_other',
		lease_expires_at = now() + interval '1 minute' WHERE id = $1`, conv); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the turn did not end 10 s after its takeover")
	}
	var ends, messages int
	var active, last *string
	if err := e.pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM conversation_events WHERE conversation_id = $1 AND turn_id = $2 AND event IN ('completed', 'failed', 'error')),
		(SELECT count(*) FROM conversation_items WHERE conversation_id = $1 AND type = 'message'),
		active_turn, last_response_id FROM conversations WHERE id = $1`, conv, turn.ID()).Scan(&ends, &messages, &active, &last); err != nil {
		t.Fatal(err)
	}
	if ends != 0 || messages != 0 || active == nil || *active != "turn_takeover" || last != nil {
		t.Errorf("after the takeover the first turn's end wrote: %d terminal events, %d messages; running %v, last response %v; want nothing written, turn_takeover running",
			ends, messages, deref(active), deref(last))
	}
}
