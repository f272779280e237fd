package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolgate/toolgate/internal/testdb"
)

// nodeResult is what frontend/scripts/*-face-client.mjs print.
type nodeResult struct {
	Tools  []string `json:"tools"`
	Result struct {
		IsError bool `json:"isError"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	} `json:"result"`
}

func (r nodeResult) text() string {
	var b strings.Builder
	for _, c := range r.Result.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// nodeScript starts a third-party MCP client (a script in frontend/) that
// lists the tools at url and calls tool with args; wait returns what it
// printed.
func nodeScript(t *testing.T, pkg, script, url, token, tool, args string) (wait func() nodeResult) {
	t.Helper()
	frontend, _ := filepath.Abs("../../frontend")
	if _, err := os.Stat(filepath.Join(frontend, "node_modules", filepath.FromSlash(pkg))); err != nil {
		t.Fatalf("%s is not installed (run npm ci in frontend/; make test does): this test runs it against the face", pkg)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed: this test runs third-party MCP clients against the face")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	cmd := exec.CommandContext(ctx, node, script, url, token, tool, args)
	cmd.Dir = frontend
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	return func() nodeResult {
		t.Helper()
		defer cancel()
		if err := cmd.Wait(); err != nil {
			t.Fatalf("node %s %s: %v\n%s", script, tool, err, stderr.String())
		}
		var r nodeResult
		if err := json.Unmarshal([]byte(stdout.String()), &r); err != nil {
			t.Fatalf("node %s: %v: %s", script, err, stdout.String())
		}
		return r
	}
}

// TestAgentFace_ThirdPartyClients: the official MCP TypeScript SDK client
// and the OpenAI Agents SDK's MCPServerStreamableHttp, each started here,
// list the tools at /mcp with a personal token (blocked ones hidden), run a
// tool that runs unasked, and run a tool that asks once the person approves
// it from the inbox (POST /api/approvals/{id}/decision); a held call
// denied returns the reason. Each ran exactly once, and its receipt names
// the client.
func TestAgentFace_ThirdPartyClients(t *testing.T) {
	dbURL := testdb.URL(t)
	env := map[string]string{"DATABASE_URL": dbURL}
	base, _, _ := start(t, env)
	token := tokenFor(t, env, testAdminEmail)
	pool, err := pgxpool.New(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if st, body := do(t, "PUT", base+"/api/mcp/servers/demo/tools/reset_forecasts/approval-policy", `{"policy":"blocked"}`); st != 200 {
		t.Fatalf("block reset_forecasts: %d %s", st, body)
	}
	decide := func(t *testing.T, city, body string) {
		t.Helper()
		id := waitPending(t, pool, city)
		if st, b := do(t, "POST", base+"/api/approvals/"+id+"/decision", body); st != 200 {
			t.Fatalf("decide %s: %d %s", id, st, b)
		}
	}
	clients := []struct{ name, pkg, script, city, client string }{
		{"MCP TypeScript SDK", "@modelcontextprotocol/sdk", "scripts/mcp-face-client.mjs", "Lisbon", "ts-provider"},
		{"OpenAI Agents SDK", "@openai/agents", "scripts/agents-face-client.mjs", "Berlin", ""},
	}
	for _, c := range clients {
		t.Run(c.name, func(t *testing.T) {
			r := nodeScript(t, c.pkg, c.script, base+"/mcp", token, "demo__get_forecast", `{"city":"`+c.city+`"}`)()
			if !slices.Contains(r.Tools, "demo__get_forecast") || slices.Contains(r.Tools, "demo__reset_forecasts") {
				t.Errorf("listed %v: want demo's tools, the blocked reset_forecasts hidden", r.Tools)
			}
			if r.Result.IsError || !strings.Contains(r.text(), c.city) {
				t.Errorf("get_forecast: %+v", r)
			}

			wait := nodeScript(t, c.pkg, c.script, base+"/mcp", token, "demo__delete_forecast", `{"city":"`+c.city+`"}`)
			decide(t, c.city, `{"approve":true}`)
			if r := wait(); r.Result.IsError {
				t.Errorf("delete_forecast after approval: %s", r.text())
			}

			wait = nodeScript(t, c.pkg, c.script, base+"/mcp", token, "demo__set_forecast", `{"city":"`+c.city+`","summary":"Hail","temperature_c":1}`)
			decide(t, c.city, `{"approve":false,"reason":"no hail today"}`)
			if r := wait(); !r.Result.IsError || !strings.Contains(r.text(), "no hail today") {
				t.Errorf("set_forecast denied: %+v; want an error result with the reason", r)
			}
		})
	}

	rows, err := pool.Query(t.Context(), `SELECT tool_name, coalesce(client->>'name', ''), count(*) FROM gateway_calls
		WHERE conversation_id LIKE 'agt_%' AND state = 'done' GROUP BY 1, 2 ORDER BY 1, 2`)
	if err != nil {
		t.Fatal(err)
	}
	ran := map[string]int{}
	for rows.Next() {
		var tool, client string
		var n int
		if err := rows.Scan(&tool, &client, &n); err != nil {
			t.Fatal(err)
		}
		if client == "" {
			t.Errorf("%d receipts of %s name no client", n, tool)
		}
		ran[tool] += n
	}
	if ran["get_forecast"] != 2 || ran["delete_forecast"] != 2 || ran["set_forecast"] != 0 {
		t.Errorf("ran %v; want get_forecast and delete_forecast twice each (once per client), set_forecast never", ran)
	}
}
