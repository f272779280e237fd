package engine_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/conversation/engine"
	"github.com/toolgate/toolgate/internal/emulator"
)

// The provider forgets responses (OpenAI keeps them for a while; the
// offline emulator without a state file forgets them on a restart). A
// fresh emulator behind the same address is such a provider: the next
// request's previous_response_id is unknown to it.

// sentRequest is a responses.create body as the emulator received it.
type sentRequest struct {
	PreviousResponseID string `json:"previous_response_id"`
	Input              []struct {
		Type              string          `json:"type"`
		Role              string          `json:"role"`
		Content           json.RawMessage `json:"content"`
		ApprovalRequestID string          `json:"approval_request_id"`
		Approve           *bool           `json:"approve"`
	} `json:"input"`
}

// text is a message's content given as one string, as Toolgate sends it.
func (r sentRequest) text(i int) string {
	var s string
	_ = json.Unmarshal(r.Input[i].Content, &s)
	return s
}

// roles lists the input as role: text (or the item type for other items).
func (r sentRequest) roles() []string {
	var out []string
	for i, in := range r.Input {
		if in.Type == "message" {
			out = append(out, in.Role+": "+r.text(i))
		} else {
			out = append(out, in.Type)
		}
	}
	return out
}

// requestsSince decodes the requests the provider received after the first n.
func (e *harness) requestsSince(n int) []sentRequest {
	e.t.Helper()
	var out []sentRequest
	for _, b := range e.up.sent()[n:] {
		var r sentRequest
		if err := json.Unmarshal(b, &r); err != nil {
			e.t.Fatalf("request body %s: %v", b, err)
		}
		out = append(out, r)
	}
	return out
}

func completedID(t *testing.T, rec *recorder) string {
	t.Helper()
	c, ok := rec.lastData().(conversation.CompletedEvent)
	if !ok || c.ResponseID == nil {
		t.Fatalf("the turn did not complete with a response: %v", rec.names())
	}
	return *c.ResponseID
}

// lostNotice is the provider_state_lost notice the turn sent, or fails.
func lostNotice(t *testing.T, rec *recorder) conversation.Notice {
	t.Helper()
	n, ok := rec.first(conversation.EventNameNotice).(conversation.NoticeEvent)
	if !ok || n.Item.Notice == nil || n.Item.Notice.Code != conversation.NoticeProviderStateLost {
		t.Fatalf("no provider_state_lost notice: events %v", rec.names())
	}
	return *n.Item.Notice
}

// restartWith puts a fresh emulator with cfg behind the tap, as a restart
// of the offline emulator does.
func (u *emuTap) restartWith(t *testing.T, cfg emulator.Config) {
	t.Helper()
	emu, err := emulator.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.emu = emu
}

