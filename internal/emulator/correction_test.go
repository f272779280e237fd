package emulator_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/emulator"
)

// A denial whose reason gives other arguments ("Use these arguments
// instead: {...}") is followed like an instruction: the follow-up asks for
// the same tool again with them, as any response that calls a tool does,
// and the approved retry runs with the corrected arguments.
func TestClient_DenialWithCorrectionAsksAgainWithTheCorrectedArguments(t *testing.T) {
	t.Parallel()
	m := startTestMCP(t, "")
	e := startEmulator(t, emulator.Config{})

	first, reqs, tools := clApprovalPending(t, e, m, `echo {"text": "Paris"}`, 1)
	second := clNew(t, e, clFollowUp(first.ID, tools,
		clDeny(reqs[0].ID, "Use these arguments instead: {\"text\":\"Berlin\"}\nBerlin is where I am.")))
	o := clItems(t, second)
	if !slices.Equal(o.Kinds, []string{"mcp_approval_request"}) {
		t.Fatalf("output = %v, want only a new approval request", o.Kinds)
	}
	again := o.Approvals[0]
	if again.Name != "echo" || again.ServerLabel != "test" || again.Arguments != `{"text":"Berlin"}` || again.ID == reqs[0].ID {
		t.Errorf("new request = %s", again.RawJSON())
	}
	third := clNew(t, e, clFollowUp(second.ID, tools, clApprove(again.ID)))
	if o := clItems(t, third); len(o.Calls) != 1 || o.Calls[0].Output != "echo: Berlin" {
		t.Fatalf("after approving: %v", o.Kinds)
	}
	if m.Calls("echo") != 1 {
		t.Errorf("echo ran %d times, want once (the corrected call)", m.Calls("echo"))
	}
}

// Arguments the person could not see are named, not given: the model keeps
// the values it sent for them.
func TestClient_DenialWithCorrectionKeepsTheNamedValues(t *testing.T) {
	t.Parallel()
	m := startTestMCP(t, "")
	e := startEmulator(t, emulator.Config{})

	first, reqs, tools := clApprovalPending(t, e, m, `add {"a": 1, "b": 2}`, 1)
	second := clNew(t, e, clFollowUp(first.ID, tools, clDeny(reqs[0].ID,
		"Use these arguments instead: {\"a\":40}\nKeep the values you sent for these arguments, which the user could not see: b")))
	o := clItems(t, second)
	if len(o.Approvals) != 1 || o.Approvals[0].Arguments != `{"a":40,"b":2}` {
		t.Fatalf("output = %v %v", o.Kinds, o.Approvals)
	}
}

// A reason that only mentions other arguments without giving a JSON object
// is an ordinary denial.
func TestClient_DenialWithoutCorrectionObjectIsAnOrdinaryDenial(t *testing.T) {
	t.Parallel()
	m := startTestMCP(t, "")
	e := startEmulator(t, emulator.Config{})

	first, reqs, tools := clApprovalPending(t, e, m, `echo {"text": "x"}`, 1)
	second := clNew(t, e, clFollowUp(first.ID, tools, clDeny(reqs[0].ID, "Use these arguments instead: whatever you like")))
	o := clItems(t, second)
	if !slices.Equal(o.Kinds, []string{"message"}) || !strings.Contains(second.OutputText(), "denied") {
		t.Fatalf("output = %v %q", o.Kinds, second.OutputText())
	}
}
