package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/conversation/eventlog"
	"github.com/toolgate/toolgate/internal/postgres"
)

// Many turns stream at once on one replica: their text deltas are stored
// together (one statement carries deltas of several conversations), and
// still every stream gets exactly what the log holds, in the order the
// turn sent it: the same ids, names and data a reader of the log gets
// (most of them handed over from memory), every delta before the message's
// item.done, the terminal event last; and a second replica's stream of the
// same conversation, which reads the log itself, gets the same again.
func TestEventLog_ConcurrentTurnsAreStoredTogetherAndStreamedAsStored(t *testing.T) {
	e := newEngine(t, engineOptions{})
	e.up.setBehavior("event-delay=1ms; deltas=30")
	const turns = 12
	other := e.replica("rep_b")
	ctx := as(t.Context(), ana)
	type result struct {
		conv  string
		after int64
		got   []conversation.StoredEvent
		other []conversation.StoredEvent
		err   error
	}
	results := make([]result, turns)
	var wg sync.WaitGroup
	read := func(sub *eventlog.Subscription, turn string) ([]conversation.StoredEvent, error) {
		var out []conversation.StoredEvent
		wait, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		for {
			evs, err := sub.Next(wait)
			if err != nil {
				return out, err
			}
			for _, ev := range evs {
				out = append(out, ev)
				if ev.TurnID == turn && (ev.Name == conversation.EventNameCompleted || ev.Name == conversation.EventNameError || ev.Name == conversation.EventNameFailed) {
					return out, nil
				}
			}
		}
	}
	for i := range turns {
		turn := e.message(ana, "", fmt.Sprintf("hello %d", i))
		conv := turn.ConversationID()
		sub := e.chat.Follow(turn)
		far, err := other.Events(ctx, conv, turn.After())
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(3)
		go func() { defer wg.Done(); turn.Run(ctx, nil) }()
		go func() {
			defer wg.Done()
			defer sub.Close()
			results[i].conv, results[i].after = conv, turn.After()
			results[i].got, results[i].err = read(sub, turn.ID())
		}()
		go func() {
			defer wg.Done()
			defer far.Close()
			var err error
			if results[i].other, err = read(far, turn.ID()); err != nil {
				t.Errorf("the other replica's stream of %s: %v", conv, err)
			}
		}()
	}
	wg.Wait()

	deltas := 0
	for _, r := range results {
		if r.err != nil {
			t.Fatalf("stream of %s: %v", r.conv, r.err)
		}
		stored, err := postgres.NewConversationStore(e.pool).Repo().Events.After(ctx, r.conv, r.after, 10000)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.got) != len(stored) {
			t.Fatalf("%s: the stream got %d events, the log holds %d: %s", r.conv, len(r.got), len(stored), summary(r.got))
		}
		for j := range stored {
			if r.got[j].ID != stored[j].ID || r.got[j].Name != stored[j].Name || r.got[j].TurnID != stored[j].TurnID ||
				string(r.got[j].Data) != string(stored[j].Data) {
				t.Fatalf("%s: event %d streamed as %d %s %s; the log holds %d %s %s", r.conv, j, r.got[j].ID, r.got[j].Name, r.got[j].Data,
					stored[j].ID, stored[j].Name, stored[j].Data)
			}
			if j > 0 && stored[j].ID != stored[j-1].ID+1 {
				t.Fatalf("%s: ids %d then %d; want consecutive", r.conv, stored[j-1].ID, stored[j].ID)
			}
		}
		if len(r.other) != len(stored) {
			t.Fatalf("%s: the other replica's stream got %d events, the log holds %d", r.conv, len(r.other), len(stored))
		}
		for j := range stored {
			if r.other[j].ID != stored[j].ID || string(r.other[j].Data) != string(stored[j].Data) {
				t.Fatalf("%s: the other replica streamed event %d as %d %s; the log holds %d %s", r.conv, j, r.other[j].ID, r.other[j].Data, stored[j].ID, stored[j].Data)
			}
		}
		// The turn's order: its deltas, then the message's item.done, then completed.
		var text strings.Builder
		sawMessage := false
		for _, ev := range stored {
			switch ev.Name {
			case conversation.EventNameTextDelta:
				if sawMessage {
					t.Fatalf("%s: a text delta stored after the message's item.done: %s", r.conv, summary(stored))
				}
				var d conversation.TextDeltaEvent
				if err := json.Unmarshal(ev.Data, &d); err != nil {
					t.Fatal(err)
				}
				text.WriteString(d.Delta)
				deltas++
			case conversation.EventNameItem:
				var it conversation.ItemEvent
				if err := json.Unmarshal(ev.Data, &it); err != nil {
					t.Fatal(err)
				}
				if it.Item.Type == conversation.ItemMessage {
					sawMessage = true
					if it.Item.Text != text.String() {
						t.Fatalf("%s: the message says %q; its stored deltas say %q", r.conv, it.Item.Text, text.String())
					}
				}
			}
		}
		if !sawMessage || stored[len(stored)-1].Name != conversation.EventNameCompleted {
			t.Fatalf("%s: want the answer's item.done and completed last: %s", r.conv, summary(stored))
		}
	}
	if deltas == 0 || deltas > turns*30 {
		t.Fatalf("%d deltas stored in all; want 1 to %d (the model sent %[2]d)", deltas, turns*30)
	}

	// Stored together: fewer transactions than deltas, and some carried
	// deltas of several conversations.
	var txs, widest int
	if err := e.pool.QueryRow(t.Context(), `SELECT count(*), coalesce(max(convs), 0) FROM (
		SELECT xmin::text, count(DISTINCT conversation_id) AS convs FROM conversation_events WHERE event = 'text.delta' GROUP BY 1) x`).Scan(&txs, &widest); err != nil {
		t.Fatal(err)
	}
	if txs >= turns*30 || widest < 2 {
		t.Fatalf("%d deltas from the model stored in %d transactions, at most %d conversations in one; want fewer transactions than deltas, several conversations in one", turns*30, txs, widest)
	}
	memory, store := e.hub.StreamReads()
	if memory < store {
		t.Fatalf("the streams of the replica running the turns read %d times from memory, %d from the store; want mostly memory", memory, store)
	}
	t.Logf("%d deltas of %d turns stored in %d transactions (up to %d conversations in one); stream reads: %d from memory, %d from the store",
		deltas, turns, txs, widest, memory, store)
}