// A message after the provider lost the previous response is answered: the
// request that named it is refused (400 previous_response_not_found), and
// Toolgate sends the conversation's own transcript instead (the messages,
// the model's answer and the tool call with its output, no
// previous_response_id); the transcript says so with a notice; the new
// response becomes the last one and the next turn chains from it again.
func TestLost_MessageGoesOnFromTheTranscript(t *testing.T) {
	t.Parallel()
	e := newEngine(t, engineOptions{})
	conv, rec1 := e.send(ana, "", `get_forecast {"city": "Oslo"}`)
	first := completedID(t, rec1)
	if n := e.demo.State().Calls["get_forecast"]; n != 1 {
		t.Fatalf("get_forecast ran %d times in turn 1, want 1", n)
	}
	answer1 := find(e.transcript(ana, conv).Items, conversation.ItemMessage)
	if answer1 == nil {
		t.Fatal("turn 1 has no answer")
	}

	e.up.replace(t) // the provider forgets every response
	n := e.up.count()
	_, rec := e.send(ana, conv, "and what should I wear?")
	second := completedID(t, rec)
	notice := lostNotice(t, rec)
	if !strings.Contains(notice.Message, "own transcript") {
		t.Errorf("notice %q does not say the conversation went on from Toolgate's transcript", notice.Message)
	}

	reqs := e.requestsSince(n)
	if len(reqs) != 2 || reqs[0].PreviousResponseID != first || reqs[1].PreviousResponseID != "" {
		t.Fatalf("requests %+v; want the one naming %s (refused), then one without previous_response_id", reqs, first)
	}
	in := reqs[1].roles()
	t.Logf("input sent from the transcript:\n%s", strings.Join(in, "\n"))
	want := []string{
		`user: get_forecast {"city": "Oslo"}`,
		`developer: Tool call: tool "get_forecast" on server "demo" with arguments {"city":"Oslo"} returned: `,
		"assistant: " + answer1.Text,
		"user: and what should I wear?",
	}
	if len(in) != len(want)+1 || !strings.Contains(in[0], "previous_response_not_found") {
		t.Fatalf("input %q; want Toolgate's note, then %q", in, want)
	}
	for i, w := range want {
		if !strings.HasPrefix(in[i+1], w) {
			t.Errorf("input[%d] = %q, want it to start with %q", i+1, in[i+1], w)
		}
	}
	if !strings.Contains(in[2], "Overcast with snow showers") {
		t.Errorf("the tool call %q does not carry the tool's output", in[2])
	}
	if n := e.demo.State().Calls["get_forecast"]; n != 1 {
		t.Errorf("get_forecast ran %d times, want 1: a call in the transcript is not run again", n)
	}

	tr := e.transcript(ana, conv)
	if got := deref(tr.Conversation.LastResponseID); got != second {
		t.Errorf("last_response_id %q, want the new response %q", got, second)
	}
	var kinds []string
	for _, it := range tr.Items {
		kinds = append(kinds, it.Type)
	}
	if got := strings.Join(kinds, ","); !strings.Contains(got, "user_message,notice,mcp_list_tools,message") {
		t.Errorf("transcript %s; want the message, the notice, then the new response's items", got)
	}
	if it := find(tr.Items, conversation.ItemNotice); it == nil || it.Notice == nil || it.Notice.Code != conversation.NoticeProviderStateLost {
		t.Errorf("the transcript keeps no provider_state_lost notice: %+v", it)
	}

	// The next turn chains from the new response as usual.
	n = e.up.count()
	_, rec3 := e.send(ana, conv, "thanks")
	reqs = e.requestsSince(n)
	if len(reqs) != 1 || reqs[0].PreviousResponseID != second {
		t.Errorf("next turn sent %d requests (previous %+v); want one chained from %s", len(reqs), reqs, second)
	}
	if rec3.count(conversation.EventNameNotice) != 0 {
		t.Errorf("next turn: %v; want no notice", rec3.names())
	}
}

// Approval requests of the lost response that were still pending expire,
// with a note saying why, when a message moves on; the tool never runs, and
// the expired request cannot be decided any more.
func TestLost_PendingApprovalsExpire(t *testing.T) {
	t.Parallel()
	e := newEngine(t, engineOptions{})
	conv, a := e.asking(ana, "")
	e.up.replace(t)
	n := e.up.count()
	_, rec := e.send(ana, conv, "never mind, hello")
	notice := lostNotice(t, rec)
	if !strings.Contains(notice.Message, "1 approval request(s) of the lost response expired") {
		t.Errorf("notice %q does not say the request expired", notice.Message)
	}

	got := e.approval(conv, a.ID)
	if got.State != conversation.Expired || deref(got.DecisionReason) != conversation.ExpiredReason || got.DecidedAt == nil {
		t.Errorf("approval %s (%q); want expired saying why", got.State, deref(got.DecisionReason))
	}
	var states []string
	for _, ev := range rec.events {
		if d, ok := ev.data.(conversation.DecisionEvent); ok && d.ApprovalRequestID == a.ID {
			states = append(states, d.State)
		}
	}
	if strings.Join(states, ",") != "superseded,expired" {
		t.Errorf("decision events %v; want superseded (the message), then expired", states)
	}
	if tr := e.transcript(ana, conv); len(tr.Pending) != 0 {
		t.Errorf("%d approval requests still pending", len(tr.Pending))
	}

	reqs := e.requestsSince(n)
	if len(reqs) != 2 || reqs[1].PreviousResponseID != "" {
		t.Fatalf("requests %+v; want the refused one, then one from the transcript", reqs)
	}
	var record string
	for i, in := range reqs[1].Input {
		if in.Type != "message" {
			t.Errorf("input[%d] is a %s; the transcript goes as messages only (no approval answers)", i, in.Type)
		}
		if in.Role == "developer" && strings.Contains(reqs[1].text(i), "delete_forecast") {
			record = reqs[1].text(i)
		}
	}
	if !strings.Contains(record, `"api_token":"[redacted]"`) || !strings.Contains(record, "can no longer be answered") {
		t.Errorf("the approval request's record %q; want its redacted arguments and why it did not run", record)
	}
	for i, in := range reqs[1].Input {
		if in.Role != "user" && strings.Contains(reqs[1].text(i), "tok-secret-123") {
			t.Errorf("input[%d] (%s) carries the secret argument: %s", i, in.Role, reqs[1].text(i))
		}
	}
	if st := e.demo.State(); st.Calls["delete_forecast"] != 0 {
		t.Errorf("delete_forecast ran %d times, want never", st.Calls["delete_forecast"])
	}

	_, err := e.decide(ana, conv, a.ID, true)
	if err == nil || !strings.Contains(err.Error(), "expired") {
		t.Errorf("deciding the expired request: %v; want a conflict saying it expired", err)
	}
}

