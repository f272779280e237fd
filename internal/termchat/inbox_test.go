package termchat

import (
	"encoding/json"
	"testing"
)

// An agent's clientInfo is what the client said of itself: shown
// terminal-safe, never able to drive the terminal. Catches: the client's
// name printed raw.
func TestWaiting_SourceLineEscapesWhatTheClientSaid(t *testing.T) {
	var w waiting
	raw := `{"approval_request_id": "mcpr_1", "tool_name": "delete_forecast", "server_label": "demo", "state": "approved",
		"source": {"kind": "agent", "conversation_id": "conv_a", "title": "", "client": {"name": "evil\u001b[2J", "version": "1.0"}}}`
	if err := json.Unmarshal([]byte(raw), &w); err != nil {
		t.Fatal(err)
	}
	if got, want := w.sourceLine(), `From the agent evil\x1b[2J 1.0 (session conv_a)`; got != want {
		t.Errorf("source line %q, want %q", got, want)
	}
	if got, want := decidedLine(w), "Approved delete_forecast on demo: the agent's call runs now."; got != want {
		t.Errorf("decided line %q, want %q", got, want)
	}
	w.Source.Kind, w.Source.Title, w.State = "chat", "Weather", "denied"
	if got, want := w.sourceLine(), "In the chat “Weather” (conv_a)"; got != want {
		t.Errorf("chat source line %q, want %q", got, want)
	}
	if got, want := decidedLine(w), "Denied delete_forecast on demo."; got != want {
		t.Errorf("decided line %q, want %q", got, want)
	}
}
