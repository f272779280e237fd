package http_test

import (
	"iter"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/conversation"
	toolhttp "github.com/toolgate/toolgate/internal/http"
)

// sseEventNames and ssePayloads are what the chat streams send.
var (
	sseEventNames = []string{conversation.EventNameConversation, conversation.EventNameTextDelta, conversation.EventNameItem,
		conversation.EventNameToolStarted, conversation.EventNameApproval, conversation.EventNameDecision, conversation.EventNameCompleted,
		conversation.EventNameFailed, conversation.EventNameError, conversation.EventNameNotice, conversation.EventNameDeleted}
	ssePayloads = []any{conversation.ConversationEvent{}, conversation.TextDeltaEvent{}, conversation.ItemEvent{},
		conversation.ToolStartedEvent{}, conversation.Item{}, conversation.AllowedBy{}, conversation.Approval{}, conversation.AskReason{},
		conversation.Corrects{}, conversation.ArgChange{},
		conversation.DecisionEvent{}, conversation.PolicyChange{}, conversation.CompletedEvent{},
		conversation.FailedEvent{}, conversation.TurnError{}, conversation.NoticeEvent{}, conversation.Notice{},
		conversation.DeletedEvent{}, conversation.GatewayCall{}}
)

// jsonFields yields each JSON field name of each value's struct type, with the type's name.
func jsonFields(values []any) iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		for _, v := range values {
			typ := reflect.TypeOf(v)
			for i := range typ.NumField() {
				name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
				if name == "" || name == "-" {
					continue
				}
				if !yield(typ.Name(), name) {
					return
				}
			}
		}
	}
}

// TestSSEDoc_DescribesEveryEventAndField keeps docs/sse-events.md, the
// contract clients are written against, in step with the payloads the
// server sends: every event name has a section and every JSON field of
// every payload is named in the document.
func TestSSEDoc_DescribesEveryEventAndField(t *testing.T) {
	raw, err := os.ReadFile("../../docs/sse-events.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	for _, name := range append(sseEventNames, toolhttp.EventSettingsChanged, toolhttp.EventApprovalsChanged) {
		if !strings.Contains(doc, "#### `"+name+"`") {
			t.Errorf("docs/sse-events.md has no section for event %s", name)
		}
	}
	for typ, name := range jsonFields(append(ssePayloads, toolhttp.SettingsChangedEvent{}, toolhttp.ApprovalsChangedEvent{})) {
		if !strings.Contains(doc, "`"+name+"`") && !strings.Contains(doc, `"`+name+`"`) {
			t.Errorf("docs/sse-events.md does not mention field %s of %s", name, typ)
		}
	}
}

// TestSSEDoc_WebAppUnionMirrorsEveryEventAndField keeps the web app's typed
// event union (frontend/src/api/events.ts; types.ts over the generated
// schema.d.ts) in step with the same
// payloads: every event is a member of the union and every JSON field is a
// property of some type there.
func TestSSEDoc_WebAppUnionMirrorsEveryEventAndField(t *testing.T) {
	var ts strings.Builder
	for _, f := range []string{"../../frontend/src/api/events.ts", "../../frontend/src/api/types.ts", "../../frontend/src/api/schema.d.ts"} {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		ts.Write(raw)
	}
	src := ts.String()
	for _, name := range sseEventNames {
		if !strings.Contains(src, `{ event: "`+name+`";`) {
			t.Errorf("frontend/src/api/events.ts: ChatEvent has no member for event %s", name)
		}
	}
	for typ, name := range jsonFields(append(ssePayloads, conversation.Conversation{}, conversation.Transcript{})) {
		if !strings.Contains(src, " "+name+": ") && !strings.Contains(src, " "+name+"?: ") {
			t.Errorf("the web app's types have no property %s (of %s)", name, typ)
		}
	}
}

// TestSSEDoc_ErrorTableNamesTheTerminalCodes keeps the `error` event's
// table of codes in docs/sse-events.md complete for the codes clients act
// on by name: a code added to the engine is added here and to the table.
func TestSSEDoc_ErrorTableNamesTheTerminalCodes(t *testing.T) {
	raw, err := os.ReadFile("../../docs/sse-events.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(raw), "| code | retryable | when | what helps |")
	if !ok {
		t.Fatal("docs/sse-events.md has no table of error codes")
	}
	table, _, _ = strings.Cut(table, "\n\n")
	for _, code := range []string{"upstream_unreachable", "upstream_rate_limited", "upstream_quota_exceeded",
		"upstream_first_byte_timeout", "upstream_idle_timeout", "upstream_unavailable", "mcp_server_failed",
		"request_too_large", "upstream_rejected", "upstream_error", "upstream_cut", "cancelled",
		conversation.CodeStoppedByUser, "account_disabled", "server_shutdown", "interrupted", "policy_unavailable",
		conversation.CodeStorageFailed} {
		if !strings.Contains(table, "\n| `"+code+"` | ") {
			t.Errorf("docs/sse-events.md: the error codes table has no row for %s", code)
		}
	}
}
