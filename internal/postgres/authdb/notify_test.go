package authdb_test

import (
	"context"
	"encoding/hex"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/postgres/authdb"
	"github.com/toolgate/toolgate/internal/testdb"
)

// TestNotify_EveryChangeToACredentialOrAUserIsNotified: migration 00049's
// triggers notify each update and delete of a session, a personal API
// token or a user, whoever
// makes it, at commit and never for a rollback; a truncate says "*".
func TestNotify_EveryChangeToACredentialOrAUserIsNotified(t *testing.T) {
	pool := testdb.New(t)
	ctx := context.Background()
	listen, err := pgx.Connect(ctx, pool.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer listen.Close(ctx)
	if _, err := listen.Exec(ctx, `LISTEN `+authdb.Channel); err != nil {
		t.Fatal(err)
	}
	heard := func() []string {
		var got []string
		for {
			wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			n, err := listen.WaitForNotification(wctx)
			cancel()
			if err != nil {
				return got
			}
			got = append(got, n.Payload)
		}
	}
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := pool.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	const u1, u2 = "usr_000000000000000000000001", "usr_000000000000000000000002"
	h1, h2 := []byte("session one hash"), []byte("session two hash")
	exec(`INSERT INTO users (id, email, role) VALUES ($1, 'one@t.test', 'member'), ($2, 'two@t.test', 'member')`, u1, u2)
	exec(`INSERT INTO sessions (token_hash, user_id, expires_at) VALUES ($1, $3, now() + interval '1 hour'), ($2, $4, now() + interval '1 hour')`, h1, h2, u1, u2)
	th1, th2 := []byte("token one hash"), []byte("token two hash")
	exec(`INSERT INTO api_tokens (id, user_id, name, token_hash) VALUES ('tok_1', $1, 'one', $3), ('tok_2', $2, 'two', $4)`, u1, u2, th1, th2)
	if got := heard(); len(got) != 0 {
		t.Errorf("inserts notified %q; a new row holds nothing anyone kept", got)
	}
	s := func(h []byte) string { return "s " + hex.EncodeToString(h) }
	tk := func(h []byte) string { return "t " + hex.EncodeToString(h) }
	for _, c := range []struct {
		name string
		sql  string
		args []any
		want []string
	}{
		{"a touch", `UPDATE sessions SET last_seen_at = now() WHERE token_hash = $1`, []any{h1}, []string{s(h1)}},
		{"a sign-out", `DELETE FROM sessions WHERE token_hash = $1`, []any{h1}, []string{s(h1)}},
		{"a token's use", `UPDATE api_tokens SET last_used_at = now() WHERE id = 'tok_1'`, nil, []string{tk(th1)}},
		{"a token deleted", `DELETE FROM api_tokens WHERE id = 'tok_1'`, nil, []string{tk(th1)}},
		{"a user's change", `UPDATE users SET role = 'admin' WHERE id = $1`, []any{u2}, []string{"u " + u2}},
		{"a user deleted, with the session and token it cascades to", `DELETE FROM users WHERE id = $1`, []any{u2}, []string{s(h2), tk(th2), "u " + u2}},
		{"a truncate", `TRUNCATE sessions`, nil, []string{"*"}},
		{"a truncate of tokens", `TRUNCATE api_tokens`, nil, []string{"*"}},
	} {
		exec(c.sql, c.args...)
		got := heard()
		slices.Sort(got)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: notified %q, want %q", c.name, got, c.want)
		}
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `UPDATE users SET disabled = true WHERE id = $1`, u1); err != nil {
		t.Fatal(err)
	}
	_ = tx.Rollback(ctx)
	if got := heard(); len(got) != 0 {
		t.Errorf("a rolled-back change notified %q", got)
	}
}

