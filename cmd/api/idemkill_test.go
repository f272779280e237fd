package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolgate/toolgate/internal/demomcp"
	"github.com/toolgate/toolgate/internal/emulator"
	"github.com/toolgate/toolgate/internal/testdb"
)

// keyedPost posts body with an Idempotency-Key and reads the whole answer.
func keyedPost(t *testing.T, url, key, body string) (status int, replayed bool, events []event, raw string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	withSession(req)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	events = readEvents(bytes.NewReader(b))
	return res.StatusCode, res.Header.Get("Idempotent-Replayed") == "true", events, string(b)
}

// retryKeyed repeats a keyed request while it answers 409
// idempotency_key_in_flight, until limit after killed.
func retryKeyed(t *testing.T, url, key, body string, killed time.Time, limit time.Duration) (bool, []event) {
	t.Helper()
	for {
		st, replayed, events, raw := keyedPost(t, url, key, body)
		switch {
		case st == 200:
			t.Logf("the repeat was answered %s after the kill (replayed %v)", time.Since(killed).Round(100*time.Millisecond), replayed)
			return replayed, events
		case st != 409 || !strings.Contains(raw, "idempotency_key_in_flight"):
			t.Fatalf("the repeat: %d %s", st, raw)
		case time.Since(killed) > limit:
			t.Fatalf("the repeat still gets %d %s %s after its replica was killed (lease %s)", st, raw, time.Since(killed).Round(time.Second), leaseTTL)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestKill_IdempotencyKeyOfAKilledReplica SIGKILLs the replica handling a
// request with an Idempotency-Key, restarts it, and sends the request
// again with the same key: within the turn lease the key is no longer in
// flight. A request that never started its turn runs now (once); one whose
// turn ran is answered from what was stored (the turn as its takeover
// closed it) and runs nothing again.
func TestKill_IdempotencyKeyOfAKilledReplica(t *testing.T) {
	bin := buildToolgate(t)
	demo := demomcp.New(demomcp.Options{})
	demoSrv := httptest.NewServer(demo.Handler())
	t.Cleanup(demoSrv.Close)
	emu, err := emulator.New(emulator.Config{MCPTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	up := &provider{emu: emu.Handler()}
	upSrv := httptest.NewServer(up)
	t.Cleanup(upSrv.Close)
	t.Cleanup(up.releaseAll)

	dbURL := testdb.URL(t)
	env := map[string]string{
		// Direct mode: the provider calls the MCP server itself (the
		// gateway-mode counterpart is TestKill_GatewayFollowUpAtEachStep).
		"MCP_ROUTE": "direct", "DATABASE_URL": dbURL, "LISTEN_ADDR": freeAddr(t),
		"OPENAI_BASE_URL": upSrv.URL + "/v1/", "OFFLINE_DEMO": "false", "MCP_ALLOWED_HOSTS": "127.0.0.1",
		"SECRETS_KEY_FILE":     filepath.Join(t.TempDir(), "secrets.key"),
		"TOOLGATE_ADMIN_EMAIL": testAdminEmail, "TOOLGATE_ADMIN_PASSWORD": testAdminPassword,
		"TURN_LEASE_TTL": leaseTTL.String(), "USER_MESSAGES_PER_MINUTE": "1000", "LOG_LEVEL": "debug"}
	tg := startBinary(t, bin, env)
	if st, body := do(t, "POST", tg.base+"/api/mcp/servers", fmt.Sprintf(`{"label":"demo","url":%q}`, demoSrv.URL+"/mcp")); st != 201 {
		t.Fatalf("registering the demo MCP server: %d %s", st, body)
	}
	if st, body := do(t, "PUT", tg.base+"/api/mcp/servers/demo/tools/send_alert/approval-policy", `{"policy":"always"}`); st != 200 {
		t.Fatalf("send_alert always asks: %d %s", st, body)
	}
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	// A lease, the sweep that takes the turn over (3/4 of a lease at
	// most), a bounded read-back and a margin for a busy machine.
	limit := leaseTTL + leaseTTL*3/4 + 3*time.Second + 5*time.Second

	// A request that never started its turn.
	{
		_, events := sse(t, tg.base+"/api/responses", `{"input":"hello"}`)
		conv, _ := asked(t, events)
		// The conversation is locked: the keyed message reserves its key,
		// then waits for the lock to open its turn, and its replica dies there.
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx) //nolint:errcheck
		if _, err := tx.Exec(ctx, `SELECT 1 FROM conversations WHERE id = $1 FOR UPDATE`, conv); err != nil {
			t.Fatal(err)
		}
		const key = "never-ran-1"
		body := fmt.Sprintf(`{"conversation_id":%q,"input":"list_forecasts"}`, conv)
		go func() {
			req, _ := http.NewRequest(http.MethodPost, tg.base+"/api/responses", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Idempotency-Key", key)
			withSession(req)
			if res, err := http.DefaultClient.Do(req); err == nil {
				res.Body.Close()
			}
		}()
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			var waiting int
			if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
				WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
				t.Fatal(err)
			}
			var keys int
			if err := pool.QueryRow(ctx, `SELECT count(*) FROM idempotency_keys WHERE key = $1 AND state = 'in_flight'`, key).Scan(&keys); err != nil {
				t.Fatal(err)
			}
			if waiting > 0 && keys == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the keyed message never waited for the conversation's lock (key rows %d, waiting %d)", keys, waiting)
			}
		}
		tg.kill(t)
		killed := time.Now()
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		tg = startBinary(t, bin, env)

		replayed, events := retryKeyed(t, tg.base+"/api/responses", key, body, killed, limit)
		if replayed || len(events) == 0 || events[len(events)-1].name != "completed" {
			t.Errorf("the repeat of a request that never ran: replayed %v, events %v; want it to run now and complete", replayed, events)
		}
		tr := getTranscript(t, tg.base, conv)
		n := 0
		for _, it := range tr.Items {
			if it.Type == "user_message" && it.Text == "list_forecasts" {
				n++
			}
		}
		if n != 1 {
			t.Errorf("the message is in the transcript %d times, want once", n)
		}
		// Repeated again: the stream of the run that happened, replayed.
		if st, replayed, _, raw := keyedPost(t, tg.base+"/api/responses", key, body); st != 200 || !replayed {
			t.Errorf("the next repeat: %d replayed %v %s; want the stored stream", st, replayed, raw)
		}
	}

	// A request whose turn ran.
	{
		const city = "Idem-ran"
		msg := `{"input":"send_alert {\"city\": \"` + city + `\", \"message\": \"x\"}"}`
		_, events := sse(t, tg.base+"/api/responses", msg)
		conv, approval := asked(t, events)
		if conv == "" || approval == "" {
			t.Fatalf("the model did not ask: %v", events)
		}
		const key = "ran-1"
		body := fmt.Sprintf(`{"conversation_id":%q,"approval_request_id":%q,"approve":true}`, conv, approval)
		held := up.holdNext(before("response.mcp_call_arguments.done"))
		stream := openSSEKeyed(t, tg.base+"/api/responses/approval-response", key, body)
		select {
		case <-held:
		case <-time.After(20 * time.Second):
			t.Fatal("the follow-up's answer never reached the held event")
		}
		stream.waitFor(t, func(ev event) bool { return ev.name == "tool.started" })
		tg.kill(t)
		killed := time.Now()
		up.releaseAll()
		stream.close()
		tg = startBinary(t, bin, env)
		followUps := func() int {
			return bytes.Count(bytes.Join(up.bodiesCopy(), nil), []byte(`"approval_request_id":"`+approval+`"`))
		}
		sent := followUps()

		defer func() {
			if t.Failed() {
				var state string
				var holder, turn, lapsed, active *string
				_ = pool.QueryRow(ctx, `SELECT k.state, k.holder, k.turn_id, (k.lease_expires_at < clock_timestamp())::text, c.active_turn
					FROM idempotency_keys k LEFT JOIN conversations c ON c.id = k.conversation_id WHERE k.key = $1`, key).Scan(&state, &holder, &turn, &lapsed, &active)
				t.Logf("key %s: %s holder %v turn %v lapsed %v; conversation's turn %v", key, state, orNull(holder), orNull(turn), orNull(lapsed), orNull(active))
			}
		}()
		replayed, events := retryKeyed(t, tg.base+"/api/responses/approval-response", key, body, killed, limit)
		if !replayed {
			t.Errorf("the repeat of a request whose turn ran was not answered from what was stored: %v", events)
		}
		if len(events) == 0 || events[len(events)-1].name != "error" || !strings.Contains(events[len(events)-1].data, "interrupted") {
			t.Errorf("the replayed stream %v; want the turn as its takeover closed it (error interrupted)", events)
		}
		if n := alertsFor(demo, city); n != 1 {
			t.Errorf("send_alert ran %d times for %s, want 1", n, city)
		}
		if n := followUps(); n != sent {
			t.Errorf("the repeat sent the approval to the model again (%d requests carried it, then %d)", sent, n)
		}
	}
}

// openSSEKeyed is openSSE with an Idempotency-Key.
func openSSEKeyed(t *testing.T, url, key, body string) *liveSSE {
	t.Helper()
	return openSSEWith(t, url, body, map[string]string{"Idempotency-Key": key})
}
