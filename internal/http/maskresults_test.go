package http_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/auth"
)

// Credential shapes a hostile tool puts in its result, built from parts so
// no scanner mistakes this file for a leak.
var (
	leakKey = "sk-" + "proj-9QxT4mB7vK2pLw8sNc3yRf6h"
	leakJWT = "eyJhbGciOiJIUzI1NiJ9" + ".eyJzdWIiOiJyb290In0" + ".Qm9vbS1nb2VzLXRoZS10b2tlbi0xMjM"
)

// newLeakyMCP is an MCP server whose one tool, dump, answers with secrets:
// an API key and a bearer token in its text and in its structuredContent,
// next to text that must pass as it is.
func newLeakyMCP(t *testing.T) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "leaky", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "dump", Description: "Dumps the environment.", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{
				Content: []mcp.Content{&mcp.TextContent{Text: "OPENAI_KEY " + leakKey + "\ncurl -H 'Authorization: Bearer " + leakJWT + "' https://api.example.com\nregion eu-north-1"}},
				StructuredContent: map[string]any{"region": "eu-north-1", "env": map[string]any{"OPENAI": leakKey},
					"auth": "Bearer " + leakJWT, "rows": 3},
			}, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(hs.Close)
	return hs.URL
}

// What passes the face is checked before the model reads it: the secrets a
// tool's result holds (text and structuredContent) reach the provider
// masked, the rest as it came; the receipt and the face's record say how
// many were masked, and output_sha256 still digests what the server sent.
// An admin can let a server's results pass untouched (mask_results false,
// audited); a member cannot.
func TestMaskResults_SecretsInAResultAreMaskedBeforeTheProvider(t *testing.T) {
	e := newAPIWith(t, envOptions{gateway: true})
	var srv struct {
		MaskResults bool `json:"mask_results"`
	}
	e.must(201, "POST", "/api/mcp/servers", map[string]any{"label": "leaky", "url": newLeakyMCP(t)}, &srv)
	if !srv.MaskResults {
		t.Fatal("a new server's mask_results is false; want true by default")
	}
	e.setPolicy("leaky", "dump", "never")
	var other struct {
		MaskResults *bool `json:"mask_results"`
	}
	e.must(201, "POST", "/api/mcp/servers", map[string]any{"label": "raw", "url": e.demoURL, "mask_results": false}, &other)
	if other.MaskResults == nil || *other.MaskResults {
		t.Errorf("a server created with mask_results false shows mask_results %v", other.MaskResults)
	}
	// Servers registered before the upgrade (migration 00038) mask too.
	var def string
	if err := e.pool.QueryRow(context.Background(), `SELECT column_default FROM information_schema.columns
		WHERE table_name = 'mcp_servers' AND column_name = 'mask_results'`).Scan(&def); err != nil || def != "true" {
		t.Errorf("mcp_servers.mask_results defaults to %q (%v); want true, so that existing servers mask", def, err)
	}

	// run sends one message; the provider also calls the face itself with
	// the token Toolgate gave it, to read the whole result.
	run := func(conv, args string) (string, *mcp.CallToolResult, string) {
		t.Helper()
		var direct *mcp.CallToolResult
		e.up.onRequest(func(raw []byte) {
			if direct != nil {
				return
			}
			u, tok := tokenOf(t, raw, "leaky")
			direct, _ = (&faceClient{t: t, url: u, token: tok}).call("dump", `{"direct":true}`)
		})
		defer e.up.onRequest(nil)
		s := e.send(conv, `dump `+args).ok(t)
		conv = s.conv(t)
		var out string
		for _, it := range e.transcript(conv).Items {
			if it.Type == "mcp_call" && it.Name == "dump" && it.Output != nil && strings.Contains(string(it.Arguments), args[1:len(args)-1]) {
				out = *it.Output
			}
		}
		if direct == nil || out == "" {
			t.Fatalf("the provider got no result: direct %v, transcript output %q", direct, out)
		}
		return conv, direct, out
	}

	conv, direct, out := run("", `{"n":1}`)
	structured, _ := json.Marshal(direct.StructuredContent)
	for what, got := range map[string]string{"the emulator's output": out, "the text": resultText(direct), "structuredContent": string(structured)} {
		if strings.Contains(got, leakKey) || strings.Contains(got, leakJWT) {
			t.Errorf("%s holds a secret: %s", what, got)
		}
		if !strings.Contains(got, "[redacted]") || !strings.Contains(got, "eu-north-1") {
			t.Errorf("%s = %s; want the secrets masked and the rest as it came", what, got)
		}
	}
	if want := `{"auth":"[redacted]","env":{"OPENAI":"[redacted]"},"region":"eu-north-1","rows":3}`; string(structured) != want {
		t.Errorf("structuredContent = %s, want %s", structured, want)
	}
	if n := e.maskedOf(conv); n != "4,4" {
		t.Errorf("the face's records of the calls say masked %s; want 4,4 (a key and a token in the text and in structuredContent)", n)
	}
	receipts := e.maskedReceipts(conv)
	if len(receipts) != 2 || receipts[0] != "4" || receipts[1] != "4" {
		t.Errorf("the receipts say masked %v; want 4 for each call", receipts)
	}
	if e.outputDigestHolds(conv, leakKey) != 2 {
		t.Error("the stored result lost its output_sha256, or it does not digest what the server sent")
	}

	member, _ := e.newUser(auth.Member)
	wantCode(t, "a member turning masking off", member.call("PATCH", "/api/mcp/servers/leaky", map[string]any{"mask_results": false}), 403, "admin_only")
	e.must(200, "GET", "/api/mcp/servers/leaky", nil, &srv)
	if !srv.MaskResults {
		t.Fatal("a member's refused PATCH turned masking off")
	}
	e.must(200, "PATCH", "/api/mcp/servers/leaky", map[string]any{"mask_results": false}, &srv)
	if srv.MaskResults {
		t.Fatal("after PATCH mask_results false the server still masks")
	}
	var audited int
	if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM audit_log WHERE action = 'server.update'
		AND server_label = 'leaky' AND before->>'mask_results' = 'true' AND after->>'mask_results' = 'false'`).Scan(&audited); err != nil || audited != 1 {
		t.Errorf("%d audit entries say mask_results went from true to false (%v); want 1", audited, err)
	}

	conv2, direct, out := run("", `{"n":2}`)
	structured, _ = json.Marshal(direct.StructuredContent)
	for what, got := range map[string]string{"the emulator's output": out, "the text": resultText(direct), "structuredContent": string(structured)} {
		if !strings.Contains(got, leakKey) || !strings.Contains(got, leakJWT) || strings.Contains(got, "[redacted]") {
			t.Errorf("with mask_results false %s = %s; want it untouched", what, got)
		}
	}
	if n := e.maskedOf(conv2); n != "-,-" {
		t.Errorf("with mask_results false the face's records say masked %s; want null (not checked)", n)
	}
	if r := e.maskedReceipts(conv2); len(r) != 2 || r[0] != "" || r[1] != "" {
		t.Errorf("with mask_results false the receipts say masked %v; want no masked field", r)
	}
}

// maskedOf is gateway_calls.masked of conv's calls in order, "-" for null.
func (e *apiEnv) maskedOf(conv string) string {
	e.t.Helper()
	var s string
	if err := e.pool.QueryRow(context.Background(), `SELECT coalesce(string_agg(coalesce(masked::text, '-'), ',' ORDER BY created_at, id), '')
		FROM gateway_calls WHERE conversation_id = $1`, conv).Scan(&s); err != nil {
		e.t.Fatal(err)
	}
	return s
}

// maskedReceipts are the masked fields of conv's tool.call receipts, ""
// where absent.
func (e *apiEnv) maskedReceipts(conv string) []string {
	e.t.Helper()
	var out []string
	if err := e.pool.QueryRow(context.Background(), `SELECT coalesce(array_agg(coalesce(after->>'masked', '') ORDER BY id), '{}')
		FROM audit_log WHERE action = 'tool.call' AND conversation_id = $1`, conv).Scan(&out); err != nil {
		e.t.Fatal(err)
	}
	return out
}

// outputDigestHolds counts conv's finished calls whose stored result is
// redacted (it does not hold secret) and whose output digest is not that
// of the stored (redacted) result: it digests what the server sent.
func (e *apiEnv) outputDigestHolds(conv, secret string) int {
	e.t.Helper()
	var n int
	if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM gateway_calls WHERE conversation_id = $1
		AND state = 'done' AND output_sha256 IS NOT NULL AND position($2 in result::text) = 0
		AND output_sha256 <> encode(sha256(convert_to(result::text, 'UTF8')), 'hex')`, conv, secret).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}
