package auth

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/apperr"
)

// countingSessions is a Sessions store in memory that counts its reads and
// can hold a read until released (the cache's own logic is tested here;
// cmd/api's TestRun_SessionsFromMemory… runs it on Postgres, two replicas).
type countingSessions struct {
	mu    sync.Mutex
	rows  map[string]Session
	users map[string]User
	reads int
	hold  chan struct{} // non-nil: a read waits for it after reading
	held  chan struct{} // closed when a read waits
}

func newCountingSessions() *countingSessions {
	return &countingSessions{rows: map[string]Session{}, users: map[string]User{}}
}

func (s *countingSessions) add(hash, userID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rows[hash] = Session{Hash: []byte(hash), UserID: userID}
	s.users[userID] = User{ID: userID, Role: Member}
}

func (s *countingSessions) CreateSession(_ context.Context, ss Session) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rows[string(ss.Hash)] = ss
	return nil
}

func (s *countingSessions) SessionUser(_ context.Context, hash []byte) (Session, User, error) {
	s.mu.Lock()
	s.reads++
	ss, ok := s.rows[string(hash)]
	u := s.users[ss.UserID]
	hold, held := s.hold, s.held
	s.mu.Unlock()
	if hold != nil {
		close(held)
		<-hold
	}
	if !ok {
		return Session{}, User{}, apperr.New(apperr.NotFound, "session_not_found", "no such session")
	}
	return ss, u, nil
}

func (s *countingSessions) TouchSession(context.Context, []byte, time.Time) error { return nil }

func (s *countingSessions) DeleteSession(_ context.Context, hash []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.rows, string(hash))
	return nil
}

func (s *countingSessions) readCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads
}

// lookup looks hash up and says whether it was found.
func lookup(t *testing.T, c *SessionCache, hash string) bool {
	t.Helper()
	_, _, err := c.SessionUser(context.Background(), []byte(hash))
	if err != nil && apperr.KindOf(err) != apperr.NotFound {
		t.Fatal(err)
	}
	return err == nil
}

// TestSessionCache_ServesFromMemoryOnlyWhileListening: nothing is served
// from memory before Listening or after Deaf, and both drop what was kept.
func TestSessionCache_ServesFromMemoryOnlyWhileListening(t *testing.T) {
	st := newCountingSessions()
	st.add("h1", "usr_1")
	c := NewSessionCache(st, time.Minute, 0)
	for range 3 {
		lookup(t, c, "h1")
	}
	if got := st.readCount(); got != 3 {
		t.Fatalf("before Listening: %d reads for 3 lookups, want 3 (nothing kept while changes may go unheard)", got)
	}
	c.Listening()
	for range 3 {
		lookup(t, c, "h1")
	}
	if got := st.readCount(); got != 4 {
		t.Fatalf("listening: %d reads in all, want 4 (one read, then memory)", got)
	}
	c.Deaf()
	if c.Len() != 0 {
		t.Errorf("Deaf kept %d sessions", c.Len())
	}
	lookup(t, c, "h1")
	lookup(t, c, "h1")
	if got := st.readCount(); got != 6 {
		t.Fatalf("deaf: %d reads in all, want 6 (every lookup reads)", got)
	}
	c.Listening()
	lookup(t, c, "h1")
	c.Listening() // a reconnection: what changed meanwhile went unheard
	lookup(t, c, "h1")
	if got := st.readCount(); got != 8 {
		t.Fatalf("after a reconnection: %d reads in all, want 8 (Listening drops what was kept)", got)
	}
	if m, s := c.Lookups(); m != 2 || s != 8 {
		t.Errorf("Lookups() = %d from memory, %d from the store; want 2, 8", m, s)
	}
}

// TestSessionCache_DropsWhatChanged: a revoked session is gone at once, a
// changed user's sessions go and the others' stay, an entry lives at most
// its TTL, and a missing session is never kept.
func TestSessionCache_DropsWhatChanged(t *testing.T) {
	st := newCountingSessions()
	st.add("a1", "usr_a")
	st.add("a2", "usr_a")
	st.add("b1", "usr_b")
	c := NewSessionCache(st, time.Minute, 0)
	now := time.Unix(1_000_000, 0)
	c.now = func() time.Time { return now }
	c.Listening()
	for _, h := range []string{"a1", "a2", "b1"} {
		lookup(t, c, h)
	}
	if err := c.DeleteSession(context.Background(), []byte("a1")); err != nil {
		t.Fatal(err)
	}
	if lookup(t, c, "a1") {
		t.Fatal("a session deleted through the cache was still found")
	}
	c.DropUser("usr_a")
	reads := st.readCount()
	lookup(t, c, "a2")
	lookup(t, c, "b1")
	if got := st.readCount() - reads; got != 1 {
		t.Errorf("after DropUser(usr_a): %d reads for a2 and b1, want 1 (a2's; b1 stays)", got)
	}
	now = now.Add(time.Minute)
	reads = st.readCount()
	lookup(t, c, "b1")
	if st.readCount() != reads+1 {
		t.Error("an entry older than its TTL was served from memory")
	}
	for range 2 {
		if lookup(t, c, "nope") {
			t.Fatal("found a session that does not exist")
		}
	}
	if c.Len() != 2 {
		t.Errorf("%d sessions kept, want 2 (a2, b1; a missing one is not kept)", c.Len())
	}
}

// TestSessionCache_AReadThatRacesADropKeepsNothing: a lookup that read the
// store before a revocation and returns after it must not put the revoked
// session back.
func TestSessionCache_AReadThatRacesADropKeepsNothing(t *testing.T) {
	for _, drop := range []struct {
		name string
		do   func(*SessionCache)
	}{
		{"session", func(c *SessionCache) { c.DropSession([]byte("h1")) }},
		{"user", func(c *SessionCache) { c.DropUser("usr_1") }},
		{"all", func(c *SessionCache) { c.DropAll() }},
		{"deaf and back", func(c *SessionCache) { c.Deaf(); c.Listening() }},
	} {
		t.Run(drop.name, func(t *testing.T) {
			st := newCountingSessions()
			st.add("h1", "usr_1")
			c := NewSessionCache(st, time.Minute, 0)
			c.Listening()
			st.hold, st.held = make(chan struct{}), make(chan struct{})
			done := make(chan struct{})
			go func() { defer close(done); lookup(t, c, "h1") }()
			<-st.held
			drop.do(c)
			st.mu.Lock()
			hold := st.hold
			st.hold = nil
			st.mu.Unlock()
			close(hold)
			<-done
			if c.Len() != 0 {
				t.Fatalf("the read that raced the drop kept %d sessions", c.Len())
			}
		})
	}
}

// TestSessionCache_KeepsAtMostMax: a full cache drops what expired, and
// keeps nothing more while full.
func TestSessionCache_KeepsAtMostMax(t *testing.T) {
	st := newCountingSessions()
	c := NewSessionCache(st, time.Minute, 3)
	now := time.Unix(1_000_000, 0)
	c.now = func() time.Time { return now }
	c.Listening()
	for i := range 5 {
		st.add(fmt.Sprint("h", i), fmt.Sprint("usr_", i))
		lookup(t, c, fmt.Sprint("h", i))
	}
	if c.Len() != 3 {
		t.Fatalf("%d sessions kept, want 3", c.Len())
	}
	now = now.Add(2 * time.Minute)
	lookup(t, c, "h4")
	if c.Len() != 1 {
		t.Fatalf("%d sessions kept after the others expired, want 1", c.Len())
	}
}
