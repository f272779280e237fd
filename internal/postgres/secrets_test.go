package postgres_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

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
	if _, err := repo.InsertServer(t.Context(), policy.Server{Label: "crm", URL: "https://crm.example/mcp", Enabled: true,
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

	srv, err := repo.Server(t.Context(), "crm", false)
	if err != nil || srv.Headers["Authorization"] != secret {
		t.Fatalf("read back: %v, %v", srv.Headers, err)
	}
	srv.Headers["X-Team"] = "blue-team-secret"
	if _, err := repo.UpdateServer(t.Context(), srv); err != nil {
		t.Fatal(err)
	}
	check("after update")
	if _, sealed := rawHeaders(t, pool, "crm"); bytes.Contains(sealed, []byte("blue-team")) {
		t.Error("the updated value is in plain text")
	}

	// The label is the associated data: a value copied to another row does not open.
	if _, err := repo.InsertServer(t.Context(), policy.Server{Label: "other", URL: "https://o.example/mcp", Enabled: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(t.Context(), `UPDATE mcp_servers SET headers_enc = (SELECT headers_enc FROM mcp_servers WHERE label = 'crm') WHERE label = 'other'`); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Server(t.Context(), "other", false); err == nil {
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
	srv, err := postgres.NewStore(pool).Repo().Server(t.Context(), "legacy", false)
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
