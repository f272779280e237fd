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

// TestKill_GatewayFollowUpAtEachStep is TestKill_FollowUpAtEachStep with
// MCP_ROUTE=gateway: the provider calls the MCP server through Toolgate's
// face, so Toolgate knows whether the approved call ran. SIGKILLed at each
// step of the follow-up and restarted, for every step the approved call
// either ran once and is recorded with its result (the approval approved,
// the face's record done), or did not run and is recorded as not run
// (not_run) - never "may have run" - except for the one crash left: in
// the face, after the server answered and before the result was stored,
// where the tool ran once and the approval says outcome_unknown and why.
// The conversation goes on, and the approval is never sent again.
func TestKill_GatewayFollowUpAtEachStep(t *testing.T) {
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

	addr := freeAddr(t)
	env := map[string]string{"DATABASE_URL": testdb.URL(t), "LISTEN_ADDR": addr,
		"OPENAI_BASE_URL": upSrv.URL + "/v1/", "OFFLINE_DEMO": "false", "MCP_ALLOWED_HOSTS": "127.0.0.1",
		"MCP_ROUTE": "gateway", "PUBLIC_URL": "http://" + addr, "MCP_DEFINITION_MAX_AGE": "0",
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
	tg.stop(t)

	const (
		ranRecorded = "ran once, recorded with its result"
		notRun      = "did not run, recorded as not run"
		either      = "either"
		unknown     = "ran once, outcome_unknown (crash between forwarding and storing)"
	)
	for _, step := range []struct {
		name    string
		crashAt string
		hold    func(passed []string, next string) bool
		wait    func(ev event) bool
		want    string
	}{
		// The follow-up never left: nothing can have run.
		{name: "a", crashAt: faults.FollowUpBeforeSend, want: notRun},
		// Killed before the provider answered: the provider then calls a
		// face that is gone (not run), or the restarted one while the turn
		// is still its conversation's (ran, recorded). Both are known.
		{name: "b", hold: before("response.created"), want: either},
		// Killed once the call began, before the provider called the tool
		// (the emulator calls it after the arguments are out): as b.
		{name: "c", hold: before("response.mcp_call_arguments.done"), want: either,
			wait: func(ev event) bool { return ev.name == "tool.started" }},
		// Killed after the call passed the face: recorded with its result.
		{name: "d", hold: afterCallOutput, want: ranRecorded,
			wait: func(ev event) bool { return ev.name == "item.done" && strings.Contains(ev.data, `"type":"mcp_call"`) }},
		// Killed in the face between the server's answer and storing it.
		{name: "e", crashAt: faults.GatewayAfterForward, want: unknown},
	} {
		t.Run(step.name, func(t *testing.T) {
			city := "Gate-" + step.name
			run := map[string]string{}
			for k, v := range env {
				run[k] = v
			}
			if step.crashAt != "" {
				run[faults.EnvCrashAt] = step.crashAt
			}
			tg := startBinary(t, bin, run)
			msg, _ := json.Marshal(map[string]string{"input": `send_alert {"city": "` + city + `", "message": "x"}`})
			_, events := sse(t, tg.base+"/api/responses", string(msg))
			conv, approval := asked(t, events)
			if conv == "" || approval == "" || events[len(events)-1].name != "completed" {
				t.Fatalf("the model did not ask: %v", events)
			}

			held := up.holdNext(step.hold)
			stream := openSSE(t, tg.base+"/api/responses/approval-response",
				fmt.Sprintf(`{"conversation_id":%q,"approval_request_id":%q,"approve":true}`, conv, approval))
			switch {
			case step.crashAt != "":
				tg.waitDead(t, 20*time.Second) // it kills itself
				up.releaseAll()
			default:
				select {
				case <-held:
				case <-time.After(20 * time.Second):
					t.Fatal("the follow-up's answer never reached the held event")
				}
				if step.wait != nil {
					stream.waitFor(t, step.wait)
				}
				tg.kill(t)
				up.releaseAll()
			}
			killed := time.Now()
			stream.close()

			tg = startBinary(t, bin, env)
			defer tg.stop(t)
			takenOver(t, tg.base, conv, killed)
			rec := gatewayRecord(t, tg.base, conv, approval)
			alerts := alertsFor(demo, city)
			t.Logf("step %s: send_alert ran %d time(s); approval %s (%s); face record %q", step.name, alerts, rec.State, rec.Reason, rec.Call)

			got := ""
			switch {
			case alerts == 1 && rec.State == "approved" && rec.Call == "done" && rec.CallOutput:
				got = ranRecorded
			case alerts == 0 && rec.State == "not_run" && rec.Reason != "":
				got = notRun
			case alerts == 1 && rec.State == "outcome_unknown" && rec.Call == "running" && strings.Contains(rec.Reason, "forward"):
				got = unknown
			}
			switch {
			case got == "":
				t.Errorf("send_alert ran %d time(s), approval %s (%q), face record %q: neither ran-and-recorded nor not-run", alerts, rec.State, rec.Reason, rec.Call)
			case step.want == either && got != ranRecorded && got != notRun, step.want != either && got != step.want:
				t.Errorf("step %s: %s, want %s", step.name, got, step.want)
			}

			// The conversation goes on, and the approval is never sent as
			// one again.
			_, events = sse(t, tg.base+"/api/responses", fmt.Sprintf(`{"conversation_id":%q,"input":"thanks"}`, conv))
			if events[len(events)-1].name != "completed" {
				t.Errorf("the next message did not complete: %v", events)
			}
			if body := up.last(); bytes.Contains(body, []byte(`"approve":true`)) {
				t.Errorf("the next message sent an approval again: %s", body)
			}
			if n := alertsFor(demo, city); n != alerts {
				t.Errorf("after the next message send_alert ran %d times for %s, want %d", n, city, alerts)
			}
		})
	}
}

// shownRecord is an approval as the transcript shows it in gateway mode:
// its state and reason, the face's record of its call, and whether the
// transcript holds the call's output.
type shownRecord struct {
	State, Reason, Call string
	CallOutput          bool
}

func gatewayRecord(t *testing.T, base, conv, approvalID string) shownRecord {
	t.Helper()
	st, body := do(t, "GET", base+"/api/conversations/"+conv, "")
	var tr struct {
		Items []struct {
			Type              string  `json:"type"`
			ID                string  `json:"id"`
			ApprovalRequestID string  `json:"approval_request_id"`
			Output            *string `json:"output"`
			Approval          *struct {
				State  string  `json:"state"`
				Reason *string `json:"reason"`
				Call   *struct {
					State string `json:"state"`
				} `json:"call"`
			} `json:"approval"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(body), &tr); st != 200 || err != nil {
		t.Fatalf("GET the conversation: %d %v %s", st, err, body)
	}
	var r shownRecord
	for _, it := range tr.Items {
		switch {
		case it.Type == "mcp_approval_request" && it.ID == approvalID && it.Approval != nil:
			r.State = it.Approval.State
			if it.Approval.Reason != nil {
				r.Reason = *it.Approval.Reason
			}
			if it.Approval.Call != nil {
				r.Call = it.Approval.Call.State
			}
		case it.Type == "mcp_call" && it.ApprovalRequestID == approvalID && it.Output != nil:
			r.CallOutput = true
		}
	}
	return r
}
