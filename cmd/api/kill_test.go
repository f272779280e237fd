package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/demomcp"
	"github.com/toolgate/toolgate/internal/emulator"
	"github.com/toolgate/toolgate/internal/faults"
	"github.com/toolgate/toolgate/internal/testdb"
)

// leaseTTL is TURN_LEASE_TTL for the killed and the restarted binary.
const leaseTTL = 2 * time.Second

// TestKill_FollowUpAtEachStep SIGKILLs the real binary at each step of an
// approval's follow-up and restarts it: the tool runs at most once, the
// transcript says what happened (approved with its call where the call is
// known to have run, outcome_unknown "may have run" where it cannot be
// known, an interrupted error item), and the conversation stays usable: a
// new message completes and never sends the approval again.
func TestKill_FollowUpAtEachStep(t *testing.T) {
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
	t.Cleanup(up.releaseAll) // before the servers close: nothing stays held

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
	tg.stop(t)

	for _, step := range []struct {
		name string
		// crashAt is the faultinject point at which the binary kills
		// itself; hold stops the follow-up's answer before the event it
		// names (the provider goes on once the binary is dead); wait is
		// the event the binary must have relayed before it is killed.
		crashAt string
		hold    func(passed []string, next string) bool
		wait    func(ev event) bool
		// ran: the tool ran (once); known: Toolgate can know it did.
		ran, known bool
	}{
		{name: "a", crashAt: faults.FollowUpBeforeSend},
		{name: "b", ran: true, hold: before("response.created")},
		{name: "c", ran: true, known: true, hold: before("response.mcp_call_arguments.done"),
			wait: func(ev event) bool { return ev.name == "tool.started" }},
		{name: "d", ran: true, known: true, hold: afterCallOutput,
			wait: func(ev event) bool { return ev.name == "item.done" && strings.Contains(ev.data, `"type":"mcp_call"`) }},
	} {
		t.Run(step.name, func(t *testing.T) {
			city := "Kill-" + step.name
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
			tr := takenOver(t, tg.base, conv, killed)
			t.Logf("step %s: taken over %s after the kill", step.name, time.Since(killed).Round(100*time.Millisecond))

			alerts := func() int { return alertsFor(demo, city) }
			want := 0
			if step.ran {
				want = 1
			}
			if n := alerts(); n != want {
				t.Errorf("send_alert ran %d times for %s, want %d", n, city, want)
			}
			tr.check(t, approval, city, step.known)

			// Usable: a new message completes, and the approval is never
			// sent as one again (a denial, where an answer is still owed).
			_, events = sse(t, tg.base+"/api/responses", fmt.Sprintf(`{"conversation_id":%q,"input":"thanks"}`, conv))
			if events[len(events)-1].name != "completed" {
				t.Errorf("the next message did not complete: %v", events)
			}
			body := up.last()
			if bytes.Contains(body, []byte(`"approve":true`)) {
				t.Errorf("the next message sent an approval again: %s", body)
			}
			switch a := tr.approval(approval); {
			case step.known && !bytes.Contains(body, []byte(`"previous_response_id":"`+a.AnsweredIn+`"`)):
				t.Errorf("the next message does not go on from the follow-up read back (%s): %s", a.AnsweredIn, body)
			case !step.known && !bytes.Contains(body, []byte(approval)):
				t.Errorf("the next message does not answer %s (a denial): %s", approval, body)
			}
			if n := alerts(); n != want {
				t.Errorf("after the next message send_alert ran %d times for %s, want %d", n, city, want)
			}
			t.Logf("step %s: send_alert ran %d time(s); approval %s; next message completed", step.name, alerts(), tr.approval(approval).State)
		})
	}
}

// before holds the answer before the event named.
func before(name string) func([]string, string) bool {
	return func(_ []string, next string) bool { return next == name }
}

// afterCallOutput holds the answer right after the mcp_call's
// output_item.done (it follows response.mcp_call.completed).
func afterCallOutput(passed []string, _ string) bool {
	return len(passed) > 0 && passed[len(passed)-1] == "response.output_item.done" &&
		slices.Contains(passed, "response.mcp_call.completed")
}

