package responses

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/toolgate/toolgate/internal/conversation"
)

// The parameters written without the SDK are what openai-go writes for the
// same request, member for member and value for value (JSON compared as
// decoded: the escaping of <, > and & may differ, the text may not): for a
// message, answers with and without reasons, both together, text that
// needs escaping (quotes, control characters, HTML, U+2028, invalid
// UTF-8, emoji), with and without a previous response or metadata. What
// the fast path leaves to the SDK (a transcript replay, no input) says so.
func TestParams_SameAsTheSDK(t *testing.T) {
	c := &Client{model: "gpt-5-mini"}
	texts := []string{"hello", `say "hi" \ now`, "line\nbreak\ttab\x01\x1f", "<b>&amp;</b>", "sep\u2028\u2029", "bad \xff utf-8", "😀 ünïcödé"}
	var reqs []conversation.UpstreamRequest
	for _, text := range texts {
		reqs = append(reqs,
			conversation.UpstreamRequest{UserText: text},
			conversation.UpstreamRequest{ConversationID: "conv_1", TurnID: "turn_1", PreviousResponseID: "resp_" + text, UserText: text},
			conversation.UpstreamRequest{TurnID: "turn_only", Answers: []conversation.Answer{{ApprovalRequestID: "mcpr_1", Approve: true}, {ApprovalRequestID: "mcpr_2", Reason: text}}},
			conversation.UpstreamRequest{ConversationID: "conv_only", PreviousResponseID: "resp_2", UserText: text,
				Answers: []conversation.Answer{{ApprovalRequestID: "mcpr_3", Reason: "superseded: " + text}}})
	}
	for _, req := range reqs {
		fast, ok := c.appendParams(nil, req)
		if !ok {
			t.Fatalf("%+v: left to the SDK; want the fast path", req)
		}
		sdk, err := c.params(req).MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var a, b any
		if err := json.Unmarshal(fast, &a); err != nil {
			t.Fatalf("fast path wrote invalid JSON %s: %v", fast, err)
		}
		if err := json.Unmarshal(sdk, &b); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("fast path:\n%s\nthe SDK:\n%s", fast, sdk)
		}
	}
	for _, req := range []conversation.UpstreamRequest{{}, {History: []conversation.HistoryMessage{{Role: "user", Text: "x"}}, UserText: "y"}} {
		if _, ok := c.appendParams(nil, req); ok {
			t.Errorf("%+v: written without the SDK; want it left to the SDK", req)
		}
	}
	if _, ok := (&Client{}).appendParams(nil, conversation.UpstreamRequest{UserText: "x"}); ok {
		t.Error("no model: written without the SDK; want it left to the SDK")
	}
}

func BenchmarkParams(b *testing.B) {
	c := &Client{model: "gpt-5-mini"}
	req := conversation.UpstreamRequest{ConversationID: "conv_68c1a2b3c4d5", TurnID: "turn_68c1a2b3c4d5", PreviousResponseID: "resp_68c1a2b3c4d5e6f7a8b9c0d1e2f3", UserText: "bench deltas=100"}
	b.Run("sdk", func(b *testing.B) {
		for b.Loop() {
			_, _ = c.params(req).MarshalJSON()
		}
	})
	b.Run("fast", func(b *testing.B) {
		for b.Loop() {
			_, _ = c.appendParams(make([]byte, 0, 512), req)
		}
	})
}
