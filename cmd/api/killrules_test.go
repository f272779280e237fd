package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/demomcp"
	"github.com/toolgate/toolgate/internal/emulator"
	"github.com/toolgate/toolgate/internal/faults"
	"github.com/toolgate/toolgate/internal/testdb"
)

// TestKill_RuleFollowUpAtEachStep is TestKill_FollowUpAtEachStep for a
// decision nobody clicked: an argument rule approves the call, and the
// message's own turn sends the follow-up. The binary is SIGKILLed before
// that follow-up leaves and while the tool runs: the rule's decision is
// never lost nor applied twice (the tool runs at most once, the transcript
// says what is known), and the conversation stays usable.
func TestKill_RuleFollowUpAtEachStep(t *testing.T) {
	bin := buildFaultinjectToolgate(t)
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

	env := map[string]string{
		// Direct mode: the provider calls the MCP server itself (the
		// gateway-mode counterpart is TestKill_GatewayFollowUpAtEachStep).
		"MCP_ROUTE": "direct", "DATABASE_URL": testdb.URL(t), "LISTEN_ADDR": freeAddr(t),
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
	if st, body := do(t, "PUT", tg.base+"/api/mcp/servers/demo/tools/send_alert/rules",
		`{"rules":[{"when":"args.city.startsWith(\"Rule-\")","decision":"approve","reason":"drills"}]}`); st != 200 {
		t.Fatalf("the rule: %d %s", st, body)
	}
	tg.stop(t)

	for _, step := range []struct {
		name       string
		crashAt    string
		hold       func(passed []string, next string) bool
		wait       func(ev event) bool
		ran, known bool
	}{
		{name: "a", crashAt: faults.FollowUpBeforeSend},
		{name: "c", ran: true, known: true, hold: before("response.mcp_call_arguments.done"),
			wait: func(ev event) bool { return ev.name == "tool.started" }},
	} {
		t.Run(step.name, func(t *testing.T) {
			city := "Rule-" + step.name
			run := map[string]string{}
			for k, v := range env {
				run[k] = v
			}
			if step.crashAt != "" {
				run[faults.EnvCrashAt] = step.crashAt
			}
			tg := startBinary(t, bin, run)
			held := up.holdNext(step.hold)
			msg, _ := json.Marshal(map[string]string{"input": `send_alert {"city": "` + city + `", "message": "x"}`})
			stream := openSSE(t, tg.base+"/api/responses", string(msg))
			var conv string
			stream.waitFor(t, func(ev event) bool {
				if ev.name == "conversation" {
					conv = field(t, ev.data, "conversation_id")
				}
				return ev.name == "conversation"
			})
			stream.waitFor(t, func(ev event) bool { return ev.name == "decision.recorded" && strings.Contains(ev.data, `"by":"rule"`) })
			switch {
			case step.crashAt != "":
				tg.waitDead(t, 20*time.Second)
			default:
				select {
				case <-held:
				case <-time.After(20 * time.Second):
					t.Fatal("the rule's follow-up never reached the held event")
				}
				stream.waitFor(t, step.wait)
				tg.kill(t)
				up.releaseAll()
			}
			killed := time.Now()
			stream.close()

			tg = startBinary(t, bin, env)
			defer tg.stop(t)
			tr := takenOver(t, tg.base, conv, killed)
			approval := ""
			for _, it := range tr.Items {
				if it.Type == "mcp_approval_request" {
					approval = it.ID
				}
			}
			if approval == "" {
				t.Fatalf("no approval request in the transcript: %+v", tr.Items)
			}
			alerts := func() int { return alertsFor(demo, city) }
			want := 0
			if step.ran {
				want = 1
			}
			if n := alerts(); n != want {
				t.Errorf("send_alert ran %d times for %s, want %d", n, city, want)
			}
			tr.check(t, approval, city, step.known)

			_, events := sse(t, tg.base+"/api/responses", fmt.Sprintf(`{"conversation_id":%q,"input":"thanks"}`, conv))
			if events[len(events)-1].name != "completed" {
				t.Errorf("the next message did not complete: %v", events)
			}
			if body := up.last(); bytes.Contains(body, []byte(`"approve":true`)) {
				t.Errorf("the next message sent an approval again: %s", body)
			}
			if n := alerts(); n != want {
				t.Errorf("after the next message send_alert ran %d times for %s, want %d", n, city, want)
			}
			t.Logf("step %s: send_alert ran %d time(s); approval %s", step.name, alerts(), tr.approval(approval).State)
		})
	}
}
