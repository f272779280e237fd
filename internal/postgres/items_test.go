package postgres_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/policy"
)

// Rows written before transcript items had a stored layout of their own
// (conversation.Item marshalled as is, without "v") read as they did.
func TestItems_RowsWithoutAVersionRead(t *testing.T) {
	store, pool := newConversations(t)
	r := store.Repo()
	mustCreate(t, r, "conv_1")
	// Exactly as AppendItem stored them, one per line.
	rows := []string{
		`{"seq":0,"type":"user_message","id":"umsg_1","created_at":"0001-01-01T00:00:00Z","text":"Delete contact c_1 please"}`,
		`{"seq":0,"type":"mcp_list_tools","id":"mcpl_1","response_id":"resp_1","created_at":"0001-01-01T00:00:00Z","server_label":"crm","upstream_label":"crm_up","tools":[{"name":"delete_contact","title":"Delete","description":"Deletes a contact","input_schema":{"type":"object","properties":{"zeta":{"type":"string"},"id":{"type":"string"}}},"annotations":{"title":"Delete it","readOnlyHint":false,"destructiveHint":true,"idempotentHint":null,"openWorldHint":null}}]}`,
		`{"seq":0,"type":"mcp_list_tools","id":"mcpl_2","response_id":"resp_1","created_at":"0001-01-01T00:00:00Z","server_label":"docs","upstream_label":"docs","list_error":{"type":"http_error","code":401,"message":"unauthorized"}}`,
		`{"seq":0,"type":"mcp_approval_request","id":"mcpr_1","response_id":"resp_1","created_at":"0001-01-01T00:00:00Z","server_label":"crm","upstream_label":"crm_up","name":"delete_contact","arguments":{"id":"c_1","api_key":"[redacted]"},"redacted":["api_key"]}`,
		`{"seq":0,"type":"mcp_call","id":"mcp_1","response_id":"resp_2","created_at":"0001-01-01T00:00:00Z","server_label":"crm","upstream_label":"crm_up","name":"delete_contact","arguments":{"id":"c_1","api_key":"[redacted]"},"redacted":["api_key"],"output":"deleted","approval_request_id":"mcpr_1","allowed_by":{"kind":"approval"}}`,
		`{"seq":0,"type":"mcp_call","id":"mcp_2","response_id":"resp_2","created_at":"0001-01-01T00:00:00Z","server_label":"crm","upstream_label":"crm_up","name":"search","arguments":{"query":"x"},"error":{"type":"mcp_protocol_error","code":-32000,"message":"boom"},"allowed_by":{"kind":"policy","policy":"never","source":"global"}}`,
		`{"seq":0,"type":"message","id":"msg_2","response_id":"resp_2","created_at":"0001-01-01T00:00:00Z","text":"Done.","partial":true}`,
		`{"seq":0,"type":"error","id":"err_1","response_id":"resp_3","created_at":"0001-01-01T00:00:00Z","turn_error":{"code":"upstream_cut","message":"the connection broke off","retryable":true}}`,
	}
	want := []conversation.Item{
		{Type: conversation.ItemUserMessage, ID: "umsg_1", Text: "Delete contact c_1 please"},
		{Type: conversation.ItemListTools, ID: "mcpl_1", ResponseID: "resp_1", ServerLabel: "crm", UpstreamLabel: "crm_up",
			Tools: []policy.DiscoveredTool{{Name: "delete_contact", Title: "Delete", Description: "Deletes a contact",
				InputSchema: json.RawMessage(`{"type":"object","properties":{"zeta":{"type":"string"},"id":{"type":"string"}}}`),
				Annotations: policy.Annotations{Title: "Delete it", ReadOnlyHint: ptr(false), DestructiveHint: ptr(true)}}}},
		{Type: conversation.ItemListTools, ID: "mcpl_2", ResponseID: "resp_1", ServerLabel: "docs", UpstreamLabel: "docs",
			ListError: json.RawMessage(`{"type":"http_error","code":401,"message":"unauthorized"}`)},
		{Type: conversation.ItemApprovalRequest, ID: "mcpr_1", ResponseID: "resp_1", ServerLabel: "crm", UpstreamLabel: "crm_up",
			Name: "delete_contact", Arguments: json.RawMessage(`{"id":"c_1","api_key":"[redacted]"}`), Redacted: []string{"api_key"}},
		{Type: conversation.ItemCall, ID: "mcp_1", ResponseID: "resp_2", ServerLabel: "crm", UpstreamLabel: "crm_up",
			Name: "delete_contact", Arguments: json.RawMessage(`{"id":"c_1","api_key":"[redacted]"}`), Redacted: []string{"api_key"},
			Output: ptr("deleted"), ApprovalRequestID: "mcpr_1", AllowedBy: &conversation.AllowedBy{Kind: "approval"}},
		{Type: conversation.ItemCall, ID: "mcp_2", ResponseID: "resp_2", ServerLabel: "crm", UpstreamLabel: "crm_up",
			Name: "search", Arguments: json.RawMessage(`{"query":"x"}`),
			CallError: json.RawMessage(`{"type":"mcp_protocol_error","code":-32000,"message":"boom"}`),
			AllowedBy: &conversation.AllowedBy{Kind: "policy", Policy: policy.Never, Source: policy.FromGlobal}},
		{Type: conversation.ItemMessage, ID: "msg_2", ResponseID: "resp_2", Text: "Done.", Partial: true},
		{Type: conversation.ItemError, ID: "err_1", ResponseID: "resp_3",
			Error: &conversation.TurnError{Code: "upstream_cut", Message: "the connection broke off", Retryable: true}},
	}
	for i, data := range rows {
		var it conversation.Item // only for the columns
		if err := json.Unmarshal([]byte(data), &it); err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
		if _, err := pool.Exec(t.Context(), `INSERT INTO conversation_items (conversation_id, seq, type, item_id, response_id, data)
			VALUES ('conv_1', $1, $2, $3, nullif($4, ''), $5::json)`, i+1, it.Type, it.ID, it.ResponseID, data); err != nil {
			t.Fatal(err)
		}
	}
	got, err := r.Conversations.Items(t.Context(), owner, "conv_1")
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if got[i].Seq != i+1 || got[i].CreatedAt.IsZero() {
			t.Errorf("item %d: seq %d, created %v; want the row's", i, got[i].Seq, got[i].CreatedAt)
		}
		got[i].Seq, got[i].CreatedAt = 0, time.Time{}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Items of rows without a version (-want +got):\n%s", diff)
	}
}

