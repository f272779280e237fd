package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

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
