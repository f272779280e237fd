package emulator_test

import (
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/emulator"
)

// The four-turn vercel approval session (vercel-ai_openai-mcp-tool-approval.1–4)
// was made by @ai-sdk/openai, which sends no previous_response_id: every
// turn re-sends the whole conversation. With store (the default) it sends
// what the model made as item_reference items (reasoning, messages, calls;
// tool lists are left out) and each approval answer given so far as an
// item_reference to the mcp_approval_request plus the mcp_approval_response
// (convert-to-openai-responses-input.ts in vercel/ai). Its turn 4 therefore
// re-sends the turn-1 denial together with the new approval, and the
// recorded answer (.4) is one call and a message about that call only.

// vercelUser is a user message as @ai-sdk/openai sends it: no "type".
func vercelUser(text string) map[string]any {
	return map[string]any{"role": "user", "content": []any{map[string]any{"type": "input_text", "text": text}}}
}

func itemRef(id any) map[string]any { return map[string]any{"type": "item_reference", "id": id} }

// vercelAssistant is what @ai-sdk/openai re-sends of a response's output:
// a reference to each item but the tool lists and the approval requests
// (those go with their answer, in the tool message).
func vercelAssistant(out []any) []any {
	var refs []any
	for _, it := range out {
		m := it.(map[string]any)
		switch m["type"] {
		case "mcp_list_tools", "mcp_approval_request":
		default:
			refs = append(refs, itemRef(m["id"]))
		}
	}
	return refs
}

// vercelAnswer is the tool message of an approval answer.
func vercelAnswer(req map[string]any, approve bool) []any {
	return []any{itemRef(req["id"]), map[string]any{"type": "mcp_approval_response", "approval_request_id": req["id"], "approve": approve}}
}

func recordedKinds(t *testing.T, name string) string {
	t.Helper()
	return strings.Join(rsKinds(fxOutput(t, fxFixture(t, name+".json"))), ",")
}

// TestResend_VercelSessionAsItsClientSentIt replays the recorded session's
// four requests, shaped as @ai-sdk/openai sent them, against the emulator
// and an MCP server whose calls are counted: each turn's output has the
// recorded turn's item kinds; turn 4 runs the approved tool once and does
// not act on the re-sent turn-1 denial; a fifth turn that re-sends the
// approval with everything else runs nothing again.
func TestResend_VercelSessionAsItsClientSentIt(t *testing.T) {
	t.Parallel()
	e, m := startEmulator(t, emulator.Config{}), startTestMCP(t, "")
	turn := func(n int, input []any) []any {
		t.Helper()
		got := post(t, e, fxVercelRequest(m.URL, "always", false, input...))
		if got.Status != 200 {
			t.Fatalf("turn %d: status %d: %s", n, got.Status, got.Body)
		}
		return fxOutput(t, got.Body)
	}
	kinds := func(out []any) string { return strings.Join(rsKinds(out), ",") }
	const shorten = `echo {"text": "https://ai-sdk.dev/"}`

	conv := []any{vercelUser(shorten)}
	out1 := turn(1, conv)
	if got, want := kinds(out1), recordedKinds(t, fxApproval1); got != want {
		t.Fatalf("turn 1 output %s, recorded %s", got, want)
	}
	req1 := fxFind(t, out1, "mcp_approval_request")

	conv = append(append(conv, vercelAssistant(out1)...), vercelAnswer(req1, false)...)
	out2 := turn(2, conv)
	if got, want := kinds(out2), recordedKinds(t, fxApproval2); got != want {
		t.Fatalf("turn 2 output %s, recorded %s", got, want)
	}
	if !strings.Contains(rsText(out2), "denied") {
		t.Errorf("turn 2 does not report the denial: %s", rsText(out2))
	}

	conv = append(append(conv, vercelAssistant(out2)...), vercelUser("Try again: "+shorten))
	out3 := turn(3, conv)
	if got, want := kinds(out3), recordedKinds(t, fxApproval3); got != want {
		t.Fatalf("turn 3 output %s, recorded %s: the re-sent denial must not be answered again", got, want)
	}
	req2 := fxFind(t, out3, "mcp_approval_request")

	// Turn 4: the turn-1 denial is re-sent with the new approval.
	conv = append(append(conv, vercelAssistant(out3)...), vercelAnswer(req2, true)...)
	out4 := turn(4, conv)
	if got, want := kinds(out4), recordedKinds(t, fxApproval4); got != want {
		t.Fatalf("turn 4 output %s, recorded %s", got, want)
	}
	if call := fxFind(t, out4, "mcp_call"); call["approval_request_id"] != req2["id"] {
		t.Errorf("turn 4 call answers %v, want the new request %v", call["approval_request_id"], req2["id"])
	}
	if txt := rsText(out4); strings.Contains(txt, "denied") {
		t.Errorf("turn 4 acts on the re-sent turn-1 denial again: %s", txt)
	}
	if n := m.Calls("echo"); n != 1 {
		t.Fatalf("echo ran %d times after turn 4, want 1", n)
	}

	// Turn 5: the conversation goes on; the approval is re-sent again.
	conv = append(append(conv, vercelAssistant(out4)...), vercelUser("thanks"))
	out5 := turn(5, conv)
	if got := kinds(out5); got != "mcp_list_tools,reasoning,message" {
		t.Errorf("turn 5 output %s, want list, reasoning and a message (no call)", got)
	}
	if txt := rsText(out5); strings.Contains(txt, "denied") {
		t.Errorf("turn 5 reports the turn-1 denial again: %s", txt)
	}
	if n := m.Calls("echo"); n != 1 {
		t.Errorf("echo ran %d times after turn 5, want 1: an approved tool is not run again on a re-send", n)
	}
}
