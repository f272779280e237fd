package auth

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/apperr"
)

// countingSessions is a Sessions and Tokens store in memory that counts its
// reads and can hold a read until released (the cache's own logic is tested
// here; cmd/api's TestRun_CredentialsFromMemory… runs it on Postgres, two
// replicas). A token's hash is "tok:" and its id.
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

func (s *countingSessions) CreateToken(context.Context, Token, []byte) error { return nil }

func (s *countingSessions) Tokens(context.Context, string) ([]Token, error) { return nil, nil }

func (s *countingSessions) DeleteToken(_ context.Context, _, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.rows, "tok:"+id)
	return nil
}

func (s *countingSessions) TokenUser(ctx context.Context, hash []byte) (Token, User, error) {
	ss, u, err := s.SessionUser(ctx, hash)
	return Token{ID: string(ss.Hash[min(len(ss.Hash), 4):]), UserID: ss.UserID}, u, err
}

func (s *countingSessions) TouchToken(context.Context, string, time.Time) error { return nil }

func (s *countingSessions) readCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads
}

// found looks hash up and says whether it was found.
func found(t *testing.T, c *CredentialCache, hash string) bool {
	t.Helper()
	_, _, err := c.SessionUser(context.Background(), []byte(hash))
	if err != nil && apperr.KindOf(err) != apperr.NotFound {
		t.Fatal(err)
	}
	return err == nil
}

// TestCredentialCache_ServesFromMemoryOnlyWhileListening: nothing is served
// from memory before Listening or after Deaf, and both drop what was kept.
func TestCredentialCache_ServesFromMemoryOnlyWhileListening(t *testing.T) {
	st := newCountingSessions()
	st.add("h1", "usr_1")
	c := NewCredentialCache(st, st, time.Minute, 0)
	for range 3 {
		found(t, c, "h1")
	}
	if got := st.readCount(); got != 3 {
		t.Fatalf("before Listening: %d reads for 3 lookups, want 3 (nothing kept while changes may go unheard)", got)
	}
	c.Listening()
	for range 3 {
		found(t, c, "h1")
	}
	if got := st.readCount(); got != 4 {
		t.Fatalf("listening: %d reads in all, want 4 (one read, then memory)", got)
	}
	c.Deaf()
	if c.Len() != 0 {
		t.Errorf("Deaf kept %d sessions", c.Len())
	}
	found(t, c, "h1")
	found(t, c, "h1")
	if got := st.readCount(); got != 6 {
		t.Fatalf("deaf: %d reads in all, want 6 (every lookup reads)", got)
	}
	c.Listening()
	found(t, c, "h1")
	c.Listening() // a reconnection: what changed meanwhile went unheard
	found(t, c, "h1")
	if got := st.readCount(); got != 8 {
		t.Fatalf("after a reconnection: %d reads in all, want 8 (Listening drops what was kept)", got)
	}
	if m, s := c.Lookups("session"); m != 2 || s != 8 {
		t.Errorf("Lookups() = %d from memory, %d from the store; want 2, 8", m, s)
	}
}

// TestCredentialCache_DropsWhatChanged: a revoked session is gone at once, a
// changed user's sessions go and the others' stay, an entry lives at most
// its TTL, and a missing session is never kept.
func TestCredentialCache_DropsWhatChanged(t *testing.T) {
	st := newCountingSessions()
	st.add("a1", "usr_a")
	st.add("a2", "usr_a")
	st.add("b1", "usr_b")
	c := NewCredentialCache(st, st, time.Minute, 0)
	now := time.Unix(1_000_000, 0)
	c.now = func() time.Time { return now }
	c.Listening()
	for _, h := range []string{"a1", "a2", "b1"} {
		found(t, c, h)
	}
	if err := c.DeleteSession(context.Background(), []byte("a1")); err != nil {
		t.Fatal(err)
	}
	if found(t, c, "a1") {
		t.Fatal("a session deleted through the cache was still found")
	}
	c.DropUser("usr_a")
	reads := st.readCount()
	found(t, c, "a2")
	found(t, c, "b1")
	if got := st.readCount() - reads; got != 1 {
		t.Errorf("after DropUser(usr_a): %d reads for a2 and b1, want 1 (a2's; b1 stays)", got)
	}
	now = now.Add(time.Minute)
	reads = st.readCount()
	found(t, c, "b1")
	if st.readCount() != reads+1 {
		t.Error("an entry older than its TTL was served from memory")
	}
	for range 2 {
		if found(t, c, "nope") {
			t.Fatal("found a session that does not exist")
		}
	}
	if c.Len() != 2 {
		t.Errorf("%d sessions kept, want 2 (a2, b1; a missing one is not kept)", c.Len())
	}
}

