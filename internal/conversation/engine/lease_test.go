package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/conversation"
)

// A replica that dies right after starting a turn (it claimed the
// conversation, nothing more) leaves it to the others: a running replica's
// own periodic sweep closes the turn as interrupted once the lease ran out,
// without any replica having to start.
func TestLease_ARunningReplicaClosesADeadReplicasTurn(t *testing.T) {
	e := newEngine(t, engineOptions{})
	e.chat.SetReplica("rep_dead", time.Second)
	turn := e.message(ana, "", "hello") // claimed with a 1 s lease, never run: the replica died
	conv := turn.ConversationID()

	other := e.replica("rep_alive")
	other.SetReplica("", time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e.janitor(other).Start(ctx)

	deadline := time.Now().Add(5 * time.Second)
	for {
		tr := e.transcript(ana, conv)
		if !tr.Conversation.Streaming {
			last := tr.Items[len(tr.Items)-1]
			if last.Type != conversation.ItemError || last.Error == nil || last.Error.Code != "interrupted" {
				t.Fatalf("last item %+v; want the interrupted error", last)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the dead replica's turn still blocks the conversation 5 s after a 1 s lease")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
