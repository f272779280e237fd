package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/testdb"
)

// offlineTurn posts a chat request and returns its events by name, in
// order, with the conversation and the last approval request it named.
func offlineTurn(t *testing.T, url, body string) (events []event, conv, approval string) {
	t.Helper()
	_, events = sse(t, url, body)
	for _, ev := range events {
		switch ev.name {
		case "conversation":
			conv = field(t, ev.data, "conversation_id")
		case "approval.required":
			approval = field(t, ev.data, "approval_request_id")
		}
	}
	if len(events) == 0 || events[len(events)-1].name != "completed" {
		t.Fatalf("turn %s: %v", body, events)
	}
	return events, conv, approval
}

func hasEvent(events []event, name, substr string) bool {
	for _, ev := range events {
		if ev.name == name && strings.Contains(ev.data, substr) {
			return true
		}
	}
	return false
}

// `make run` offline keeps the emulator's stored responses beside the
// secrets key file: a pending approval is answered after a restart and the
// tool runs, with no notice. Without the state file the emulator has
// forgotten the response, as the real provider does after its retention:
// the approval then expires without running, a notice says the turn went on
// from Toolgate's transcript, and the model asks again.
func TestRun_OfflineRestartKeepsPendingApprovals(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"DATABASE_URL": testdb.MissingURL(t), "SECRETS_KEY_FILE": filepath.Join(dir, "secrets.key")}
	state := filepath.Join(dir, "emulator-state.json")
	ask := func(base, conv, city string) (string, string) {
		t.Helper()
		body := fmt.Sprintf(`{"input":"delete_forecast {\"city\": \"%s\"}"}`, city)
		if conv != "" {
			body = fmt.Sprintf(`{"conversation_id":%q,"input":"delete_forecast {\"city\": \"%s\"}"}`, conv, city)
		}
		_, conv, approval := offlineTurn(t, base+"/api/responses", body)
		if approval == "" {
			t.Fatalf("delete_forecast %s did not ask", city)
		}
		return conv, approval
	}
	approve := func(base, conv, approval string) []event {
		t.Helper()
		events, _, _ := offlineTurn(t, base+"/api/responses/approval-response",
			fmt.Sprintf(`{"conversation_id":%q,"approval_request_id":%q,"approve":true}`, conv, approval))
		return events
	}

	base, _, stop := start(t, env)
	conv, approval := ask(base, "", "Oslo")
	stop()
	if _, err := os.Stat(state); err != nil {
		t.Fatalf("no emulator state file beside the secrets key: %v", err)
	}

	base, _, stop = start(t, env)
	events := approve(base, conv, approval)
	if !hasEvent(events, "item.done", "Deleted the forecast for Oslo") || hasEvent(events, "notice", "") {
		t.Fatalf("approving after a restart with the state file: %v; want the tool's output and no notice", events)
	}

	// The provider forgets: the state file is gone when the emulator restarts.
	_, approval = ask(base, conv, "Berlin")
	stop()
	if err := os.Remove(state); err != nil {
		t.Fatal(err)
	}
	base, _, _ = start(t, env)
	events = approve(base, conv, approval)
	if !hasEvent(events, "notice", `"code":"provider_state_lost"`) || !hasEvent(events, "decision.recorded", `"state":"expired"`) {
		t.Errorf("approving after the provider forgot: %v; want the approval expired and a provider_state_lost notice", events)
	}
	if hasEvent(events, "item.done", `"type":"mcp_call"`) {
		t.Errorf("an approval for a forgotten response ran the tool: %v", events)
	}
	if !hasEvent(events, "approval.required", "delete_forecast") {
		t.Errorf("the model did not ask again: %v", events)
	}
}
