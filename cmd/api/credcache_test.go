package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolgate/toolgate/internal/testdb"
)

// replicaPair starts two replicas on one database with metrics on, both
// signed in as the test admin.
func replicaPair(t *testing.T) (a, b, dbURL, metricsToken string) {
	t.Helper()
	dbURL, metricsToken = testdb.URL(t), "0123456789abcdef0123456789abcdef"
	env := func(id string) map[string]string {
		return map[string]string{"DATABASE_URL": dbURL, "OFFLINE_DEMO": "false", "REPLICA_ID": id, "METRICS_TOKEN": metricsToken}
	}
	a, _, _ = start(t, env("replica-a"))
	b, _, _ = start(t, env("replica-b"))
	return a, b, dbURL, metricsToken
}

// credential is a session cookie or a personal API token.
type credential struct {
	cookie *http.Cookie
	bearer string
}

// kind is the cache's name for it ("session", "token").
func (c credential) kind() string {
	if c.bearer != "" {
		return "token"
	}
	return "session"
}

// callAs sends method url with cred (and body as JSON) and returns the
// status and body.
func callAs(t *testing.T, cred credential, method, url, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if cred.bearer != "" {
		req.Header.Set("Authorization", "Bearer "+cred.bearer)
	} else {
		req.AddCookie(cred.cookie)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// memberSession creates a member on base (as the admin) and signs them in
// there; it returns their id and session.
func memberSession(t *testing.T, base, email string) (id string, session credential) {
	t.Helper()
	code, body := do(t, "POST", base+"/api/users", `{"email":"`+email+`","password":"member password 1","role":"member"}`)
	if code != 201 {
		t.Fatalf("create member: %d %s", code, body)
	}
	var u struct{ ID string }
	if err := json.Unmarshal([]byte(body), &u); err != nil {
		t.Fatal(err)
	}
	res, err := http.Post(base+"/api/auth/login", "application/json", strings.NewReader(`{"email":"`+email+`","password":"member password 1"}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if session.cookie = sessionOf(res); res.StatusCode != 200 || session.cookie == nil {
		t.Fatalf("member sign-in: %d", res.StatusCode)
	}
	return u.ID, session
}

// apiToken creates a personal API token as session's user on base and
// returns it with its id.
func apiToken(t *testing.T, base string, session credential) (id string, token credential) {
	t.Helper()
	code, body := callAs(t, session, "POST", base+"/api/tokens", `{"name":"agent"}`)
	var tok struct{ ID, Token string }
	if err := json.Unmarshal([]byte(body), &tok); code != 201 || err != nil || tok.Token == "" {
		t.Fatalf("create token: %d %s", code, body)
	}
	return tok.ID, credential{bearer: tok.Token}
}

// lookups reads toolgate_{kind}_lookups_total from base.
func lookups(t *testing.T, base, token, kind string) (memory, database float64) {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return metricValue(t, string(b), `toolgate_`+kind+`_lookups_total{source="memory"}`),
		metricValue(t, string(b), `toolgate_`+kind+`_lookups_total{source="database"}`)
}

// cachedOn uses cred on base until base answers it from memory (its
// listener connects in the background after start) and returns the status
// it then gave.
func cachedOn(t *testing.T, base, token string, cred credential, path string) int {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		before, _ := lookups(t, base, token, cred.kind())
		code, _ := callAs(t, cred, "GET", base+path, "")
		if after, _ := lookups(t, base, token, cred.kind()); after > before {
			return code
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never answered the session from memory", base)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// becomes polls GET base+path with cred until it answers want, and fails
// when it has not within within.
func becomes(t *testing.T, base string, cred credential, path string, want int, within time.Duration, what string) {
	t.Helper()
	began := time.Now()
	for {
		code, body := callAs(t, cred, "GET", base+path, "")
		if code == want {
			t.Logf("%s: %d after %s", what, want, time.Since(began).Round(time.Millisecond))
			return
		}
		if time.Since(began) > within {
			t.Fatalf("%s: still %d %.100s after %s, want %d", what, code, body, within, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestRun_CredentialsFromMemoryEndOnEveryReplicaWhenRevoked: a replica
// answers a signed-in request from the session or personal API token it
// read before (no round trip to Postgres), and every way one can end or
// lose its rights ends it there too: at once on the replica that made the
// change, within moments (its notification) on the other, whoever made it:
// signing out, deleting a token, an admin's demotion, disabling, an
// operator's SQL, and a change made while the other replica's listener was
// away.
func TestRun_CredentialsFromMemoryEndOnEveryReplicaWhenRevoked(t *testing.T) {
	a, b, dbURL, tok := replicaPair(t)
	const soon = 2 * time.Second // a notification's trip, with room for a slow machine

	t.Run("served from memory", func(t *testing.T) {
		_, ck := memberSession(t, a, "m0@toolgate.test")
		if code := cachedOn(t, b, tok, ck, "/api/auth/me"); code != 200 {
			t.Fatalf("GET /api/auth/me on b: %d", code)
		}
		m0, d0 := lookups(t, b, tok, "session")
		for range 10 {
			if code, body := callAs(t, ck, "GET", b+"/api/auth/me", ""); code != 200 {
				t.Fatalf("GET /api/auth/me on b: %d %s", code, body)
			}
		}
		m1, d1 := lookups(t, b, tok, "session")
		if m1-m0 != 10 || d1 != d0 {
			t.Errorf("10 requests with a known session: %v from memory, %v from the database; want 10 and 0", m1-m0, d1-d0)
		}
	})

	t.Run("sign-out", func(t *testing.T) {
		_, ck := memberSession(t, a, "m1@toolgate.test")
		cachedOn(t, a, tok, ck, "/api/auth/me")
		cachedOn(t, b, tok, ck, "/api/auth/me")
		if code, body := callAs(t, ck, "POST", a+"/api/auth/logout", ""); code != 204 {
			t.Fatalf("logout: %d %s", code, body)
		}
		if code, _ := callAs(t, ck, "GET", a+"/api/auth/me", ""); code != 401 {
			t.Errorf("on the replica that signed out, right after: %d, want 401", code)
		}
		becomes(t, b, ck, "/api/auth/me", 401, soon, "signed out on a, on b")
	})

	t.Run("a token deleted", func(t *testing.T) {
		_, ck := memberSession(t, a, "mt@toolgate.test")
		id, bearer := apiToken(t, a, ck)
		cachedOn(t, a, tok, bearer, "/api/auth/me")
		if code := cachedOn(t, b, tok, bearer, "/api/auth/me"); code != 200 {
			t.Fatalf("the token on b: %d", code)
		}
		if code, body := callAs(t, ck, "DELETE", a+"/api/tokens/"+id, ""); code != 204 {
			t.Fatalf("delete token: %d %s", code, body)
		}
		if code, _ := callAs(t, bearer, "GET", a+"/api/auth/me", ""); code != 401 {
			t.Errorf("on the replica that deleted it, right after: %d, want 401", code)
		}
		becomes(t, b, bearer, "/api/auth/me", 401, soon, "token deleted on a, on b")
	})

	t.Run("demotion", func(t *testing.T) {
		id, ck := memberSession(t, a, "m2@toolgate.test")
		if code, body := do(t, "PATCH", a+"/api/users/"+id, `{"role":"admin"}`); code != 200 {
			t.Fatalf("promote: %d %s", code, body)
		}
		becomes(t, b, ck, "/api/users", 200, soon, "promoted on a, on b")
		cachedOn(t, a, tok, ck, "/api/users")
		cachedOn(t, b, tok, ck, "/api/users")
		if code, body := do(t, "PATCH", a+"/api/users/"+id, `{"role":"member"}`); code != 200 {
			t.Fatalf("demote: %d %s", code, body)
		}
		if code, _ := callAs(t, ck, "GET", a+"/api/users", ""); code != 403 {
			t.Errorf("an admin-only route on the replica that demoted, right after: %d, want 403", code)
		}
		becomes(t, b, ck, "/api/users", 403, soon, "demoted on a, on b")
	})

	t.Run("disabled", func(t *testing.T) {
		id, ck := memberSession(t, a, "m3@toolgate.test")
		_, bearer := apiToken(t, a, ck)
		cachedOn(t, a, tok, ck, "/api/auth/me")
		cachedOn(t, b, tok, ck, "/api/auth/me")
		cachedOn(t, b, tok, bearer, "/api/auth/me")
		if code, body := do(t, "PATCH", a+"/api/users/"+id, `{"disabled":true}`); code != 200 {
			t.Fatalf("disable: %d %s", code, body)
		}
		if code, _ := callAs(t, ck, "GET", a+"/api/auth/me", ""); code != 401 {
			t.Errorf("on the replica that disabled, right after: %d, want 401", code)
		}
		becomes(t, b, ck, "/api/auth/me", 401, soon, "disabled on a, on b")
		becomes(t, b, bearer, "/api/auth/me", 401, soon, "disabled on a, their token on b")
	})

	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	conn, err := pool.Acquire(ctx) // one session: SET below holds for the statements after it
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()

	t.Run("an operator's SQL", func(t *testing.T) {
		id, ck := memberSession(t, a, "m4@toolgate.test")
		_, bearer := apiToken(t, a, ck)
		cachedOn(t, b, tok, ck, "/api/auth/me")
		cachedOn(t, b, tok, bearer, "/api/auth/me")
		if _, err := conn.Exec(ctx, `DELETE FROM sessions WHERE user_id = $1`, id); err != nil {
			t.Fatal(err)
		}
		becomes(t, b, ck, "/api/auth/me", 401, soon, "session deleted in psql, on b")
		if _, err := conn.Exec(ctx, `DELETE FROM api_tokens WHERE user_id = $1`, id); err != nil {
			t.Fatal(err)
		}
		becomes(t, b, bearer, "/api/auth/me", 401, soon, "token deleted in psql, on b")
	})

	t.Run("while the listener was away", func(t *testing.T) {
		id, ck := memberSession(t, a, "m5@toolgate.test")
		cachedOn(t, b, tok, ck, "/api/auth/me")
		// Every replica's listener connection goes; the revocation commits
		// while they are away, so its notification reaches nobody.
		if _, err := conn.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid() AND query LIKE 'LISTEN %'`); err != nil {
			t.Fatal(err)
		}
		// Triggers off (as a logical replica applies changes): the
		// delete is never notified at all.
		for _, q := range []string{`SET session_replication_role = replica`, `DELETE FROM sessions WHERE user_id = '` + id + `'`,
			`RESET session_replication_role`} {
			if _, err := conn.Exec(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		becomes(t, b, ck, "/api/auth/me", 401, soon, "deleted unnotified while the listener was away, on b")
	})
}