// An approval decided for a response the provider lost never runs: the
// decision cannot reach the model, so the request carrying it is not sent
// again with it; the transcript goes instead, saying the approval could not
// be delivered, and the approval expires. The model asks again, and only
// that new request, once approved, runs the tool (once), chained as usual.
func TestLost_ApprovalForALostResponseNeverRuns(t *testing.T) {
	t.Parallel()
	e := newEngine(t, engineOptions{})
	conv, a := e.asking(ana, "")
	e.up.replace(t)
	n := e.up.count()
	turn, err := e.decide(ana, conv, a.ID, true)
	if err != nil {
		t.Fatal(err)
	}
	rec := e.run(ana, turn)
	second := completedID(t, rec)
	notice := lostNotice(t, rec)
	if !strings.Contains(notice.Message, "1 of them approved") {
		t.Errorf("notice %q does not say the approval could not reach the model", notice.Message)
	}
	if got := e.approval(conv, a.ID); got.State != conversation.Expired || deref(got.DecisionReason) != conversation.ExpiredApprovedReason || got.AnsweredIn != nil {
		t.Errorf("approval %s (%q, answered in %v); want expired, saying the approval could not be delivered, answered nowhere",
			got.State, deref(got.DecisionReason), deref(got.AnsweredIn))
	}
	var sentIn *string
	if err := e.pool.QueryRow(t.Context(), `SELECT sent_in_turn FROM approval_requests WHERE id = $1`, a.ID).Scan(&sentIn); err != nil || sentIn != nil {
		t.Errorf("sent_in_turn %v (%v); want none: the refused follow-up did not deliver the approval, and nothing else carried it", deref(sentIn), err)
	}
	if st := e.demo.State(); st.Calls["delete_forecast"] != 0 || st.Forecasts["Berlin"].City == "" {
		t.Fatalf("delete_forecast ran %d times (Berlin kept: %v); an approval for a lost response must never run",
			st.Calls["delete_forecast"], st.Forecasts["Berlin"].City != "")
	}

	reqs := e.requestsSince(n)
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2: the follow-up (refused), then the transcript", len(reqs))
	}
	for i, in := range reqs[1].Input {
		if in.Type == "mcp_approval_response" {
			t.Errorf("input[%d]: the transcript request carries an approval answer (%s approve %v)", i, in.ApprovalRequestID, *in.Approve)
		}
	}
	if reqs[1].PreviousResponseID != "" {
		t.Errorf("the transcript request names previous response %s", reqs[1].PreviousResponseID)
	}
	if in := reqs[1].roles(); !strings.Contains(in[len(in)-1], "approval could not reach it and the tool did not run") {
		t.Errorf("the transcript ends with %q; want the record saying the approval could not be delivered", in[len(in)-1])
	}

	// The model asks again; this request belongs to the new response.
	again, ok := rec.first(conversation.EventNameApproval).(conversation.Approval)
	if !ok || again.ID == a.ID || again.ResponseID != second {
		t.Fatalf("the model did not ask again in the new response: %v", rec.names())
	}
	n = e.up.count()
	turn, err = e.decide(ana, conv, again.ID, true)
	if err != nil {
		t.Fatal(err)
	}
	if rec := e.run(ana, turn); rec.last() != conversation.EventNameCompleted || rec.count(conversation.EventNameNotice) != 0 {
		t.Fatalf("approving the new request: %v; want completed, no notice", rec.names())
	}
	reqs = e.requestsSince(n)
	if len(reqs) != 1 || reqs[0].PreviousResponseID != second || len(reqs[0].Input) != 1 || reqs[0].Input[0].ApprovalRequestID != again.ID {
		t.Errorf("requests %+v; want one follow-up chained from %s answering only %s", reqs, second, again.ID)
	}
	if st := e.demo.State(); st.Calls["delete_forecast"] != 1 {
		t.Errorf("delete_forecast ran %d times after the new approval, want 1", st.Calls["delete_forecast"])
	}
}

