package auth_test

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/postgres/authdb"
	"github.com/toolgate/toolgate/internal/testdb"
)

// names lists the rows of a sign-in table, by the tag the test gave them.
func names(t *testing.T, pool *pgxpool.Pool, q string) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// TestCleanup_SignInsDeleteExpiredRowsAtMostEveryInterval: a sign-in
// attempt deletes sessions past their absolute or idle expiry, used and
// expired one-time links, and failed sign-ins older than the window; live
// rows stay, and the next attempt within CleanEvery does not clean again.
func TestCleanup_SignInsDeleteExpiredRowsAtMostEveryInterval(t *testing.T) {
	pool := testdb.New(t)
	ctx := context.Background()
	svc := auth.New(authdb.Stores(pool), auth.Options{IdleTimeout: time.Hour, MaxAge: 24 * time.Hour,
		FailureWindow: 15 * time.Minute, CleanEvery: 10 * time.Minute}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	now := time.Now().Round(time.Second)
	svc.SetClock(func() time.Time { return now })
	u, _, err := svc.Accounts.EnsureAdmin(ctx, "admin@example.com", "a long passphrase")
	if err != nil {
		t.Fatal(err)
	}
	at := func(d time.Duration) time.Time { return now.Add(d) }
	session := func(tag string, expires, lastSeen time.Time) {
		if _, err := pool.Exec(ctx, `INSERT INTO sessions (token_hash, user_id, expires_at, last_seen_at, user_agent)
			VALUES ($1, $2, $3, $4, $5)`, auth.HashSecret(tag), u.ID, expires, lastSeen, tag); err != nil {
			t.Fatal(err)
		}
	}
	oneTime := func(tag string, expires time.Time, used *time.Time) {
		if _, err := pool.Exec(ctx, `INSERT INTO one_time_tokens (token_hash, purpose, user_id, expires_at, used_at)
			VALUES ($1, 'login', $2, $3, $4)`, []byte(tag), u.ID, expires, used); err != nil {
			t.Fatal(err)
		}
	}
	failure := func(key string, when time.Time) {
		if _, err := pool.Exec(ctx, `INSERT INTO login_failures (key, at) VALUES ($1, $2)`, key, when); err != nil {
			t.Fatal(err)
		}
	}
	session("expired", at(-time.Second), at(-time.Minute))
	session("idle", at(time.Hour), at(-61*time.Minute))
	session("live", at(time.Hour), at(-59*time.Minute))
	used := at(-time.Minute)
	oneTime("used", at(time.Hour), &used)
	oneTime("expired", at(-time.Second), nil)
	oneTime("fresh", at(time.Hour), nil)
	failure("old", at(-16*time.Minute))
	failure("recent", at(-14*time.Minute))

	attempt := func() {
		t.Helper()
		if _, err := svc.SignIn.Login(ctx, "admin@example.com", "wrong password", auth.Client{Addr: "192.0.2.1"}); err == nil {
			t.Fatal("a wrong password signed in")
		}
	}
	sessions := func() []string { return names(t, pool, `SELECT user_agent FROM sessions`) }
	oneTimes := func() []string { return names(t, pool, `SELECT convert_from(token_hash, 'UTF8') FROM one_time_tokens`) }
	failures := func() []string { return names(t, pool, `SELECT key FROM login_failures`) }

	attempt()
	if got := sessions(); !slices.Equal(got, []string{"live"}) {
		t.Errorf("sessions left %v, want only the live one", got)
	}
	if got := oneTimes(); !slices.Equal(got, []string{"fresh"}) {
		t.Errorf("one-time links left %v, want only the fresh one", got)
	}
	if got := failures(); !slices.Equal(got, []string{"account|admin@example.com", "admin@example.com|192.0.2.1", "recent"}) {
		t.Errorf("failed sign-ins left %v, want the recent one and this attempt (per address and per account)", got)
	}

	// Within CleanEvery a sign-in does not clean again...
	session("expired later", at(-time.Second), at(-time.Minute))
	now = now.Add(time.Minute)
	attempt()
	if got := sessions(); !slices.Equal(got, []string{"expired later", "live"}) {
		t.Errorf("sessions %v: cleaned again within CleanEvery", got)
	}
	// ... after it, the next one does (and so does a successful one).
	now = now.Add(10 * time.Minute)
	if _, err := svc.SignIn.Login(ctx, "admin@example.com", "a long passphrase", auth.Client{Addr: "192.0.2.2"}); err != nil {
		t.Fatal(err)
	}
	if got := sessions(); len(got) != 1 || got[0] != "" { // the session just opened (no user agent)
		t.Errorf("sessions %v after CleanEvery, want only the new one", got)
	}
}

// TestCleanup_RemovesOnlyWhatCanNoLongerSignAnyoneIn calls Cleanup itself:
// the counts say what went.
func TestCleanup_RemovesOnlyWhatCanNoLongerSignAnyoneIn(t *testing.T) {
	pool := testdb.New(t)
	ctx := context.Background()
	svc := auth.New(authdb.Stores(pool), auth.Options{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if got, err := svc.SignIn.Cleanup(ctx); err != nil || got != (auth.Cleaned{}) {
		t.Fatalf("empty tables: %+v %v", got, err)
	}
	u, _, err := svc.Accounts.EnsureAdmin(ctx, "admin@example.com", "a long passphrase")
	if err != nil {
		t.Fatal(err)
	}
	link, err := svc.SignIn.CreateLoginLink(ctx, u.ID, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.SignIn.UseLink(ctx, link, auth.Client{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE sessions SET last_seen_at = now() - interval '13 hours'`); err != nil {
		t.Fatal(err)
	}
	got, err := svc.SignIn.Cleanup(ctx)
	if want := (auth.Cleaned{Sessions: 1, OneTime: 1}); err != nil || got != want {
		t.Errorf("Cleanup = %+v %v, want %+v (the idle session, the used link)", got, err, want)
	}
}
