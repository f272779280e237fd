package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolgate/toolgate/internal/termchat"
	"github.com/toolgate/toolgate/internal/testdb"
)

// askInAChat sends msg as a new chat message through the API (as the web
// app would) and reads its stream to the end: the request it asks waits.
func askInAChat(t *testing.T, base, token, msg string) {
	t.Helper()
	body := `{"input": ` + quoteJSON(msg) + `}`
	req, _ := http.NewRequest(http.MethodPost, base+"/api/responses", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 || !bytes.Contains(raw, []byte("event: approval.required")) {
		t.Fatalf("POST /api/responses: %d %s", res.StatusCode, raw)
	}
}

func quoteJSON(s string) string {
	return `"` + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), `"`, `\"`) + `"`
}

// TestInbox_InATerminal runs `toolgate inbox`, the built binary, in a
// pseudo-terminal against a real Toolgate: with --watch it waits, a chat's
// request appears as its card with where it came from, y approves it (the
// chat's follow-up runs: the tool deletes Oslo), and it waits again;
// without --watch and nothing waiting it says so and exits 0.
// Catches: a decision sent to the wrong route or not at all, a watch mode
// that never hears of the new request, a card without its source.
func TestInbox_InATerminal(t *testing.T) {
	env := map[string]string{"DATABASE_URL": testdb.URL(t), "USER_MESSAGES_PER_MINUTE": "1000"}
	base, _, _ := start(t, env)
	var out bytes.Buffer
	if err := run(context.Background(), []string{"token", "create", testAdminEmail, "terminal"}, func(k string) string { return env[k] }, &out); err != nil {
		t.Fatalf("token create: %v", err)
	}
	token := strings.TrimSpace(out.String())
	bin := buildToolgate(t)
	termEnv := []string{"TOOLGATE_URL=" + base, "TOOLGATE_TOKEN=" + token}

	tm := startTerminal(t, bin, termEnv, "inbox")
	tm.expect("Nothing waits for you.")
	tm.exitCode(0)

	tm = startTerminal(t, bin, termEnv, "inbox", "--watch")
	tm.expect("Nothing waits for you now. Watching for new requests")
	askInAChat(t, base, token, `delete_forecast {"city": "Oslo"}`)
	tm.expect("In the chat “")
	tm.expect("── Approval needed: delete_forecast on demo")
	tm.expect(`"city": "Oslo"`)
	tm.expect(termchat.DecisionKeys + "\r\n> ")
	tm.send("y\r")
	tm.expect("Approved delete_forecast on demo: the chat goes on in the background")
	tm.expect("Nothing waits for you now. Watching for new requests")

	// The chat's follow-up ran on the server: Oslo's forecast is gone.
	deadline := time.Now().Add(15 * time.Second)
	for {
		var tr struct {
			Items []struct {
				Type   string  `json:"type"`
				Output *string `json:"output"`
			} `json:"items"`
		}
		var list struct {
			Conversations []struct {
				ID string `json:"id"`
			} `json:"conversations"`
		}
		getJSON(t, base+"/api/conversations", token, &list)
		getJSON(t, base+"/api/conversations/"+list.Conversations[0].ID, token, &tr)
		ran := false
		for _, it := range tr.Items {
			if it.Type == "mcp_call" && it.Output != nil && strings.Contains(*it.Output, "Deleted the forecast for Oslo.") {
				ran = true
			}
		}
		if ran {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the approved call did not run: %+v", tr.Items)
		}
		time.Sleep(100 * time.Millisecond)
	}
	tm.send("\x03") // Ctrl-C while watching quits
	tm.exitCode(0)
}

// TestInbox_InATerminalDecidesAnAgentsHeldCall: an agent (the official MCP
// TypeScript SDK client, started here) calls a tool that asks through /mcp;
// `toolgate inbox --watch` shows the held call with the client it came
// from, y approves it, and the agent gets the tool's result: it ran once.
func TestInbox_InATerminalDecidesAnAgentsHeldCall(t *testing.T) {
	dbURL := testdb.URL(t)
	env := map[string]string{"DATABASE_URL": dbURL}
	base, _, _ := start(t, env)
	token := tokenFor(t, env, testAdminEmail)
	bin := buildToolgate(t)
	tm := startTerminal(t, bin, []string{"TOOLGATE_URL=" + base, "TOOLGATE_TOKEN=" + token}, "inbox", "--watch")
	tm.expect("Watching for new requests")

	wait := nodeScript(t, "@modelcontextprotocol/sdk", "scripts/mcp-face-client.mjs", base+"/mcp", token, "demo__delete_forecast", `{"city":"Lisbon"}`)
	tm.expect("ts-provider")
	tm.expect("── Approval needed: delete_forecast on demo")
	tm.expect(`"city": "Lisbon"`)
	tm.expect(termchat.DecisionKeys + "\r\n> ")
	tm.send("y\r")
	if r := wait(); r.Result.IsError || !strings.Contains(r.text(), "Lisbon") {
		t.Fatalf("the agent's call approved in the terminal: %+v", r)
	}
	tm.send("\x03")
	tm.exitCode(0)

	var ran int
	pool, err := pgxpool.New(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if err := pool.QueryRow(t.Context(), `SELECT count(*) FROM gateway_calls WHERE tool_name = 'delete_forecast' AND state = 'done'
		AND client->>'name' = 'ts-provider'`).Scan(&ran); err != nil {
		t.Fatal(err)
	}
	if ran != 1 {
		t.Errorf("delete_forecast ran %d times through the face, want once", ran)
	}
}
