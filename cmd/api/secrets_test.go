package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolgate/toolgate/internal/demomcp"
	"github.com/toolgate/toolgate/internal/testdb"
)

// testSecretsKey and otherSecretsKey are base64 of 32 bytes.
const (
	testSecretsKey  = "c2VjcmV0cy1rZXktZm9yLXRlc3RzLTAxMjM0NTY3ODk="
	otherSecretsKey = "YW5vdGhlci1rZXktZm9yLXRlc3RzLTAxMjM0NTY3ODk="
)

func TestRun_OnlineWithoutSecretsKeyDoesNotStart(t *testing.T) {
	env := map[string]string{"OPENAI_API_KEY": "sk-test-0123456789", "DATABASE_URL": testdb.MissingURL(t)}
	err := run(t.Context(), nil, func(k string) string { return env[k] }, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "SECRETS_KEY is required when OPENAI_API_KEY is set") || !strings.Contains(err.Error(), "openssl rand -base64 32") {
		t.Fatalf("run = %v, want a refusal saying how to generate SECRETS_KEY", err)
	}
}

// TestRun_HeaderSecretsUseTheKeyFileAndAWrongKeyStopsTheStart: offline, the
// first start creates the key file (0600), the header is stored encrypted
// and still works after a restart with the same file; a start with another
// key fails at once, saying so.
func TestRun_HeaderSecretsUseTheKeyFileAndAWrongKeyStopsTheStart(t *testing.T) {
	const token = "tok-0123456789abcdef-secret"
	demo := httptest.NewServer(demomcp.New(demomcp.Options{Token: token}).Handler())
	defer demo.Close()
	dbURL := testdb.MissingURL(t)
	keyFile := filepath.Join(t.TempDir(), ".toolgate", "secrets.key")
	env := map[string]string{"DATABASE_URL": dbURL, "SECRETS_KEY_FILE": keyFile}

	base, logs, stop := start(t, env)
	if st, err := os.Stat(keyFile); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v, %v; want mode 0600", st, err)
	}
	if !strings.Contains(logs.String(), "created a key for the MCP servers' header secrets") {
		t.Errorf("the new key file was not reported; logs:\n%s", logs)
	}
	body := fmt.Sprintf(`{"label":"weather","url":%q,"headers":{"Authorization":"Bearer %s"}}`, demo.URL+"/mcp", token)
	if st, resp := do(t, "POST", base+"/api/mcp/servers", body); st != 201 || !strings.Contains(resp, `"tool_count":6`) {
		t.Fatalf("create: %d %s", st, resp)
	}
	stop()
	keyBefore, _ := os.ReadFile(keyFile)

	pool, err := pgxpool.New(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var plain string
	var sealed []byte
	if err := pool.QueryRow(t.Context(), `SELECT headers::text, headers_enc FROM mcp_servers WHERE label = 'weather'`).Scan(&plain, &sealed); err != nil {
		t.Fatal(err)
	}
	if plain != "{}" || bytes.Contains(sealed, []byte(token)) || len(sealed) == 0 {
		t.Errorf("stored headers %s / %q: want only ciphertext", plain, sealed)
	}

	base, logs, stop = start(t, env)
	if st, resp := do(t, "POST", base+"/api/mcp/servers/weather/refresh", ""); st != 200 {
		t.Fatalf("refresh with the decrypted header after a restart: %d %s", st, resp)
	}
	if strings.Contains(logs.String(), "created a key") {
		t.Error("the key file was created again")
	}
	stop()
	if keyAfter, _ := os.ReadFile(keyFile); !bytes.Equal(keyBefore, keyAfter) {
		t.Error("the key file changed")
	}

	env["SECRETS_KEY"] = otherSecretsKey
	env["LISTEN_ADDR"] = freeAddr(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	err = run(ctx, nil, func(k string) string { return env[k] }, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "does not decrypt with this key") || !strings.Contains(err.Error(), "is SECRETS_KEY") {
		t.Fatalf("start with another key: %v, want it to stop saying the key does not decrypt", err)
	}
}

// TestRun_URLPolicyRefusesLoopbackOnlineUnlessAllowed: with a key (online),
// a loopback URL is refused at registration with the variable to set, and
// MCP_ALLOWED_HOSTS allows it.
func TestRun_URLPolicyRefusesLoopbackOnlineUnlessAllowed(t *testing.T) {
	demo := httptest.NewServer(demomcp.New(demomcp.Options{}).Handler())
	defer demo.Close()
	for _, allowed := range []string{"", "127.0.0.1"} {
		env := map[string]string{"DATABASE_URL": testdb.MissingURL(t), "OPENAI_API_KEY": "sk-test-0123456789",
			"OPENAI_BASE_URL": "http://127.0.0.1:9/v1/", "SECRETS_KEY": testSecretsKey, "MCP_ALLOWED_HOSTS": allowed}
		base, _, _ := start(t, env)
		st, resp := do(t, "POST", base+"/api/mcp/servers", fmt.Sprintf(`{"label":"weather","url":%q}`, demo.URL+"/mcp"))
		switch allowed {
		case "":
			if st != 400 || !strings.Contains(resp, `"url_not_allowed"`) || !strings.Contains(resp, "MCP_ALLOWED_HOSTS=127.0.0.1") {
				t.Errorf("loopback online: %d %s, want 400 url_not_allowed naming MCP_ALLOWED_HOSTS", st, resp)
			}
		default:
			if st != 201 || !strings.Contains(resp, `"tool_count":6`) {
				t.Errorf("loopback allowed by MCP_ALLOWED_HOSTS: %d %s", st, resp)
			}
			for url, says := range map[string]string{
				"http://169.254.169.254/latest/meta-data": "cloud metadata address",
				"http://[::ffff:a9fe:a9fe]/mcp":           "cloud metadata address",
				"http://10.0.0.1/mcp":                     "MCP_ALLOW_PRIVATE=true",
				"http://0x7f000002/mcp":                   "which is 127.0.0.2) is a loopback address (this machine); to let Toolgate reach it, list it in MCP_ALLOWED_HOSTS, e.g. MCP_ALLOWED_HOSTS=127.0.0.2",
			} {
				st, resp := do(t, "PATCH", base+"/api/mcp/servers/weather", fmt.Sprintf(`{"url":%q}`, url))
				if st != 400 || !strings.Contains(resp, `"url_not_allowed"`) || !strings.Contains(resp, says) {
					t.Errorf("PATCH url %s: %d %s, want 400 url_not_allowed saying %q", url, st, resp, says)
				}
			}
			if st, resp := do(t, "GET", base+"/api/mcp/servers/weather", ""); !strings.Contains(resp, demo.URL) {
				t.Errorf("after refused changes: %d %s, want the URL unchanged", st, resp)
			}
		}
	}
}
