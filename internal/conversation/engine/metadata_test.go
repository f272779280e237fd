package engine_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Every request names its turn and conversation in metadata: the message,
// the follow-up carrying a decision, and a turn sent again from the
// transcript after the provider lost its state.
func TestRequests_NameTheirTurnInMetadata(t *testing.T) {
	t.Parallel()
	e := newEngine(t, engineOptions{})
	conv, a := e.askToDelete()
	turn, err := e.decide(ana, conv, a.ID, true)
	if err != nil {
		t.Fatal(err)
	}
	e.run(ana, turn)
	e.up.replace(t) // the provider forgets: the next message goes from the transcript
	next := e.message(ana, conv, "and now?")
	e.run(ana, next)

	sent := e.up.sent()
	if len(sent) != 4 {
		t.Fatalf("%d requests, want 4 (message, follow-up, a lost previous response, from the transcript)", len(sent))
	}
	for i, want := range []string{"", turn.ID(), next.ID(), next.ID()} {
		var body struct {
			Metadata map[string]string `json:"metadata"`
		}
		if err := json.Unmarshal(sent[i], &body); err != nil {
			t.Fatal(err)
		}
		if want == "" {
			want = body.Metadata["toolgate_turn"] // the first turn's id is not at hand: it must be there
		}
		if diff := cmp.Diff(map[string]string{"toolgate_turn": want, "toolgate_conversation": conv}, body.Metadata); diff != "" || want == "" {
			t.Errorf("request %d metadata (-want +got):\n%s", i+1, diff)
		}
	}
}
