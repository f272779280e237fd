package emulator_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/emulator"
)

// Clients that re-send the whole conversation instead of using
// previous_response_id (@ai-sdk/openai, the vercel approval recordings)
// send every earlier approval answer again. The real API does not act on
// them twice: vercel-ai_openai-mcp-tool-approval.4 re-sends the turn-1
// denial and has only the new call and an answer about it.

// rsTurn posts input as a stateless client does and returns the output.
func rsTurn(t *testing.T, e *emu, url string, store bool, input ...any) []any {
	t.Helper()
	body := map[string]any{"model": "gpt-4.1", "store": store, "input": input,
		"tools": []any{mcpEntry("weather", url, "always")}}
	got := post(t, e, body)
	if got.Status != 200 {
		t.Fatalf("status %d: %s", got.Status, got.Body)
	}
	return fxOutput(t, got.Body)
}

func rsKinds(out []any) []string {
	var k []string
	for _, it := range out {
		k = append(k, it.(map[string]any)["type"].(string))
	}
	return k
}

func rsText(out []any) string {
	var b strings.Builder
	for _, it := range out {
		if m := it.(map[string]any); m["type"] == "message" {
			raw, _ := json.Marshal(m["content"])
			b.Write(raw)
		}
	}
	return b.String()
}

// TestResend_OldAnswersAreNotAppliedAgain replays the four-turn shape of the
// vercel recordings against the demo MCP server: ask, deny, ask again,
// approve; then the conversation goes on with every answer re-sent. The
// approved tool runs once, and the old denial is not reported again.
func TestResend_OldAnswersAreNotAppliedAgain(t *testing.T) {
	t.Parallel()
	for _, store := range []bool{true, false} {
		name := map[bool]string{true: "stored", false: "store false"}[store]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d, e := startDemo(t), startEmulator(t, emulator.Config{})
			calls := func() int { return d.State(t).Calls["delete_forecast"] }

			u1 := fxUserMessage(`delete_forecast {"city": "Oslo"}`)
			out1 := rsTurn(t, e, d.URL, store, u1)
			req1 := fxFind(t, out1, "mcp_approval_request")

			// Turn 2: the denial.
			deny1 := map[string]any{"type": "mcp_approval_response", "approval_request_id": req1["id"], "approve": false, "reason": "not today"}
			out2 := rsTurn(t, e, d.URL, store, u1, req1, deny1)
			if !strings.Contains(rsText(out2), "not today") {
				t.Fatalf("turn 2 %v does not report the denial", rsKinds(out2))
			}
			msg2 := fxFind(t, out2, "message")

			// Turn 3: try again; the denial is re-sent and not reported again.
			u2 := fxUserMessage(`Try again: delete_forecast {"city": "Oslo"}`)
			out3 := rsTurn(t, e, d.URL, store, u1, req1, deny1, msg2, u2)
			if k := rsKinds(out3); strings.Join(k, ",") != "mcp_list_tools,mcp_approval_request" {
				t.Fatalf("turn 3 output %v, want a new approval request only", k)
			}
			req2 := fxFind(t, out3, "mcp_approval_request")

			// Turn 4: the approval, with the old denial re-sent (recording .4).
			approve2 := map[string]any{"type": "mcp_approval_response", "approval_request_id": req2["id"], "approve": true}
			out4 := rsTurn(t, e, d.URL, store, u1, req1, deny1, msg2, u2, req2, approve2)
			if k := rsKinds(out4); strings.Join(k, ",") != "mcp_list_tools,mcp_call,message" {
				t.Fatalf("turn 4 output %v, want list, call, message", k)
			}
			if txt := rsText(out4); strings.Contains(txt, "not today") || strings.Contains(txt, "denied") {
				t.Errorf("turn 4 reports the turn-2 denial again: %s", txt)
			}
			if n := calls(); n != 1 {
				t.Fatalf("delete_forecast ran %d times after the approval, want 1", n)
			}

			// Turn 5: the conversation goes on with the answer of turn 4 in
			// it: the approval is not applied again.
			msg4 := fxFind(t, out4, "message")
			u3 := fxUserMessage("thanks")
			out5 := rsTurn(t, e, d.URL, store, u1, req1, deny1, msg2, u2, req2, approve2, msg4, u3)
			if k := rsKinds(out5); strings.Join(k, ",") != "mcp_list_tools,message" {
				t.Errorf("turn 5 output %v, want list and message (no call)", k)
			}
			if n := calls(); n != 1 {
				t.Errorf("delete_forecast ran %d times after turn 5, want 1", n)
			}

			if store {
				// A client that re-sends its own messages and the answers but
				// not the model's: the emulator knows from its stored
				// responses that both answers were taken.
				out6 := rsTurn(t, e, d.URL, store, u1, req1, deny1, u2, req2, approve2, u3)
				if k := rsKinds(out6); strings.Join(k, ",") != "mcp_list_tools,message" {
					t.Errorf("turn 6 output %v, want list and message (no call)", k)
				}
				if txt := rsText(out6); strings.Contains(txt, "not today") {
					t.Errorf("turn 6 reports the turn-2 denial again: %s", txt)
				}
				if n := calls(); n != 1 {
					t.Errorf("delete_forecast ran %d times after turn 6, want 1", n)
				}
			}
		})
	}
}

// TestTwin_ApprovalApproveAfterResentDenial is the four-turn vercel session
// as its client sent it: turn 4 re-sends the turn-1 denial with the new
// approval. Its shape is recording .4's, its answer is about the call only
// (as the recorded one is), and the tool ran once.
func TestTwin_ApprovalApproveAfterResentDenial(t *testing.T) {
	t.Parallel()
	for _, rec := range []string{fxApproval4 + ".chunks.jsonl", fxApproval4 + ".json"} {
		t.Run(rec, func(t *testing.T) {
			t.Parallel()
			e, m := startEmulator(t, emulator.Config{}), startTestMCP(t, "")
			conv, req1 := fxApprovalRequested(t, e, m.URL)
			conv = append(conv, fxApprovalResponse(req1, false))
			denied := post(t, e, fxVercelRequest(m.URL, "always", false, conv...))
			conv = append(conv, fxFind(t, fxOutput(t, denied.Body), "message"),
				fxUserMessage(`Try again: echo {"text": "https://ai-sdk.dev/"}`))
			again := post(t, e, fxVercelRequest(m.URL, "always", false, conv...))
			req2 := fxFind(t, fxOutput(t, again.Body), "mcp_approval_request")
			conv = append(conv, req2, fxApprovalResponse(req2, true))

			got := post(t, e, fxVercelRequest(m.URL, "always", fxIsStream(rec), conv...))
			fxTwin(t, rec, got, fxOpts{})
			if strings.Contains(string(got.Body), "denied") {
				t.Error("the answer reports the re-sent turn-1 denial again; the recorded answer is about the call only")
			}
			if m.Calls("echo") != 1 {
				t.Errorf("echo ran %d times, want 1", m.Calls("echo"))
			}
		})
	}
}
