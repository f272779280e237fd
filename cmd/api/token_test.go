package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/testdb"
)

// TestRun_TokenCreatePrintsAWorkingToken: `toolgate token create EMAIL NAME`
// prints only a personal API token, which then signs requests in as that
// account; an unknown email is an error and prints nothing.
func TestRun_TokenCreatePrintsAWorkingToken(t *testing.T) {
	env := map[string]string{"DATABASE_URL": testdb.URL(t)}
	base, _, _ := start(t, env)
	getenv := func(k string) string { return env[k] }

	var out bytes.Buffer
	if err := run(context.Background(), []string{"token", "create", testAdminEmail, "curl"}, getenv, &out); err != nil {
		t.Fatalf("token create: %v", err)
	}
	tok := strings.TrimSpace(out.String())
	if !strings.HasPrefix(tok, "tg_") || strings.Contains(tok, "\n") {
		t.Fatalf("stdout must hold the token alone, got %q", out.String())
	}
	req, _ := http.NewRequest("GET", base+"/api/auth/me", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(body), testAdminEmail) {
		t.Errorf("GET /api/auth/me with the printed token: %d %s", res.StatusCode, body)
	}

	out.Reset()
	err = run(context.Background(), []string{"token", "create", "nobody@toolgate.test"}, getenv, &out)
	if err == nil || out.Len() != 0 {
		t.Errorf("unknown email: err %v, stdout %q; want an error and nothing printed", err, out.String())
	}
}