// The offline emulator with a state file (as `make run` starts it) keeps
// its responses across a restart: a pending approval is still answered
// through previous_response_id and runs the tool, with no notice.
func TestLost_EmulatorStateFileKeepsPendingApprovalsAcrossRestarts(t *testing.T) {
	t.Parallel()
	e := newEngine(t, engineOptions{})
	file := filepath.Join(t.TempDir(), "emulator-state.json")
	e.up.restartWith(t, emulator.Config{StateFile: file})
	conv, a := e.asking(ana, "")
	e.up.restartWith(t, emulator.Config{StateFile: file})
	turn, err := e.decide(ana, conv, a.ID, true)
	if err != nil {
		t.Fatal(err)
	}
	rec := e.run(ana, turn)
	if rec.last() != conversation.EventNameCompleted || rec.count(conversation.EventNameNotice) != 0 {
		t.Fatalf("approving after the restart: %v; want completed without a notice", rec.names())
	}
	if got := e.approval(conv, a.ID); got.State != conversation.Approved {
		t.Errorf("approval %s, want approved", got.State)
	}
	if n := e.demo.State().Calls["delete_forecast"]; n != 1 {
		t.Errorf("delete_forecast ran %d times, want 1", n)
	}
}

// The rebuilt request is bounded: the newest entries that fit in
// HistoryMaxEntries and HistoryMaxChars, long tool output and answers
// shortened; arguments are redacted again on the way out.
func TestLost_HistoryIsBoundedAndRedacted(t *testing.T) {
	var items []conversation.Item
	for i := range conversation.HistoryMaxEntries + 50 {
		items = append(items, conversation.Item{Type: conversation.ItemUserMessage, Text: "message " + string(rune('a'+i%26))})
	}
	out := strings.Repeat("x", 50000)
	items = append(items,
		conversation.Item{Type: conversation.ItemCall, Name: "get_forecast", ServerLabel: "demo",
			Arguments: json.RawMessage(`{"city":"Oslo","password":"hunter2"}`), Output: &out},
		conversation.Item{Type: conversation.ItemMessage, Text: strings.Repeat("y", 20000)},
		conversation.Item{Type: conversation.ItemMessage, Text: "cut", Partial: true},
		conversation.Item{Type: conversation.ItemError, Error: &conversation.TurnError{Code: "upstream_cut"}},
		conversation.Item{Type: conversation.ItemUserMessage, Text: strings.Repeat("z", conversation.MaxInputLen)},
	)
	msgs, left := conversation.History(items, nil)
	if len(msgs)-1 > conversation.HistoryMaxEntries || left == 0 {
		t.Fatalf("%d entries, %d left out; want at most %d", len(msgs)-1, left, conversation.HistoryMaxEntries)
	}
	total := 0
	for _, m := range msgs[1:] {
		total += len([]rune(m.Text))
	}
	if total > conversation.HistoryMaxChars {
		t.Errorf("%d characters, want at most %d", total, conversation.HistoryMaxChars)
	}
	if !strings.Contains(msgs[0].Text, "oldest entries of the transcript are left out") {
		t.Errorf("the note %q does not say entries were left out", msgs[0].Text)
	}
	last := msgs[len(msgs)-1]
	if last.Role != conversation.RoleUser || len(last.Text) != conversation.MaxInputLen {
		t.Errorf("the newest message (%s, %d characters) is not kept whole", last.Role, len(last.Text))
	}
	var call, answer string
	for _, m := range msgs {
		switch {
		case m.Role == conversation.RoleDeveloper && strings.Contains(m.Text, "get_forecast"):
			call = m.Text
		case m.Role == conversation.RoleAssistant:
			if answer != "" {
				t.Errorf("a partial answer was sent: %q", m.Text)
			}
			answer = m.Text
		}
	}
	if strings.Contains(call, "hunter2") || !strings.Contains(call, `"password":"[redacted]"`) {
		t.Errorf("call record %.200q; want the password redacted", call)
	}
	if len([]rune(call)) > 2000 || !strings.Contains(call, "more characters left out") {
		t.Errorf("call record of %d characters; want it shortened, saying so", len([]rune(call)))
	}
	if len([]rune(answer)) > 8000 || !strings.HasPrefix(answer, "yyy") {
		t.Errorf("answer of %d characters; want it shortened", len([]rune(answer)))
	}
}

