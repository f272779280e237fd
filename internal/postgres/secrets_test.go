package postgres_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/postgres"
	"github.com/toolgate/toolgate/internal/secrets"
	"github.com/toolgate/toolgate/internal/testdb"
)

// rawHeaders reads a server's header columns as stored.
func rawHeaders(t *testing.T, q *pgxpool.Pool, label string) (plain string, sealed []byte) {
	t.Helper()
	if err := q.QueryRow(t.Context(), `SELECT headers::text, headers_enc FROM mcp_servers WHERE label = $1`, label).Scan(&plain, &sealed); err != nil {
		t.Fatal(err)
	}
	return plain, sealed
}

func TestServerHeadersAreStoredEncrypted(t *testing.T) {
	pool := testdb.New(t)
	repo := postgres.NewStore(pool).Repo()
	secret := "Bearer sk-live-0123456789abcdef"
	if _, err := repo.Servers.Insert(t.Context(), policy.Server{Label: "crm", URL: "https://crm.example/mcp", Enabled: true,
		Headers: map[string]string{"Authorization": secret}}); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		plain, sealed := rawHeaders(t, pool, "crm")
		if plain != "{}" || sealed == nil || bytes.Contains(sealed, []byte("sk-live")) || bytes.Contains(sealed, []byte("Authorization")) {
			t.Errorf("%s: headers column %s, headers_enc %q: want no plaintext anywhere", when, plain, sealed)
		}
	}
	check("after insert")

	srv, err := repo.Servers.Get(t.Context(), "crm", false)
	if err != nil || srv.Headers["Authorization"] != secret {
		t.Fatalf("read back: %v, %v", srv.Headers, err)
	}
	srv.Headers["X-Team"] = "blue-team-secret"
	if _, err := repo.Servers.Update(t.Context(), srv); err != nil {
		t.Fatal(err)
	}
	check("after update")
	if _, sealed := rawHeaders(t, pool, "crm"); bytes.Contains(sealed, []byte("blue-team")) {
		t.Error("the updated value is in plain text")
	}

	// The label is the associated data: a value copied to another row does not open.
	if _, err := repo.Servers.Insert(t.Context(), policy.Server{Label: "other", URL: "https://o.example/mcp", Enabled: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(t.Context(), `UPDATE mcp_servers SET headers_enc = (SELECT headers_enc FROM mcp_servers WHERE label = 'crm') WHERE label = 'other'`); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Servers.Get(t.Context(), "other", false); err == nil {
		t.Error("a sealed value moved to another server opened")
	}
}

func TestSealHeadersEncryptsPlaintextFromBeforeAndRefusesAWrongKey(t *testing.T) {
	pool := testdb.New(t)
	// A row as migration 00003 left it: headers in plain text.
	if _, err := pool.Exec(t.Context(), `INSERT INTO mcp_servers (label, url, headers) VALUES
		('legacy', 'https://l.example/mcp', '{"Authorization": "Bearer legacy-0123456789"}'),
		('bare', 'https://b.example/mcp', '{}')`); err != nil {
		t.Fatal(err)
	}
	n, err := postgres.SealHeaders(t.Context(), pool, postgres.HeaderBox())
	if err != nil || n != 2 {
		t.Fatalf("SealHeaders = %d, %v; want 2 sealed", n, err)
	}
	plain, sealed := rawHeaders(t, pool, "legacy")
	if plain != "{}" || sealed == nil || bytes.Contains(sealed, []byte("legacy-0123")) {
		t.Errorf("after sealing: headers %s, headers_enc %q", plain, sealed)
	}
	srv, err := postgres.NewStore(pool).Repo().Servers.Get(t.Context(), "legacy", false)
	if err != nil || srv.Headers["Authorization"] != "Bearer legacy-0123456789" {
		t.Fatalf("read back: %v, %v", srv.Headers, err)
	}
	if n, err := postgres.SealHeaders(t.Context(), pool, postgres.HeaderBox()); err != nil || n != 0 {
		t.Errorf("second start: %d sealed, %v; want 0 and no error", n, err)
	}

	_, err = postgres.SealHeaders(t.Context(), pool, secrets.NewRandom())
	if !errors.Is(err, secrets.ErrWrongKey) || !strings.Contains(err.Error(), "SECRETS_KEY") {
		t.Fatalf("a wrong key: %v, want ErrWrongKey naming SECRETS_KEY", err)
	}
	if _, sealedAfter := rawHeaders(t, pool, "legacy"); !bytes.Equal(sealed, sealedAfter) {
		t.Error("a start with the wrong key changed the stored secrets")
	}
}

// rawURL reads a server's URL columns as stored.
func rawURL(t *testing.T, q *pgxpool.Pool, label string) (shown string, sealed []byte) {
	t.Helper()
	if err := q.QueryRow(t.Context(), `SELECT url, url_enc FROM mcp_servers WHERE label = $1`, label).Scan(&shown, &sealed); err != nil {
		t.Fatal(err)
	}
	return shown, sealed
}

// The query values of a server URL are secrets like header values: the
// row holds them encrypted only, the store reads the realURL URL back, a URL
// from before encryption is encrypted at start, and a failure is recorded
// against the URL that failed.
func TestServerURLQueryIsStoredEncrypted(t *testing.T) {
	pool := testdb.New(t)
	repo := postgres.NewStore(pool).Repo()
	realURL := "https://crm.example/mcp?tenant=acme&api_key=qk-0123456789abcdef"
	if _, err := repo.Servers.Insert(t.Context(), policy.Server{Label: "crm", URL: realURL, Enabled: true}); err != nil {
		t.Fatal(err)
	}
	check := func(when, secret string) {
		shown, sealed := rawURL(t, pool, "crm")
		if shown != "https://crm.example/mcp?tenant=********&api_key=********" || sealed == nil ||
			bytes.Contains(sealed, []byte(secret)) || bytes.Contains(sealed, []byte("crm.example")) {
			t.Errorf("%s: url %q, url_enc %q: want the query values masked and the URL encrypted", when, shown, sealed)
		}
	}
	check("after insert", "qk-0123")
	srv, err := repo.Servers.Get(t.Context(), "crm", false)
	if err != nil || srv.URL != realURL {
		t.Fatalf("read back %q, %v; want the realURL URL", srv.URL, err)
	}
	if snap, err := postgres.NewStore(pool).ToolSnapshot(t.Context()); err != nil || len(snap.Servers) != 1 || snap.Servers[0].Server.URL != realURL {
		t.Fatalf("snapshot servers %+v, %v; want the realURL URL", snap.Servers, err)
	}
	srv.URL = "https://crm.example/mcp?tenant=acme&api_key=qk-fedcba9876543210"
	if _, err := repo.Servers.Update(t.Context(), srv); err != nil {
		t.Fatal(err)
	}
	check("after update", "qk-fedcba")

	// A failure of the old URL is not recorded against the new one; one of
	// the current URL is.
	if err := repo.Health.MarkUnreachable(t.Context(), "crm", realURL, "refused", time.Now()); err != nil {
		t.Fatal(err)
	}
	if s, _ := repo.Servers.Get(t.Context(), "crm", false); s.Health.Status == "unreachable" {
		t.Error("a failure of the old URL marked the server unreachable")
	}
	if err := repo.Health.MarkUnreachable(t.Context(), "crm", srv.URL, "refused", time.Now()); err != nil {
		t.Fatal(err)
	}
	if s, _ := repo.Servers.Get(t.Context(), "crm", false); s.Health.Status != "unreachable" {
		t.Errorf("a failure of the current URL: health %+v", s.Health)
	}

	// A URL stored in plain text by an older version is encrypted at start;
	// one without a query stays as it is.
	if _, err := pool.Exec(t.Context(), `INSERT INTO mcp_servers (label, url) VALUES
		('legacy', 'https://l.example/mcp?token=legacy-0123456789'), ('bare', 'https://b.example/mcp')`); err != nil {
		t.Fatal(err)
	}
	if n, err := postgres.SealHeaders(t.Context(), pool, postgres.HeaderBox()); err != nil || n != 2 {
		t.Fatalf("SealHeaders = %d, %v; want 2 sealed (legacy's URL and headers, bare's headers)", n, err)
	}
	if shown, sealed := rawURL(t, pool, "legacy"); shown != "https://l.example/mcp?token=********" || bytes.Contains(sealed, []byte("legacy-0123")) {
		t.Errorf("legacy after sealing: url %q, url_enc %q", shown, sealed)
	}
	if shown, sealed := rawURL(t, pool, "bare"); shown != "https://b.example/mcp" || sealed != nil {
		t.Errorf("bare after sealing: url %q, url_enc %q", shown, sealed)
	}
	if s, err := repo.Servers.Get(t.Context(), "legacy", false); err != nil || s.URL != "https://l.example/mcp?token=legacy-0123456789" {
		t.Errorf("legacy read back %q, %v", s.URL, err)
	}
	if _, err := postgres.SealHeaders(t.Context(), pool, secrets.NewRandom()); !errors.Is(err, secrets.ErrWrongKey) {
		t.Errorf("a wrong key: %v, want ErrWrongKey", err)
	}
}