// TestCredentialCache_AReadThatRacesADropKeepsNothing: a lookup that read the
// store before a revocation and returns after it must not put the revoked
// session back.
func TestCredentialCache_AReadThatRacesADropKeepsNothing(t *testing.T) {
	for _, drop := range []struct {
		name string
		do   func(*CredentialCache)
	}{
		{"session", func(c *CredentialCache) { c.DropSession([]byte("h1")) }},
		{"user", func(c *CredentialCache) { c.DropUser("usr_1") }},
		{"all", func(c *CredentialCache) { c.DropAll() }},
		{"deaf and back", func(c *CredentialCache) { c.Deaf(); c.Listening() }},
	} {
		t.Run(drop.name, func(t *testing.T) {
			st := newCountingSessions()
			st.add("h1", "usr_1")
			c := NewCredentialCache(st, st, time.Minute, 0)
			c.Listening()
			st.hold, st.held = make(chan struct{}), make(chan struct{})
			done := make(chan struct{})
			go func() { defer close(done); found(t, c, "h1") }()
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

// TestCredentialCache_KeepsAtMostMax: a full cache drops what expired, and
// keeps nothing more while full.
func TestCredentialCache_KeepsAtMostMax(t *testing.T) {
	st := newCountingSessions()
	c := NewCredentialCache(st, st, time.Minute, 3)
	now := time.Unix(1_000_000, 0)
	c.now = func() time.Time { return now }
	c.Listening()
	for i := range 5 {
		st.add(fmt.Sprint("h", i), fmt.Sprint("usr_", i))
		found(t, c, fmt.Sprint("h", i))
	}
	if c.Len() != 3 {
		t.Fatalf("%d sessions kept, want 3", c.Len())
	}
	now = now.Add(2 * time.Minute)
	found(t, c, "h4")
	if c.Len() != 1 {
		t.Fatalf("%d sessions kept after the others expired, want 1", c.Len())
	}
}

// TestCredentialCache_TokensLikeSessions: a personal API token is kept
// like a session, and deleting it, touching it (by id) or changing its
// user drops it.
func TestCredentialCache_TokensLikeSessions(t *testing.T) {
	st := newCountingSessions()
	st.add("tok:1", "usr_a")
	st.add("tok:2", "usr_b")
	c := NewCredentialCache(st, st, time.Minute, 0)
	c.Listening()
	ctx := context.Background()
	use := func(hash string) bool {
		t.Helper()
		_, _, err := c.TokenUser(ctx, []byte(hash))
		return err == nil
	}
	for range 3 {
		use("tok:1")
	}
	if m, s := c.Lookups("token"); m != 2 || s != 1 {
		t.Fatalf("3 uses of a token: %d from memory, %d from the store; want 2, 1", m, s)
	}
	if err := c.TouchToken(ctx, "1", time.Now()); err != nil {
		t.Fatal(err)
	}
	use("tok:1")
	if _, s := c.Lookups("token"); s != 2 {
		t.Errorf("after a touch: %d reads, want 2 (its last use moved: read again)", s)
	}
	if err := c.DeleteToken(ctx, "usr_a", "1"); err != nil {
		t.Fatal(err)
	}
	if use("tok:1") {
		t.Error("a token deleted through the cache still works")
	}
	use("tok:2")
	c.DropUser("usr_b")
	use("tok:2")
	if _, s := c.Lookups("token"); s != 5 {
		t.Errorf("after DropUser: %d reads in all, want 5", s)
	}
	if m, _ := c.Lookups("session"); m != 0 {
		t.Errorf("token lookups counted as sessions: %d", m)
	}
}

// TestCredentialCache_DropAllKeepsItDeaf: a notification the cache cannot
// place drops everything but never makes a deaf cache serve from memory.
func TestCredentialCache_DropAllKeepsItDeaf(t *testing.T) {
	st := newCountingSessions()
	st.add("h1", "usr_1")
	c := NewCredentialCache(st, st, time.Minute, 0)
	c.Listening()
	found(t, c, "h1")
	c.Deaf()
	c.DropAll()
	found(t, c, "h1")
	found(t, c, "h1")
	if got := st.readCount(); got != 3 {
		t.Errorf("deaf after DropAll: %d reads for 3 lookups, want 3", got)
	}
}