// Each approval request and call of the transcript is recorded with what
// became of it, so the model does not contradict what ran.
func TestLost_HistorySaysWhatBecameOfEachRequest(t *testing.T) {
	str := func(s string) *string { return &s }
	approvals := map[string]conversation.Approval{
		"mcpr_a": {State: conversation.Approved},
		"mcpr_d": {State: conversation.Denied, DecisionReason: str("keep Berlin")},
		"mcpr_s": {State: conversation.Superseded, DecisionReason: str(engine.SupersededReason)},
		"mcpr_e": {State: conversation.Expired, DecisionReason: str(conversation.ExpiredReason)},
		"mcpr_u": {State: conversation.Approved, AnsweredIn: str("unknown")},
	}
	var items []conversation.Item
	for id, a := range approvals {
		a.ToolName, a.ServerLabel, a.StoredArguments = "delete_forecast", "demo", `{"city":"`+id+`"}`
		approvals[id] = a
		items = append(items, conversation.Item{Type: conversation.ItemApprovalRequest, ID: id})
	}
	items = append(items,
		conversation.Item{Type: conversation.ItemCall, Name: "send_alert", ServerLabel: "demo", Interrupted: true},
		conversation.Item{Type: conversation.ItemCall, Name: "get_forecast", ServerLabel: "demo", Arguments: json.RawMessage(`{"city":"Nowhere"}`),
			CallError: json.RawMessage(`{"type": "mcp_tool_execution_error", "content": "unknown city"}`)},
		conversation.Item{Type: conversation.ItemListTools, ServerLabel: "demo"},
		conversation.Item{Type: conversation.ItemNotice, Notice: &conversation.Notice{Code: "x"}},
	)
	msgs, _ := conversation.History(items, approvals)
	all := ""
	for _, m := range msgs[1:] {
		if m.Role != conversation.RoleDeveloper {
			t.Errorf("%s message %q; records go as developer messages", m.Role, m.Text)
		}
		all += m.Text + "\n"
	}
	for _, want := range []string{
		`"city":"mcpr_a"}. The user approved it.`,
		`"city":"mcpr_d"}. The user denied it, so it did not run. The user's reason: keep Berlin`,
		`"city":"mcpr_s"}. It did not run: ` + engine.SupersededReason,
		`"city":"mcpr_e"}. It did not run: ` + conversation.ExpiredReason,
		`"city":"mcpr_u"}. The user approved it. The approval may have reached the provider in a response that broke off; whether it ran is unknown.`,
		`tool "send_alert" on server "demo" began, but its result never arrived: it may or may not have run.`,
		`tool "get_forecast" on server "demo" with arguments {"city":"Nowhere"} failed: {"type":"mcp_tool_execution_error","content":"unknown city"}`,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("the records do not say %q:\n%s", want, all)
		}
	}
	if len(msgs) != 1+len(approvals)+2 {
		t.Errorf("%d messages, want the note, %d requests and 2 calls (no tool list, no notice)", len(msgs), len(approvals))
	}
}
