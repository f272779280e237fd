package auth

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// CredentialCache keeps the sessions and personal API tokens a replica has
// read, with their users, in memory, so that a signed-in request (a
// browser's, an agent's MCP call, the terminal client's) costs no round
// trip to the database (issue 26: a turn's start waited for one). It is
// safe only while every change to a credential or a user reaches it at
// once, so:
//
//   - It serves from memory only while it hears every change (Listening,
//     until Deaf): the database notifies each update or delete of a
//     session, a token or a user, whoever makes it (triggers, on every
//     replica; internal/postgres/authdb), and the listener that hears them
//     tells the cache when it connects and when it loses its connection.
//     Until it connects, and whenever it is away, every request reads the
//     database, as without a cache (fail closed: a revocation is never
//     missed because a notification was lost).
//   - A change made through this replica drops what it touched as soon as
//     it is made, before the request that made it answers: signing out,
//     deleting a token, disabling a user or resetting a password here
//     takes effect here at once, and on other replicas when their listener
//     hears it (about a millisecond: as if their request had come that much
//     earlier).
//   - A read that began before a change may end after it: what it read is
//     kept only when nothing was dropped meanwhile.
//   - An entry lives at most ttl, whatever happens: the bound on what a
//     listener that hangs without noticing it could miss.
//
// A session's expiry and a user's disabled flag are still judged on every
// request (SignIn), from the copy.
type CredentialCache struct {
	sessions Sessions
	tokens   Tokens
	ttl      time.Duration
	max      int
	now      func() time.Time

	mu          sync.Mutex
	live        bool   // the listener hears every change
	gen         uint64 // moves with every drop: a read that saw it move keeps nothing
	sessionMemo map[string]cached[Session]
	tokenMemo   map[string]cached[Token]

	sessionHits, sessionReads, tokenHits, tokenReads atomic.Uint64
}

type cached[T any] struct {
	cred  T
	user  User
	until time.Time
}

// Defaults of NewCredentialCache.
const (
	DefaultCredentialCacheTTL = 10 * time.Second
	DefaultCredentialCacheMax = 100_000
)

// NewCredentialCache returns a cache in front of sessions and tokens that
// serves nothing from memory until Listening is called; ttl and max
// (entries of both kinds) default when zero.
func NewCredentialCache(sessions Sessions, tokens Tokens, ttl time.Duration, max int) *CredentialCache {
	if ttl <= 0 {
		ttl = DefaultCredentialCacheTTL
	}
	if max <= 0 {
		max = DefaultCredentialCacheMax
	}
	return &CredentialCache{sessions: sessions, tokens: tokens, ttl: ttl, max: max, now: time.Now,
		sessionMemo: map[string]cached[Session]{}, tokenMemo: map[string]cached[Token]{}}
}

// Listening says that every change from now on is heard: called after the
// listener (re)connects. What was kept before is dropped (changes made
// while it was away were not heard).
func (c *CredentialCache) Listening() { c.reset(true) }

// Deaf says that changes may go unheard (the listener lost its
// connection): nothing is kept or served from memory until Listening.
func (c *CredentialCache) Deaf() { c.reset(false) }

func (c *CredentialCache) reset(live bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.live = live
	c.clear()
}

// clear drops everything, under the lock (whether the listener hears every
// change is left as it is).
func (c *CredentialCache) clear() {
	c.gen++
	clear(c.sessionMemo)
	clear(c.tokenMemo)
}

// DropAll drops everything (a change the cache cannot place).
func (c *CredentialCache) DropAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clear()
}

// drop drops, under the lock, the entries of m for which gone says so.
func drop[T any](c *CredentialCache, m map[string]cached[T], gone func(key string, e cached[T]) bool) {
	c.gen++
	for k, e := range m {
		if gone(k, e) {
			delete(m, k)
		}
	}
}

// DropSession drops the session with hash (it changed or was revoked).
func (c *CredentialCache) DropSession(hash []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	delete(c.sessionMemo, string(hash))
}

// DropToken drops the token with hash (it changed or was deleted).
func (c *CredentialCache) DropToken(hash []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	delete(c.tokenMemo, string(hash))
}

// dropTokenID drops the token with id.
func (c *CredentialCache) dropTokenID(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	drop(c, c.tokenMemo, func(_ string, e cached[Token]) bool { return e.cred.ID == id })
}

// DropUser drops every session and token of the user id (the user
// changed: role, disabled, password, email).
func (c *CredentialCache) DropUser(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	drop(c, c.sessionMemo, func(_ string, e cached[Session]) bool { return e.user.ID == id })
	drop(c, c.tokenMemo, func(_ string, e cached[Token]) bool { return e.user.ID == id })
}

// Len is how many credentials are kept.
func (c *CredentialCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sessionMemo) + len(c.tokenMemo)
}

