package responses_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/responses"
)

// TestRequestsCarryTheTurnInTheirMetadata: every responses.create names
// Toolgate's turn and conversation in metadata, and the emulator, like the
// API, stores it: GET /v1/responses/{id} returns it.
func TestRequestsCarryTheTurnInTheirMetadata(t *testing.T) {
	t.Parallel()
	d := startDemo(t)
	base := startEmulator(t)
	c := newClient(base, responses.LayoutDefault, model)
	s := stream(t, c, conversation.UpstreamRequest{ConversationID: "conv_1", TurnID: "turn_1", UserText: "hello",
		Tools: d.groups([]string{"get_forecast"}, nil)})
	s.mustComplete(t)

	res, err := http.Get(base + "responses/" + s.ResponseID())
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var got struct {
		ID       string            `json:"id"`
		Metadata map[string]string `json:"metadata"`
	}
	if err := json.NewDecoder(res.Body).Decode(&got); err != nil || res.StatusCode != 200 {
		t.Fatalf("GET the response: %d %v", res.StatusCode, err)
	}
	want := map[string]string{responses.MetadataTurn: "turn_1", responses.MetadataConversation: "conv_1"}
	if diff := cmp.Diff(want, got.Metadata); diff != "" || got.ID != s.ResponseID() {
		t.Errorf("stored response %s metadata (-want +got):\n%s", got.ID, diff)
	}
}

// TestRetrieveReadsAStoredFollowUpBack: a follow-up read back has its
// status and its output converted as the stream's items are: the approved
// call with its approval request and output, the answer's text, server
// labels mapped back from the split layout's.
func TestRetrieveReadsAStoredFollowUpBack(t *testing.T) {
	t.Parallel()
	d := startDemo(t)
	c := newClient(startEmulator(t), responses.LayoutSplit, model)
	groups := d.groups([]string{"get_forecast"}, []string{"delete_forecast"})
	prev, apr := approvalTurn(t, c, groups, "weather__always")
	s := stream(t, c, conversation.UpstreamRequest{PreviousResponseID: prev, Answers: []conversation.Answer{answer(apr, true, "")}, Tools: groups})
	s.mustComplete(t)

	got, err := c.Retrieve(t.Context(), s.ResponseID())
	if err != nil {
		t.Fatalf("Retrieve: %v", err)
	}
	if got.ID != s.ResponseID() || got.Status != "completed" || !got.Finished() {
		t.Errorf("read back %s %q, want %s completed", got.ID, got.Status, s.ResponseID())
	}
	var want []conversation.UpstreamItem
	for _, it := range s.Items() {
		want = append(want, *it)
	}
	if diff := cmp.Diff(want, got.Output); diff != "" {
		t.Errorf("output read back differs from the stream's items (-streamed +read back):\n%s", diff)
	}
	if len(got.Output) == 0 || got.Output[0].Type != "mcp_call" || got.Output[0].ApprovalID != apr.ID || got.Output[0].ServerLabel != "weather" {
		t.Errorf("output %+v, want the approved call first, on server weather", got.Output)
	}
}

// TestRetrieveUnknownResponse: a response the provider does not have is a
// 404 UpstreamError.
func TestRetrieveUnknownResponse(t *testing.T) {
	t.Parallel()
	c := newClient(startEmulator(t), responses.LayoutDefault, model)
	_, err := c.Retrieve(t.Context(), "resp_nope")
	var ue *conversation.UpstreamError
	if !errors.As(err, &ue) || ue.Status != 404 || !strings.Contains(ue.Message, "resp_nope") {
		t.Errorf("Retrieve(unknown) = %v, want a 404 UpstreamError naming it", err)
	}
}
