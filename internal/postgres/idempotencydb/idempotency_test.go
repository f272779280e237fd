package idempotencydb_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/idempotency"
	"github.com/toolgate/toolgate/internal/postgres/authdb"
	"github.com/toolgate/toolgate/internal/postgres/idempotencydb"
	"github.com/toolgate/toolgate/internal/testdb"
)

func TestIdempotencyKeys(t *testing.T) {
	pool := testdb.New(t)
	ctx := context.Background()
	users := authdb.NewUsers(pool)
	var ids []string
	for _, email := range []string{"a@example.com", "b@example.com"} {
		u, err := users.CreateUser(ctx, auth.Account{User: auth.User{ID: testUserID(len(ids)), Email: email, Role: auth.Member}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, u.ID)
	}
	a, b := ids[0], ids[1]
	s := idempotencydb.New(pool)
	hash := []byte("hash-1")
	day := 24 * time.Hour

	if _, reserved, err := s.Reserve(ctx, a, "k", hash, day, idempotency.Hold{}); err != nil || !reserved {
		t.Fatalf("first reserve: reserved %v, %v", reserved, err)
	}
	held, reserved, err := s.Reserve(ctx, a, "k", []byte("other"), day, idempotency.Hold{})
	if err != nil || reserved || held.State != idempotency.InFlight || !bytes.Equal(held.RequestHash, hash) || held.ConversationID != "" {
		t.Fatalf("second reserve: %+v reserved %v, %v; want A's key in flight with the first hash", held, reserved, err)
	}
	// Another user's key of the same name is theirs.
	if _, reserved, err := s.Reserve(ctx, b, "k", []byte("b's"), day, idempotency.Hold{}); err != nil || !reserved {
		t.Fatalf("B's reserve: reserved %v, %v", reserved, err)
	}

	if err := s.Started(ctx, a, "k", "", "conv_1"); err != nil {
		t.Fatal(err)
	}
	events := []byte(`[{"event":"completed","data":{"b":1,"a":"ü"}}]`)
	if err := s.Complete(ctx, a, "k", "", events); err != nil {
		t.Fatal(err)
	}
	held, _, err = s.Reserve(ctx, a, "k", hash, day, idempotency.Hold{})
	if err != nil || held.State != idempotency.Done || held.ConversationID != "conv_1" || !bytes.Equal(held.Events, events) {
		t.Fatalf("done key: %+v (events %s), %v; want the events byte for byte", held, held.Events, err)
	}
	// Release frees only keys in flight.
	if err := s.Release(ctx, a, "k", ""); err != nil {
		t.Fatal(err)
	}
	if held, _, _ := s.Reserve(ctx, a, "k", hash, day, idempotency.Hold{}); held.State != idempotency.Done {
		t.Errorf("release dropped a done key: %+v", held)
	}
	if err := s.Release(ctx, b, "k", ""); err != nil {
		t.Fatal(err)
	}
	if _, reserved, err := s.Reserve(ctx, b, "k", hash, day, idempotency.Hold{}); err != nil || !reserved {
		t.Errorf("B's released key: reserved %v, %v", reserved, err)
	}

	// Expired keys are deleted on the next reserve, anyone's.
	if _, err := pool.Exec(ctx, `UPDATE idempotency_keys SET created_at = now() - interval '2 hours' WHERE user_id = $1`, a); err != nil {
		t.Fatal(err)
	}
	if _, reserved, err := s.Reserve(ctx, b, "other", hash, time.Hour, idempotency.Hold{}); err != nil || !reserved {
		t.Fatal(reserved, err)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM idempotency_keys WHERE user_id = $1`, a).Scan(&n); err != nil || n != 0 {
		t.Errorf("A's expired keys left: %d (%v)", n, err)
	}
	if _, reserved, err := s.Reserve(ctx, a, "k", []byte("new"), time.Hour, idempotency.Hold{}); err != nil || !reserved {
		t.Errorf("expired key not free: reserved %v, %v", reserved, err)
	}
}

func testUserID(i int) string {
	return "usr_" + string(rune('a'+i)) + "00000000000000000000000"
}
