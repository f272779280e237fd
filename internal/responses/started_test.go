package responses_test

import (
	"encoding/json"
	"testing"

	"github.com/openai/openai-go/v3/responses"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/policy"
	tgresponses "github.com/toolgate/toolgate/internal/responses"
)

// Every recorded call is announced as it begins (output_item.added): one
// started event per mcp_call, before the call's finished item, naming the
// tool, its server and the request it answers, and nothing else begins.
func TestRecordedStreams_CallsAreAnnouncedAsTheyBegin(t *testing.T) {
	for _, w := range recordedStreams {
		t.Run(w.file, func(t *testing.T) {
			t.Parallel()
			api := serveSSE(t, fixtureSSE(t, w.file))
			c := tgresponses.New(tgresponses.Config{BaseURL: api.URL, APIKey: "sk-test", Model: "gpt-5-mini"})
			s := stream(t, c, conversation.UpstreamRequest{UserText: "hello",
				Tools: []policy.ServerTools{{Server: srv(w.label), OfferUnknown: true}}})
			s.mustComplete(t)

			var begun []*conversation.UpstreamItem
			at := map[string]int{}
			for i, ev := range s.Events {
				switch ev.Kind {
				case conversation.EventItemStarted:
					begun = append(begun, ev.Item)
					at[ev.Item.ID] = i
				case conversation.EventItemDone:
					if ev.Item.Type != "mcp_call" {
						continue
					}
					if j, ok := at[ev.Item.ID]; !ok || j > i {
						t.Errorf("call %s finished without having begun (events %s)", ev.Item.ID, s.describe())
					}
				}
			}
			if len(begun) != len(w.calls) {
				t.Fatalf("%d calls began, want %d (events %s)", len(begun), len(w.calls), s.describe())
			}
			for i, want := range w.calls {
				b := begun[i]
				if b.Type != "mcp_call" || b.ID != want.ID || b.Name != want.Name || b.ApprovalID != want.ApprovalID ||
					b.ServerLabel != w.label || b.UpstreamLabel != w.label {
					t.Errorf("began %+v; want mcp_call %s %s on %s answering %q", *b, want.ID, want.Name, w.label, want.ApprovalID)
				}
				// Nothing of what the call sends or returns is known yet.
				if b.Arguments != "" || b.Output != nil || b.CallError != nil {
					t.Errorf("began with arguments %q, output %v, error %s; want none", b.Arguments, b.Output, b.CallError)
				}
			}
		})
	}
}

// A call's start maps its upstream label back to Toolgate's server, as a
// finished item does; other items that begin are not events.
func TestConvert_CallStartMapsItsLabel(t *testing.T) {
	labels := tgresponses.Labels{"crm__never": "crm"}
	conv := func(event string) (conversation.Event, bool) {
		t.Helper()
		var ev responses.ResponseStreamEventUnion
		if err := json.Unmarshal([]byte(event), &ev); err != nil {
			t.Fatal(err)
		}
		return labels.Convert(ev)
	}
	got, ok := conv(`{"type":"response.output_item.added","sequence_number":8,"output_index":2,"item":{"id":"mcp_1","type":"mcp_call",
		"status":"in_progress","server_label":"crm__never","name":"lookup","arguments":"","approval_request_id":"mcpr_9","output":null,"error":null}}`)
	if !ok || got.Kind != conversation.EventItemStarted || got.ItemID != "mcp_1" {
		t.Fatalf("Convert = %+v, %v; want the call's start", got, ok)
	}
	if it := got.Item; it.ServerLabel != "crm" || it.UpstreamLabel != "crm__never" || it.Name != "lookup" || it.ApprovalID != "mcpr_9" {
		t.Errorf("started item %+v; want lookup on crm (upstream crm__never) answering mcpr_9", *it)
	}
	for _, other := range []string{
		`{"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":"mcpl_1","type":"mcp_list_tools","server_label":"crm__never","tools":[]}}`,
		`{"type":"response.output_item.added","sequence_number":3,"output_index":1,"item":{"id":"msg_1","type":"message","status":"in_progress","content":[],"role":"assistant"}}`,
		`{"type":"response.output_item.added","sequence_number":4,"output_index":1,"item":{"id":"mcpr_1","type":"mcp_approval_request","server_label":"crm__never","name":"x","arguments":"{}"}}`,
		`{"type":"response.mcp_call.in_progress","sequence_number":9,"output_index":2,"item_id":"mcp_1"}`,
	} {
		if got, ok := conv(other); ok {
			t.Errorf("Convert(%s) = %+v; want it skipped", other, got)
		}
	}
}