// Every field of the API's item, at any depth, survives a store and a load,
// except the ones that are not the item's to store, each for its reason: a
// field added to conversation.Item (or to a type in it) without a place in
// the stored layout fails here, as does one whose conversion is forgotten.
func TestItems_EveryFieldSurvivesStoreAndLoad(t *testing.T) {
	notStored := map[string]string{
		"Seq":       "the row's seq column",
		"CreatedAt": "the row's created_at column",
		"Approval":  "the request's current state, joined in from approval_requests when the transcript is read",
		// The digest of the real arguments goes into the call's receipt
		// (stored with it); the item keeps only the redacted arguments.
		"ArgumentsSHA256": "the receipt's arguments_sha256, not the item's",
		// The canonical digest finds the MCP face's record of the call.
		"CanonicalSHA256": "how the call is matched to gateway_calls, not the item's",
		"Call":            "the MCP face's record of the call, joined in from gateway_calls when the transcript is read",
	}
	store, _ := newConversations(t)
	r := store.Repo()
	mustCreate(t, r, "conv_1")

	var in conversation.Item
	fill(t, reflect.ValueOf(&in).Elem(), "Item")
	stored := mustAppend(t, r, "conv_1", in)
	got, err := r.Conversations.Items(t.Context(), owner, "conv_1")
	if err != nil || len(got) != 1 {
		t.Fatalf("Items = %d items, %v; want the one appended", len(got), err)
	}

	want := in
	rv := reflect.ValueOf(&want).Elem()
	for i := range rv.NumField() {
		if _, ok := notStored[rv.Type().Field(i).Name]; ok {
			rv.Field(i).SetZero()
		}
	}
	for name := range notStored {
		if _, ok := rv.Type().FieldByName(name); !ok {
			t.Errorf("notStored names %s, which conversation.Item no longer has", name)
		}
	}
	if got[0].Seq != stored.Seq || !got[0].CreatedAt.Equal(stored.CreatedAt) || got[0].Seq == 0 || got[0].CreatedAt.IsZero() {
		t.Errorf("seq %d, created %v; want the row's %d, %v", got[0].Seq, got[0].CreatedAt, stored.Seq, stored.CreatedAt)
	}
	stored.ArgumentsSHA256, stored.CanonicalSHA256 = "", "" // kept in memory for the receipt, never stored with the item
	stored.Call = nil                                       // joined in when the transcript is read
	if diff := cmp.Diff(got[0], stored); diff != "" {
		t.Errorf("AppendItem returned the item otherwise than it is stored (-loaded +returned):\n%s", diff)
	}
	got[0].Seq, got[0].CreatedAt = 0, time.Time{}
	if diff := cmp.Diff(want, got[0]); diff != "" {
		t.Errorf("fields lost or changed between store and load (-stored +loaded):\n%s", diff)
	}
}

// Items are stored with their layout version; a row from a newer layout
// is an error, not a transcript with parts silently missing.
func TestItems_StoredWithTheirVersion(t *testing.T) {
	store, pool := newConversations(t)
	r := store.Repo()
	mustCreate(t, r, "conv_1")
	mustAppend(t, r, "conv_1", conversation.Item{Type: conversation.ItemUserMessage, ID: "umsg_1", Text: "hello"})
	var v string
	if err := pool.QueryRow(t.Context(), `SELECT data->>'v' FROM conversation_items WHERE conversation_id = 'conv_1'`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	if v != "1" {
		t.Errorf("stored version %q, want 1", v)
	}
	if _, err := pool.Exec(t.Context(), `INSERT INTO conversation_items (conversation_id, seq, type, data)
		VALUES ('conv_1', 2, 'message', '{"v":2,"type":"message","text":"from the future"}')`); err != nil {
		t.Fatal(err)
	}
	_, err := r.Conversations.Items(t.Context(), owner, "conv_1")
	if e, ok := apperr.As(err); !ok || e.Code != "unknown_item_version" {
		t.Errorf("Items with a newer row = %v, want unknown_item_version", err)
	}
}

// fill sets every exported field of v, at any depth, to a value that is
// not its zero value and that names the field, so a lost field shows.
func fill(t *testing.T, v reflect.Value, path string) {
	t.Helper()
	switch v.Type() {
	case reflect.TypeFor[json.RawMessage]():
		b, _ := json.Marshal(map[string]string{"field": path})
		v.Set(reflect.ValueOf(json.RawMessage(b)))
		return
	case reflect.TypeFor[time.Time]():
		v.Set(reflect.ValueOf(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(path)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(int64(len(path)))
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(t, p.Elem(), path)
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			fill(t, s.Index(i), path+"["+string(rune('0'+i))+"]")
		}
		v.Set(s)
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() {
				fill(t, v.Field(i), path+"."+f.Name)
			}
		}
	default:
		t.Fatalf("fill: %s is a %s; teach fill to set one", path, v.Kind())
	}
}