// Lookups counts the credentials looked up so far, by kind ("session",
// "token"): answered from memory, and read from the store.
func (c *CredentialCache) Lookups(kind string) (memory, store uint64) {
	if kind == "token" {
		return c.tokenHits.Load(), c.tokenReads.Load()
	}
	return c.sessionHits.Load(), c.sessionReads.Load()
}

// lookup answers key from m when kept and the cache hears every change,
// else with read (and then keeps what it read, when nothing was dropped
// during the read).
func lookup[T any](c *CredentialCache, m map[string]cached[T], key string, hits, reads *atomic.Uint64,
	read func() (T, User, error)) (T, User, error) {
	c.mu.Lock()
	if c.live {
		if e, ok := m[key]; ok {
			if c.now().Before(e.until) {
				c.mu.Unlock()
				hits.Add(1)
				return e.cred, e.user, nil
			}
			delete(m, key)
		}
	}
	gen, live := c.gen, c.live
	c.mu.Unlock()
	reads.Add(1)
	cred, u, err := read()
	if err != nil || !live {
		return cred, u, err
	}
	c.mu.Lock()
	if c.live && c.gen == gen && c.room() {
		m[key] = cached[T]{cred: cred, user: u, until: c.now().Add(c.ttl)}
	}
	c.mu.Unlock()
	return cred, u, nil
}

// room says, under the lock, whether one more entry fits, after dropping
// the expired ones when full.
func (c *CredentialCache) room() bool {
	if len(c.sessionMemo)+len(c.tokenMemo) < c.max {
		return true
	}
	now := c.now()
	for k, e := range c.sessionMemo {
		if !now.Before(e.until) {
			delete(c.sessionMemo, k)
		}
	}
	for k, e := range c.tokenMemo {
		if !now.Before(e.until) {
			delete(c.tokenMemo, k)
		}
	}
	return len(c.sessionMemo)+len(c.tokenMemo) < c.max
}

// SessionUser returns the session with hash and its user, from memory when
// it may.
func (c *CredentialCache) SessionUser(ctx context.Context, hash []byte) (Session, User, error) {
	return lookup(c, c.sessionMemo, string(hash), &c.sessionHits, &c.sessionReads, func() (Session, User, error) {
		return c.sessions.SessionUser(ctx, hash)
	})
}

// CreateSession stores s (it is kept from its first use).
func (c *CredentialCache) CreateSession(ctx context.Context, s Session) error {
	return c.sessions.CreateSession(ctx, s)
}

// TouchSession moves the session's last_seen_at and drops the copy.
func (c *CredentialCache) TouchSession(ctx context.Context, hash []byte, at time.Time) error {
	defer c.DropSession(hash)
	return c.sessions.TouchSession(ctx, hash, at)
}

// DeleteSession revokes the session and drops the copy before returning.
func (c *CredentialCache) DeleteSession(ctx context.Context, hash []byte) error {
	defer c.DropSession(hash)
	return c.sessions.DeleteSession(ctx, hash)
}

// TokenUser returns the personal API token with hash and its user, from
// memory when it may.
func (c *CredentialCache) TokenUser(ctx context.Context, hash []byte) (Token, User, error) {
	return lookup(c, c.tokenMemo, string(hash), &c.tokenHits, &c.tokenReads, func() (Token, User, error) {
		return c.tokens.TokenUser(ctx, hash)
	})
}

// CreateToken stores t under hash (it is kept from its first use).
func (c *CredentialCache) CreateToken(ctx context.Context, t Token, hash []byte) error {
	return c.tokens.CreateToken(ctx, t, hash)
}

// Tokens lists userID's tokens (from the store).
func (c *CredentialCache) Tokens(ctx context.Context, userID string) ([]Token, error) {
	return c.tokens.Tokens(ctx, userID)
}

// DeleteToken deletes the token and drops the copy before returning.
func (c *CredentialCache) DeleteToken(ctx context.Context, userID, id string) error {
	defer c.dropTokenID(id)
	return c.tokens.DeleteToken(ctx, userID, id)
}

// TouchToken moves the token's last_used_at and drops the copy.
func (c *CredentialCache) TouchToken(ctx context.Context, id string, at time.Time) error {
	defer c.dropTokenID(id)
	return c.tokens.TouchToken(ctx, id, at)
}

// WithCredentialCache returns st with c in front of its sessions and
// tokens, and its users dropping from c what each change of an account
// touches (whether or not the change committed: dropping too much costs
// one read).
func WithCredentialCache(st Stores, c *CredentialCache) Stores {
	st.Sessions = c
	st.Tokens = c
	st.Users = usersDropping{userStore: st.Users, c: c}
	return st
}

// usersDropping is a Users store that drops a changed user's credentials
// from the cache once the change is made.
type usersDropping struct {
	userStore
	c *CredentialCache
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
