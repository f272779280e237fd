package eventlog

import (
	"testing"

	"github.com/toolgate/toolgate/internal/conversation"
)

// Deltas are joined only within one message of one response, up to
// maxJoined bytes of text.
func TestJoin_OnlyConsecutiveDeltasOfOneMessage(t *testing.T) {
	a := conversation.TextDeltaEvent{ItemID: "msg_1", ResponseID: "resp_1", Delta: "Hel"}
	if j, ok := join(a, conversation.TextDeltaEvent{ItemID: "msg_1", ResponseID: "resp_1", Delta: "lo"}); !ok || j.(conversation.TextDeltaEvent).Delta != "Hello" || j.(conversation.TextDeltaEvent).ItemID != "msg_1" {
		t.Fatalf("join = %+v, %v; want Hello of msg_1", j, ok)
	}
	for _, b := range []any{
		conversation.TextDeltaEvent{ItemID: "msg_2", ResponseID: "resp_1", Delta: "x"},
		conversation.TextDeltaEvent{ItemID: "msg_1", ResponseID: "resp_2", Delta: "x"},
		conversation.TextDeltaEvent{ItemID: "msg_1", ResponseID: "resp_1", Delta: string(make([]byte, maxJoined))},
		conversation.ItemEvent{},
	} {
		if _, ok := join(a, b); ok {
			t.Errorf("joined %+v to %+v; want kept apart", b, a)
		}
	}
}