// TestCredentialCache_ThisReplicasChangesTakeEffectBeforeItAnswers: with no
// listener at all (its notifications late), what this replica changes
// through the cached stores is dropped before the call returns: a sign-out,
// a demotion, a disabled account, a new password.
func TestCredentialCache_ThisReplicasChangesTakeEffectBeforeItAnswers(t *testing.T) {
	pool := testdb.New(t)
	ctx := context.Background()
	cache := auth.NewCredentialCache(authdb.NewSessions(pool), authdb.NewTokens(pool), time.Minute, 0)
	cache.Listening() // as if every change were heard: only the replica's own drops act here
	svc := auth.New(auth.WithCredentialCache(authdb.Stores(pool), cache), auth.Options{}, slog.New(slog.DiscardHandler))
	admin, _, err := svc.Accounts.EnsureAdmin(ctx, "admin@t.test", "admin password 1")
	if err != nil {
		t.Fatal(err)
	}
	actx := auth.WithUser(ctx, admin)
	member, err := svc.Accounts.CreateUser(actx, auth.NewUser{Email: "m@t.test", Password: "member password 1", Role: auth.Member})
	if err != nil {
		t.Fatal(err)
	}
	signIn := func() string {
		t.Helper()
		ns, err := svc.SignIn.Login(ctx, "m@t.test", "member password 1", auth.Client{Addr: "127.0.0.1"})
		if err != nil {
			t.Fatal(err)
		}
		for range 2 { // read, then from memory
			if _, err := svc.SignIn.SessionUser(ctx, ns.Secret); err != nil {
				t.Fatal(err)
			}
		}
		return ns.Secret
	}
	secret := signIn()
	if m, _ := cache.Lookups("session"); m == 0 {
		t.Fatal("the session was never served from memory")
	}
	if err := svc.SignIn.Logout(ctx, secret); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.SignIn.SessionUser(ctx, secret); err == nil {
		t.Error("signed out, the session still works")
	}

	secret = signIn()
	admin2 := auth.Admin
	if _, err := svc.Accounts.UpdateUser(actx, member.ID, auth.UserChange{Role: &admin2}); err != nil {
		t.Fatal(err)
	}
	if u, err := svc.SignIn.SessionUser(ctx, secret); err != nil || u.Role != auth.Admin {
		t.Errorf("promoted: %v %v, want role admin at once", u.Role, err)
	}
	member2 := auth.Member
	if _, err := svc.Accounts.UpdateUser(actx, member.ID, auth.UserChange{Role: &member2}); err != nil {
		t.Fatal(err)
	}
	if u, err := svc.SignIn.SessionUser(ctx, secret); err != nil || u.Role != auth.Member {
		t.Errorf("demoted: %v %v, want role member at once", u.Role, err)
	}

	pw := "a new password 1"
	if _, err := svc.Accounts.UpdateUser(actx, member.ID, auth.UserChange{Password: &pw}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.SignIn.SessionUser(ctx, secret); err == nil {
		t.Error("after a password reset, the old session still works")
	}

	// A personal API token: deleted, and its user disabled.
	mctx := auth.WithUser(ctx, member)
	useToken := func(secret string) error {
		_, err := svc.SignIn.TokenUser(ctx, secret)
		return err
	}
	for _, revoke := range []struct {
		name string
		do   func(id string) error
	}{
		{"deleted", func(id string) error { return svc.APITokens.DeleteToken(mctx, id) }},
		{"its user disabled", func(string) error {
			yes := true
			_, err := svc.Accounts.UpdateUser(actx, member.ID, auth.UserChange{Disabled: &yes})
			return err
		}},
	} {
		nt, err := svc.APITokens.CreateToken(mctx, "agent "+revoke.name)
		if err != nil {
			t.Fatal(err)
		}
		for range 3 { // read (and its first use recorded, which drops it), read, memory
			if err := useToken(nt.Secret); err != nil {
				t.Fatal(err)
			}
		}
		if m, _ := cache.Lookups("token"); m == 0 {
			t.Fatal("the token was never served from memory")
		}
		if err := revoke.do(nt.ID); err != nil {
			t.Fatal(err)
		}
		if err := useToken(nt.Secret); err == nil {
			t.Errorf("token %s: still works", revoke.name)
		}
	}
}
