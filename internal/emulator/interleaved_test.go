package emulator_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/responses"

	"github.com/toolgate/toolgate/internal/emulator"
)

// TestClient_AnswersInterleavedOrGroupedAreAllApplied sends two answers to
// one response's two approval requests the way a client that re-sends the
// whole conversation does (no previous_response_id), through openai-go:
// interleaved, each request with its answer (mcpr1, approve, mcpr2, deny;
// the order @ai-sdk/openai uses), and grouped (mcpr1, mcpr2, approve,
// deny). Both orders must run the approved tool once, run the denied one
// never, and quote the output and the denial: the interleaved order used to
// drop the first answer (the second request after it was taken for the
// model having gone on), so nothing ran.
func TestClient_AnswersInterleavedOrGroupedAreAllApplied(t *testing.T) {
	t.Parallel()
	const ask = `echo {"text": "one"} and then add {"a": 1, "b": 2}`
	for _, order := range []string{"interleaved", "grouped"} {
		t.Run(order, func(t *testing.T) {
			t.Parallel()
			m := startTestMCP(t, "")
			e := startEmulator(t, emulator.Config{})
			_, reqs, tools := clApprovalPending(t, e, m, ask, 2)
			echoReq, addReq := reqs[0], reqs[1]
			if echoReq.Name != "echo" || addReq.Name != "add" {
				t.Fatalf("approval requests for %s and %s, want echo and add", echoReq.Name, addReq.Name)
			}
			user := responses.ResponseInputItemParamOfMessage(ask, responses.EasyInputMessageRoleUser)
			ref := responses.ResponseInputItemParamOfItemReference
			approve, deny := clApprove(echoReq.ID), clDeny(addReq.ID, "no maths today")
			input := []responses.ResponseInputItemUnionParam{user}
			if order == "interleaved" {
				input = append(input, ref(echoReq.ID), approve, ref(addReq.ID), deny)
			} else {
				input = append(input, ref(echoReq.ID), ref(addReq.ID), approve, deny)
			}
			second := clNew(t, e, responses.ResponseNewParams{
				Model: clModel,
				Input: responses.ResponseNewParamsInputUnion{OfInputItemList: input},
				Tools: tools,
			})
			o := clItems(t, second)
			if len(o.Calls) != 1 || o.Calls[0].ApprovalRequestID != echoReq.ID || o.Calls[0].Output != "echo: one" {
				t.Fatalf("output %v, calls %d: want the approved echo run once", o.Kinds, len(o.Calls))
			}
			if m.Calls("echo") != 1 || m.Calls("add") != 0 {
				t.Errorf("echo ran %d times, add %d times; want 1 and 0", m.Calls("echo"), m.Calls("add"))
			}
			if !slices.Contains(o.Kinds, "message") {
				t.Fatalf("output %v has no answer", o.Kinds)
			}
			text := second.OutputText()
			if !strings.Contains(text, "echo: one") || !strings.Contains(text, "no maths today") {
				t.Errorf("answer %q does not quote both the output and the denial", text)
			}
		})
	}
}
