package http_test

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/internal/auth"
	toolhttp "github.com/toolgate/toolgate/internal/http"
)

// receipt is the after of a tool.call audit entry, as a client reads it.
type receipt struct {
	ConversationID    string          `json:"conversation_id"`
	ResponseID        string          `json:"response_id"`
	CallID            string          `json:"call_id"`
	ApprovalRequestID *string         `json:"approval_request_id"`
	ServerLabel       string          `json:"server_label"`
	ToolName          string          `json:"tool_name"`
	Arguments         json.RawMessage `json:"arguments"`
	Redacted          []string        `json:"redacted"`
	ArgumentsText     string          `json:"arguments_text"`
	ArgumentsSHA256   string          `json:"arguments_sha256"`
	AllowedBy         *struct {
		Kind   string `json:"kind"`
		Policy string `json:"policy"`
		Source string `json:"source"`
	} `json:"allowed_by"`
	DecidedBy    *string         `json:"decided_by"`
	DecidedByID  *string         `json:"decided_by_id"`
	Outcome      string          `json:"outcome"`
	OutputSHA256 *string         `json:"output_sha256"`
	Error        json.RawMessage `json:"error"`
}

// receipts lists the caller's tool.call entries, newest first, with their
// receipts decoded.
func (e *apiEnv) receipts() ([]auditEntry, []receipt) {
	e.t.Helper()
	var p auditPage
	e.must(200, "GET", "/api/audit?action=tool.call&limit=500", nil, &p)
	var rs []receipt
	for _, en := range p.Entries {
		if en.Action != "tool.call" {
			e.t.Fatalf("action=tool.call listed %s", en.Action)
		}
		var r receipt
		if err := json.Unmarshal(en.After, &r); err != nil {
			e.t.Fatalf("receipt %s: %v", en.After, err)
		}
		rs = append(rs, r)
	}
	return p.Entries, rs
}