// The replica running a turn streams its text deltas before they are
// stored: with the conversation's row locked by another transaction (the
// store cannot write), the turn's stream still gets deltas, numbered after
// the last event stored, while the log holds none of them; an event that
// carries a decision point (the message's item.done, completed) waits
// until everything before it is committed; once the lock goes, the log
// holds every delta with the id the stream saw.
func TestEventLog_DeltasStreamBeforeTheyAreStoredDecisionsAfter(t *testing.T) {
	e := newEngine(t, engineOptions{})
	e.up.setBehavior("event-delay=5ms; deltas=200")
	ctx := as(t.Context(), ana)
	turn := e.message(ana, "", "hello")
	conv := turn.ConversationID()
	sub := e.chat.Follow(turn)
	defer sub.Close()
	done := make(chan struct{})
	go func() { defer close(done); turn.Run(ctx, nil) }()
	wait, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var got []conversation.StoredEvent
	readUntil := func(stop func(conversation.StoredEvent) bool) {
		t.Helper()
		for {
			evs, err := sub.Next(wait)
			if err != nil {
				t.Fatalf("stream after %s: %v", summary(got), err)
			}
			stopped := false
			for _, ev := range evs {
				got = append(got, ev)
				stopped = stop(ev) || stopped
			}
			if stopped {
				return
			}
		}
	}
	readUntil(func(ev conversation.StoredEvent) bool { return ev.Name == conversation.EventNameTextDelta })
	lock, err := e.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // rolled back below; this is for a failure before
	if _, err := lock.Exec(ctx, `SELECT 1 FROM conversations WHERE id = $1 FOR UPDATE`, conv); err != nil {
		t.Fatal(err)
	}
	var stored int64
	if err := e.pool.QueryRow(ctx, `SELECT coalesce(max(id), 0) FROM conversation_events WHERE conversation_id = $1`, conv).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	ahead := 0
	readUntil(func(ev conversation.StoredEvent) bool {
		if ev.Name != conversation.EventNameTextDelta {
			t.Fatalf("%s streamed while the store could not write (%s); want only text deltas before their commit", ev.Name, summary(got))
		}
		if ev.ID > stored {
			ahead++
		}
		return ahead == 10
	})
	var held int64
	if err := e.pool.QueryRow(ctx, `SELECT coalesce(max(id), 0) FROM conversation_events WHERE conversation_id = $1`, conv).Scan(&held); err != nil {
		t.Fatal(err)
	}
	if last := got[len(got)-1].ID; held >= last {
		t.Fatalf("the log holds events up to %d while the store was locked; the stream got up to %d: want the stream ahead of the log", held, last)
	}
	if err := lock.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	readUntil(func(ev conversation.StoredEvent) bool { return ev.Name == conversation.EventNameCompleted })
	<-done
	log, err := postgres.NewConversationStore(e.pool).Repo().Events.After(ctx, conv, turn.After(), 10000)
	if err != nil {
		t.Fatal(err)
	}
	if summary(log) != summary(got) {
		t.Fatalf("the stream got %s; the log holds %s", summary(got), summary(log))
	}
	for i := range log {
		if string(log[i].Data) != string(got[i].Data) {
			t.Fatalf("event %d streamed as %s; stored as %s", log[i].ID, got[i].Data, log[i].Data)
		}
	}
}

func summary(evs []conversation.StoredEvent) string {
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, "%d:%s ", e.ID, e.Name)
	}
	return b.String()
}