// transcript is GET /api/conversations/{id}, the parts this test reads.
type transcript struct {
	Conversation struct {
		Streaming      bool    `json:"streaming"`
		LastResponseID *string `json:"last_response_id"`
	} `json:"conversation"`
	Items []struct {
		Type              string  `json:"type"`
		ID                string  `json:"id"`
		ResponseID        string  `json:"response_id"`
		Text              string  `json:"text"`
		Partial           bool    `json:"partial"`
		Output            *string `json:"output"`
		ApprovalRequestID string  `json:"approval_request_id"`
		Interrupted       bool    `json:"interrupted"`
		Approval          *struct {
			State      string  `json:"state"`
			Reason     *string `json:"reason"`
			AnsweredIn *string `json:"answered_in"`
		} `json:"approval"`
		TurnError *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"turn_error"`
	} `json:"items"`
}

func getTranscript(t *testing.T, base, conv string) transcript {
	t.Helper()
	st, body := do(t, "GET", base+"/api/conversations/"+conv, "")
	var tr transcript
	if err := json.Unmarshal([]byte(body), &tr); st != 200 || err != nil {
		t.Fatalf("GET the conversation: %d %v %s", st, err, body)
	}
	return tr
}

// shownApproval is an approval request's state as the transcript shows it.
type shownApproval struct{ State, Reason, AnsweredIn string }

func (tr transcript) approval(id string) shownApproval {
	for _, it := range tr.Items {
		if it.Type == "mcp_approval_request" && it.ID == id && it.Approval != nil {
			a := shownApproval{State: it.Approval.State}
			if it.Approval.Reason != nil {
				a.Reason = *it.Approval.Reason
			}
			if it.Approval.AnsweredIn != nil {
				a.AnsweredIn = *it.Approval.AnsweredIn
			}
			return a
		}
	}
	return shownApproval{}
}

// check wants the transcript to say what happened: the approval approved
// with its call (known), or outcome_unknown saying it may have run; no
// call shown as interrupted when it is known; an interrupted error item.
func (tr transcript) check(t *testing.T, approval, city string, known bool) {
	t.Helper()
	a := tr.approval(approval)
	var calls []string
	interrupted := false
	for _, it := range tr.Items {
		switch {
		case it.Type == "mcp_call" && it.ApprovalRequestID == approval:
			out := "<none>"
			if it.Output != nil {
				out = *it.Output
			}
			calls = append(calls, out)
			if it.Interrupted && known {
				t.Errorf("the call is shown as interrupted although it is known to have run: %+v", it)
			}
		case it.Type == "error" && it.TurnError != nil && it.TurnError.Code == "interrupted":
			interrupted = true
		}
	}
	if !interrupted {
		t.Error("no error item interrupted in the transcript")
	}
	switch {
	case known:
		if a.State != "approved" || len(calls) != 1 || !strings.Contains(calls[0], city) {
			t.Errorf("approval %s with calls %q, want approved with the one call that ran for %s", a.State, calls, city)
		}
		// The follow-up completed upstream: read back, its answer is kept
		// and the conversation goes on from it.
		answered := a.AnsweredIn
		if last := tr.Conversation.LastResponseID; last == nil || *last != answered {
			t.Errorf("last response %s, want the follow-up read back (%s)", orNull(last), answered)
		}
		answers := 0
		for _, it := range tr.Items {
			if it.Type == "message" && it.ResponseID == answered && !it.Partial && strings.Contains(it.Text, city) {
				answers++
			}
		}
		if answers != 1 {
			t.Errorf("%d whole answers of the follow-up %s in the transcript, want 1", answers, answered)
		}
	default:
		if a.State != "outcome_unknown" || !strings.Contains(a.Reason, "may have run") {
			t.Errorf("approval %s (%q), want outcome_unknown saying it may have run", a.State, a.Reason)
		}
		if len(calls) != 0 {
			t.Errorf("calls %q in the transcript, want none: Toolgate cannot know one ran", calls)
		}
	}
}

func orNull(s *string) string {
	if s == nil {
		return "null"
	}
	return *s
}

// takenOver waits until the conversation no longer streams after a kill:
// a lease, the next sweep (at most 3/4 of a lease later), a bounded
// read-back (3s), and a margin for a busy machine.
func takenOver(t *testing.T, base, conv string, killed time.Time) transcript {
	t.Helper()
	tr := getTranscript(t, base, conv)
	for ; tr.Conversation.Streaming; tr = getTranscript(t, base, conv) {
		if time.Since(killed) > leaseTTL+leaseTTL*3/4+3*time.Second+5*time.Second {
			t.Fatalf("the conversation still streams %s after the kill", time.Since(killed))
		}
		time.Sleep(100 * time.Millisecond)
	}
	return tr
}

// alertsFor counts the alerts the demo server sent for city.
func alertsFor(demo *demomcp.Demo, city string) int {
	n := 0
	for _, a := range demo.State().Alerts {
		if a.City == city {
			n++
		}
	}
	return n
}