// export reads GET /api/audit/export with query and decodes every line.
func (e *apiEnv) export(query string) []auditEntry {
	e.t.Helper()
	res := e.must(200, "GET", "/api/audit/export"+query, nil, nil)
	if ct := res.header.Get("Content-Type"); ct != "application/x-ndjson" {
		e.t.Errorf("export content type %q", ct)
	}
	var out []auditEntry
	sc := bufio.NewScanner(bytes.NewReader(res.body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var en auditEntry
		if err := json.Unmarshal(sc.Bytes(), &en); err != nil {
			e.t.Fatalf("export line %q is not JSON: %v", sc.Text(), err)
		}
		out = append(out, en)
	}
	if n := len(res.body); n > 0 && res.body[n-1] != '\n' {
		e.t.Errorf("export does not end with a newline: %q", res.body[max(0, n-80):])
	}
	return out
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func callsOf(t testing.TB, items []item) []item {
	t.Helper()
	var out []item
	for _, it := range items {
		if it.Type == "mcp_call" {
			out = append(out, it)
		}
	}
	return out
}

// A call that ran without asking (its policy is never) has a receipt with
// its arguments, their digest, the policy that allowed it and its outcome.
func TestReceipts_AutoRunCallIsRecorded(t *testing.T) {
	e := newAPI(t)
	e.createDemo("demo")
	e.setPolicy("demo", "delete_forecast", "never")
	e.setPolicy("demo", "get_forecast", "never")

	s := e.send("", `delete_forecast {"city": "Oslo"}`).ok(t)
	conv := s.conv(t)
	calls := callsOf(t, e.transcript(conv).Items)
	if len(calls) != 1 || calls[0].Output == nil {
		t.Fatalf("calls %+v, want delete_forecast's", calls)
	}
	call := calls[0]
	entries, rs := e.receipts()
	if len(rs) != 1 {
		t.Fatalf("%d receipts, want 1: %+v", len(rs), rs)
	}
	en, r := entries[0], rs[0]
	if en.ActorID != e.admin.ID || en.Actor != e.admin.Email || deref2(en.ServerLabel) != "demo" || deref2(en.ToolName) != "delete_forecast" {
		t.Errorf("entry %+v", en)
	}
	want := receipt{ConversationID: conv, ResponseID: call.ResponseID, CallID: call.ID, ServerLabel: "demo",
		ToolName: "delete_forecast", Arguments: json.RawMessage(`{"city":"Oslo"}`), Redacted: []string{},
		ArgumentsText: `{"city":"Oslo"}`, ArgumentsSHA256: sha(`{"city":"Oslo"}`), Outcome: "output", OutputSHA256: ptr(sha(*call.Output)),
		Error: json.RawMessage("null")}
	want.AllowedBy = r.AllowedBy
	if diff := cmp.Diff(want, r); diff != "" {
		t.Errorf("receipt (-want +got):\n%s", diff)
	}
	if r.AllowedBy == nil || r.AllowedBy.Kind != "policy" || r.AllowedBy.Policy != "never" || r.AllowedBy.Source != "tool" {
		t.Errorf("allowed_by %+v, want the tool's never policy", r.AllowedBy)
	}

	// A call that ends in a tool error has a receipt too, with the error.
	e.send(conv, `get_forecast {"city": "Atlantis"}`).ok(t)
	_, rs = e.receipts()
	if len(rs) != 2 || rs[0].ToolName != "get_forecast" || rs[0].Outcome != "error" || len(rs[0].Error) == 0 || string(rs[0].Error) == "null" {
		t.Errorf("receipts after a failing call: %+v", rs)
	}

	// Arguments are redacted as on the card: the secret is nowhere.
	e.send(conv, `get_forecast {"city": "Berlin", "api_token": "s3cret-value"}`).ok(t)
	_, rs = e.receipts()
	if len(rs) != 3 || rs[0].ArgumentsText != `{"api_token":"[redacted]","city":"Berlin"}` || !slices.Equal(rs[0].Redacted, []string{"api_token"}) {
		t.Errorf("receipt of a call with a secret: %+v", rs[0])
	}
	if res := e.must(200, "GET", "/api/audit/export", nil, nil); bytes.Contains(res.body, []byte("s3cret")) {
		t.Error("the export shows a secret argument")
	}
}

// An approved call's receipt names the approval and the person who decided;
// the call has one receipt, however many times it is seen.
func TestReceipts_ApprovedCallNamesApprovalAndDecider(t *testing.T) {
	e := newAPI(t)
	e.askFor("delete_forecast")
	ana, anaUser := e.newUser(auth.Member)
	s := ana.send("", `delete_forecast {"city": "Oslo"}`).ok(t)
	ap := one[approval](t, s, "approval.required")
	if _, rs := ana.receipts(); len(rs) != 0 {
		t.Fatalf("receipts before anything ran: %+v", rs)
	}
	ana.decide(s.conv(t), ap.ID, true, nil).ok(t)

	entries, rs := ana.receipts()
	if len(rs) != 1 {
		t.Fatalf("%d receipts, want 1: %+v", len(rs), rs)
	}
	r := rs[0]
	if deref(r.ApprovalRequestID) != ap.ID || deref(r.DecidedBy) != anaUser.Email || deref(r.DecidedByID) != anaUser.ID {
		t.Errorf("receipt approval %v decided by %v (%v); want %s by %s (%s)", deref(r.ApprovalRequestID), deref(r.DecidedBy),
			deref(r.DecidedByID), ap.ID, anaUser.Email, anaUser.ID)
	}
	if r.AllowedBy == nil || r.AllowedBy.Kind != "approval" || r.ArgumentsText != `{"city":"Oslo"}` || r.ArgumentsSHA256 != sha(r.ArgumentsText) || r.Outcome != "output" {
		t.Errorf("receipt %+v", r)
	}
	if entries[0].ActorID != anaUser.ID {
		t.Errorf("actor %s, want ana", entries[0].ActorID)
	}
}

// Receipts outlive their conversation.
func TestReceipts_SurviveDeletingTheConversation(t *testing.T) {
	e := newAPI(t)
	e.createDemo("demo")
	e.setPolicy("demo", "delete_forecast", "never")
	s := e.send("", `delete_forecast {"city": "Oslo"}`).ok(t)
	conv := s.conv(t)
	_, before := e.receipts()
	e.must(204, "DELETE", "/api/conversations/"+conv, nil, nil)
	e.must(404, "GET", "/api/conversations/"+conv, nil, nil)
	_, after := e.receipts()
	if len(before) != 1 || before[0].ConversationID != conv {
		t.Fatalf("receipts before deleting: %+v", before)
	}
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("receipts changed when the conversation was deleted (-before +after):\n%s", diff)
	}
}

// A member sees only their own receipts, in the list and in the export;
// an admin sees everyone's.
func TestReceipts_OtherMembersCannotSeeThem(t *testing.T) {
	e := newAPI(t)
	e.createDemo("demo")
	e.setPolicy("demo", "delete_forecast", "never")
	ana, anaUser := e.newUser(auth.Member)
	ben, _ := e.newUser(auth.Member)
	ana.send("", `delete_forecast {"city": "Oslo"}`).ok(t)

	if _, rs := ana.receipts(); len(rs) != 1 {
		t.Fatalf("ana sees %d receipts, want her 1", len(rs))
	}
	if _, rs := ben.receipts(); len(rs) != 0 {
		t.Errorf("ben sees ana's receipts: %+v", rs)
	}
	if got := ben.export("?action=tool.call"); len(got) != 0 {
		t.Errorf("ben's export has ana's receipts: %+v", got)
	}
	for _, en := range ben.export("") {
		if en.Action == "tool.call" {
			t.Errorf("ben's full export has a receipt: %+v", en)
		}
	}
	if got := ana.export("?action=tool.call"); len(got) != 1 || got[0].ActorID != anaUser.ID {
		t.Errorf("ana's export = %+v", got)
	}
	if _, rs := e.receipts(); len(rs) != 1 {
		t.Errorf("the admin sees %d receipts, want ana's 1", len(rs))
	}
}

// The export is the filtered audit log as JSON lines, newest first, every
// page of it; another format is 400, no credentials 401.
func TestAuditExport_JSONLines(t *testing.T) {
	e := newAPI(t)
	e.createDemo("demo")
	e.setPolicy("demo", "delete_forecast", "never")
	e.send("", `delete_forecast {"city": "Oslo"}`).ok(t)
	for _, p := range []string{"always", "never", "blocked"} {
		e.setPolicy("demo", "send_alert", p)
	}

	all := e.audit()
	got := e.export("?format=jsonl")
	if diff := cmp.Diff(all, got); diff != "" {
		t.Errorf("export differs from the audit log (-list +export):\n%s", diff)
	}
	// Read two entries at a time, the export still has every page.
	restore := toolhttp.SetAuditExportPage(2)
	got = e.export("")
	restore()
	if diff := cmp.Diff(all, got); diff != "" {
		t.Errorf("export in pages of 2 differs from the audit log (-list +export):\n%s", diff)
	}
	rs := e.export("?action=tool.call")
	if len(rs) != 1 || rs[0].Action != "tool.call" || deref2(rs[0].ToolName) != "delete_forecast" {
		t.Errorf("export of receipts = %+v", rs)
	}
	var bad apiError
	e.must(400, "GET", "/api/audit/export?format=csv", nil, &bad)
	if bad.Error.Code != "invalid_format" {
		t.Errorf("format=csv: %+v", bad.Error)
	}
	e.anon().must(401, "GET", "/api/audit/export", nil, nil)
}

func ptr[T any](v T) *T { return &v }
