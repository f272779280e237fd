package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolgate/toolgate/internal/conversation"
)

// running is the owner's running-turns counter (00044) beside the count it
// stands for.
func running(t *testing.T, pool *pgxpool.Pool, user string) (counter, counted int) {
	t.Helper()
	err := pool.QueryRow(t.Context(), `SELECT coalesce((SELECT running FROM user_turn_counters WHERE user_id = $1), -1),
		(SELECT count(*) FROM conversations WHERE owner_id = $1 AND active_turn IS NOT NULL)`, user).Scan(&counter, &counted)
	if err != nil {
		t.Fatal(err)
	}
	return counter, counted
}

// The running-turns counter follows conversations.active_turn whatever
// changes it: a turn opened (Open, Start), ended (End), taken over (another
// turn in its place), closed by recovery (End by a replica that does not
// own it), the conversation deleted while running, a raw UPDATE.
func TestTurnCounters_RunningFollowsEveryPath(t *testing.T) {
	store, pool := newConversations(t)
	r := store.Repo()
	ctx := t.Context()
	for _, id := range []string{"conv_1", "conv_2", "conv_3"} {
		mustCreate(t, r, id)
	}
	if _, err := r.Conversations.Create(ctx, other, "conv_x", "theirs"); err != nil {
		t.Fatal(err)
	}
	open := func(conv, turn string) {
		t.Helper()
		if _, _, err := r.Turns.Open(ctx, conversation.TurnOpening{ConversationID: conv, TurnID: turn, Owner: owner, Replica: "rep_a",
			LeaseTTL: time.Minute, Now: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		name string
		do   func()
		want int
	}{
		{"opened", func() { open("conv_1", "turn_1") }, 1},
		{"started", func() {
			if err := r.Turns.Start(ctx, "conv_2", "turn_2", "rep_a", time.Minute); err != nil {
				t.Fatal(err)
			}
		}, 2},
		{"another user's", func() {
			if err := r.Turns.Start(ctx, "conv_x", "turn_x", "rep_a", time.Minute); err != nil {
				t.Fatal(err)
			}
		}, 2},
		{"taken over", func() {
			if _, err := pool.Exec(ctx, `UPDATE conversations SET active_turn = 'turn_1b' WHERE id = 'conv_1'`); err != nil {
				t.Fatal(err)
			}
		}, 2},
		{"ended", func() {
			if err := r.Turns.End(ctx, "conv_1", "turn_1b", "resp_1"); err != nil {
				t.Fatal(err)
			}
		}, 1},
		{"ended again", func() {
			if err := r.Turns.End(ctx, "conv_1", "turn_1b", "resp_1"); err != nil {
				t.Fatal(err)
			}
		}, 1},
		{"closed in a transaction", func() {
			err := store.Tx(ctx, func(r conversation.Repo) error {
				if _, err := r.Leases.LockExpiredTurn(ctx, "conv_2", "turn_2"); err != nil {
					return err
				}
				return r.Turns.End(ctx, "conv_2", "turn_2", "")
			})
			if err != nil {
				t.Fatal(err)
			}
		}, 0},
		{"opened again", func() { open("conv_3", "turn_3") }, 1},
		{"deleted while running", func() {
			if _, err := pool.Exec(ctx, `DELETE FROM conversations WHERE id = 'conv_3'`); err != nil {
				t.Fatal(err)
			}
		}, 0},
	}
	for _, s := range steps {
		s.do()
		if counter, counted := running(t, pool, owner); counter != s.want || counted != s.want {
			t.Fatalf("%s: counter %d, conversations running %d; want %d", s.name, counter, counted, s.want)
		}
	}
	if counter, counted := running(t, pool, other); counter != 1 || counted != 1 {
		t.Errorf("the other user's counter %d (running %d), want 1", counter, counted)
	}
}

// Open refuses at a limit with what it counted, and its transaction keeps
// nothing of the refused turn; the message window closes a minute after it
// opened.
func TestTurnOpen_LimitsRefuseWithWhatWasCounted(t *testing.T) {
	store, pool := newConversations(t)
	ctx := t.Context()
	for _, id := range []string{"conv_1", "conv_2", "conv_3"} {
		mustCreate(t, store.Repo(), id)
	}
	opening := func(conv string, lim conversation.Limits, message bool) error {
		return store.Tx(ctx, func(r conversation.Repo) error {
			opened := false
			_, _, err := r.Turns.Open(ctx, conversation.TurnOpening{ConversationID: conv, TurnID: "turn_" + conv, Owner: owner, Replica: "rep_a",
				LeaseTTL: time.Minute, Now: time.Now(), Limits: lim, Message: message, Opened: func(int64, []conversation.Grant) { opened = true }})
			if err == nil && opened {
				t.Error("Opened was called before the commit")
			}
			return err
		})
	}
	end := func(conv string) {
		if err := store.Repo().Turns.End(ctx, conv, "turn_"+conv, ""); err != nil {
			t.Fatal(err)
		}
	}
	two := conversation.Limits{MaxConcurrentTurns: 2}
	for _, c := range []string{"conv_1", "conv_2"} {
		if err := opening(c, two, false); err != nil {
			t.Fatal(err)
		}
	}
	var lr *conversation.LimitReached
	if err := opening("conv_3", two, false); !errors.As(err, &lr) || lr.Load.Running != 2 {
		t.Fatalf("a third turn: %v, want LimitReached with 2 running", err)
	}
	if counter, counted := running(t, pool, owner); counter != 2 || counted != 2 {
		t.Errorf("after the refusal: counter %d, running %d; want 2", counter, counted)
	}
	end("conv_1")
	end("conv_2")

	perMinute := conversation.Limits{MessagesPerMinute: 2}
	for _, c := range []string{"conv_1", "conv_2"} {
		if err := opening(c, perMinute, true); err != nil {
			t.Fatal(err)
		}
		end(c)
	}
	err := opening("conv_3", perMinute, true)
	if !errors.As(err, &lr) || lr.Load.Messages != 2 || lr.Load.OldestMessage == nil || lr.Load.Now.Sub(*lr.Load.OldestMessage) > 30*time.Second {
		t.Fatalf("a third message: %v (%+v), want LimitReached with 2 messages, the window opened just now", err, lr)
	}
	if err := opening("conv_3", perMinute, false); err != nil {
		t.Errorf("a decision's turn is not a message: %v", err)
	}
	end("conv_3")
	// The window closes a minute after it opened.
	if _, err := pool.Exec(ctx, `UPDATE user_turn_counters SET window_start = window_start - interval '61 seconds'`); err != nil {
		t.Fatal(err)
	}
	if err := opening("conv_3", perMinute, true); err != nil {
		t.Errorf("a message after the window closed: %v", err)
	}
	var count int
	if err := pool.QueryRow(ctx, `SELECT window_count FROM user_turn_counters WHERE user_id = $1`, owner).Scan(&count); err != nil || count != 1 {
		t.Errorf("window count %d, %v; want 1 (a new window)", count, err)
	}
}

// Open's lock on the owner's counters makes a second opening for the same
// user wait until the first's transaction ends, and does not hold up
// another user; with Opened set, the statement goes with the COMMIT.
func TestTurnOpen_CountersSerialiseOneUserOnly(t *testing.T) {
	store, _ := newConversations(t)
	ctx := t.Context()
	mustCreate(t, store.Repo(), "conv_1")
	mustCreate(t, store.Repo(), "conv_2")
	if _, err := store.Repo().Conversations.Create(ctx, other, "conv_x", "theirs"); err != nil {
		t.Fatal(err)
	}
	lim := conversation.Limits{MaxConcurrentTurns: 5}
	open := func(ctx context.Context, r conversation.Repo, conv, who string) error {
		_, _, err := r.Turns.Open(ctx, conversation.TurnOpening{ConversationID: conv, TurnID: "turn_" + conv, Owner: who, Replica: "rep_a",
			LeaseTTL: time.Minute, Now: time.Now(), Limits: lim})
		return err
	}
	held, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- store.Tx(ctx, func(r conversation.Repo) error {
			err := open(ctx, r, "conv_1", owner)
			close(held)
			<-release
			return err
		})
	}()
	<-held
	lctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if err := store.Tx(lctx, func(r conversation.Repo) error { return open(lctx, r, "conv_2", owner) }); err == nil {
		t.Error("a second opening for the same user did not wait for the first transaction")
	}
	if err := store.Tx(ctx, func(r conversation.Repo) error { return open(ctx, r, "conv_x", other) }); err != nil {
		t.Errorf("an opening for another user: %v", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
