package auth

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// SessionCache keeps the sessions a replica has read, with their users, in
// memory, so that a signed-in request costs no round trip to the database
// (issue 26: a turn's start waited for one). It is safe only while every
// change to a session or a user reaches it at once, so:
//
//   - It serves from memory only while it hears every change (Listening,
//     until Deaf): the database notifies each update or delete of a
//     session or a user, whoever makes it (a trigger, on every replica;
//     internal/postgres/authdb), and the listener that hears them tells
//     the cache when it connects and when it loses its connection. Until
//     it connects, and whenever it is away, every request reads the
//     database, as without a cache (fail closed: a revocation is never
//     missed because a notification was lost).
//   - A change made through this replica drops what it touched as soon as
//     it is committed, before the request that made it answers: signing
//     out, disabling a user or resetting a password here takes effect here
//     at once, and on other replicas when their listener hears it (about a
//     millisecond: as if their request had come that much earlier).
//   - A read that began before a change may end after it: what it read is
//     kept only when nothing was dropped meanwhile.
//   - An entry lives at most ttl, whatever happens: the bound on what a
//     listener that hangs without noticing it could miss.
//
// The session's expiry and the user's disabled flag are still judged on
// every request (SignIn.SessionUser), from the copy.
type SessionCache struct {
	inner Sessions
	ttl   time.Duration
	max   int
	now   func() time.Time

	mu      sync.Mutex
	live    bool   // the listener hears every change
	gen     uint64 // moves with every drop: a read that saw it move keeps nothing
	entries map[string]cachedSession

	fromMemory, fromStore atomic.Uint64 // lookups answered each way
}

type cachedSession struct {
	sess  Session
	user  User
	until time.Time
}

// Defaults of NewSessionCache.
const (
	DefaultSessionCacheTTL = 10 * time.Second
	DefaultSessionCacheMax = 100_000
)

// NewSessionCache returns a cache in front of inner that serves nothing
// from memory until Listening is called; ttl and max (entries) default
// when zero.
func NewSessionCache(inner Sessions, ttl time.Duration, max int) *SessionCache {
	if ttl <= 0 {
		ttl = DefaultSessionCacheTTL
	}
	if max <= 0 {
		max = DefaultSessionCacheMax
	}
	return &SessionCache{inner: inner, ttl: ttl, max: max, now: time.Now, entries: map[string]cachedSession{}}
}

// Listening says that every change from now on is heard: called after the
// listener (re)connects. What was kept before is dropped (changes made
// while it was away were not heard).
func (c *SessionCache) Listening() { c.reset(true) }

// Deaf says that changes may go unheard (the listener lost its
// connection): nothing is kept or served from memory until Listening.
func (c *SessionCache) Deaf() { c.reset(false) }

func (c *SessionCache) reset(live bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.live = live
	c.gen++
	clear(c.entries)
}

// DropAll drops everything (a change the cache cannot place).
func (c *SessionCache) DropAll() { c.reset(c.isLive()) }

func (c *SessionCache) isLive() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.live
}

// DropSession drops the session with hash (it changed or was revoked).
func (c *SessionCache) DropSession(hash []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	delete(c.entries, string(hash))
}

// DropUser drops every session of the user id (the user changed: role,
// disabled, password, email).
func (c *SessionCache) DropUser(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	for k, e := range c.entries {
		if e.user.ID == id {
			delete(c.entries, k)
		}
	}
}

// Lookups counts the sessions looked up so far: answered from memory, and
// read from the store.
func (c *SessionCache) Lookups() (memory, store uint64) {
	return c.fromMemory.Load(), c.fromStore.Load()
}

// Len is how many sessions are kept.
func (c *SessionCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// SessionUser returns the session with hash and its user: from memory when
// kept and the cache hears every change, else from the store (and then
// keeps it, when nothing was dropped during the read).
func (c *SessionCache) SessionUser(ctx context.Context, hash []byte) (Session, User, error) {
	key := string(hash)
	c.mu.Lock()
	if c.live {
		if e, ok := c.entries[key]; ok {
			if c.now().Before(e.until) {
				c.mu.Unlock()
				c.fromMemory.Add(1)
				return e.sess, e.user, nil
			}
			delete(c.entries, key)
		}
	}
	gen, live := c.gen, c.live
	c.mu.Unlock()
	c.fromStore.Add(1)
	sess, u, err := c.inner.SessionUser(ctx, hash)
	if err != nil || !live {
		return sess, u, err
	}
	c.mu.Lock()
	if c.live && c.gen == gen && c.room() {
		c.entries[key] = cachedSession{sess: sess, user: u, until: c.now().Add(c.ttl)}
	}
	c.mu.Unlock()
	return sess, u, nil
}

// room says whether one more entry fits, after dropping the expired ones
// when full.
func (c *SessionCache) room() bool {
	if len(c.entries) < c.max {
		return true
	}
	now := c.now()
	for k, e := range c.entries {
		if !now.Before(e.until) {
			delete(c.entries, k)
		}
	}
	return len(c.entries) < c.max
}

// CreateSession stores s (it is kept from its first use).
func (c *SessionCache) CreateSession(ctx context.Context, s Session) error {
	return c.inner.CreateSession(ctx, s)
}

// TouchSession moves the session's last_seen_at and drops the copy.
func (c *SessionCache) TouchSession(ctx context.Context, hash []byte, at time.Time) error {
	defer c.DropSession(hash)
	return c.inner.TouchSession(ctx, hash, at)
}

// DeleteSession revokes the session and drops the copy before returning.
func (c *SessionCache) DeleteSession(ctx context.Context, hash []byte) error {
	defer c.DropSession(hash)
	return c.inner.DeleteSession(ctx, hash)
}

// WithSessionCache returns st with c in front of its sessions, and its
// users dropping from c what each change of an account touches (whether
// or not the change committed: dropping too much costs one read).
func WithSessionCache(st Stores, c *SessionCache) Stores {
	st.Sessions = c
	st.Users = usersDropping{userStore: st.Users, c: c}
	return st
}

// usersDropping is a Users store that drops a changed user's sessions from
// the cache once the change is made.
type usersDropping struct {
	userStore
	c *SessionCache
}

// userStore is Users under a name that does not hide its method Users
// when embedded.
type userStore = Users

func (u usersDropping) UpdateUser(ctx context.Context, id string, p UserPatch) (User, error) {
	defer u.c.DropUser(id)
	return u.userStore.UpdateUser(ctx, id, p)
}

func (u usersDropping) LinkOIDC(ctx context.Context, id, issuer, subject, email string, role Role) (User, error) {
	defer u.c.DropUser(id)
	return u.userStore.LinkOIDC(ctx, id, issuer, subject, email, role)
}

func (u usersDropping) TouchLogin(ctx context.Context, id string, at time.Time) error {
	defer u.c.DropUser(id)
	return u.userStore.TouchLogin(ctx, id, at)
}
