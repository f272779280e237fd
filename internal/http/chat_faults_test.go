package http_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestChat_SecondDecisionConflictsAndUnknownIsNotFound(t *testing.T) {
	e := newAPI(t)
	e.askFor("delete_forecast")
	_, conv, ap := e.askToDeleteOslo()
	e.decide(conv, ap.ID, true, nil).ok(t)
	before := e.up.count()

	again := e.decide(conv, ap.ID, false, nil)
	var body struct {
		Error struct {
			Code    string `json:"code"`
			Details struct {
				Approval approval `json:"approval"`
			} `json:"details"`
		} `json:"error"`
	}
	if again.status != 409 || json.Unmarshal(again.body, &body) != nil || body.Error.Code != "approval_already_decided" ||
		body.Error.Details.Approval.State != "approved" {
		t.Errorf("second decision: %d %s", again.status, again.body)
	}
	if unknown := e.decide(conv, "mcpr_nope", true, nil); unknown.status != 404 || !strings.Contains(string(unknown.body), "approval_not_found") {
		t.Errorf("unknown request: %d %s", unknown.status, unknown.body)
	}
	if e.up.count() != before {
		t.Error("a refused decision went upstream")
	}
	if cnt := e.demo.State().Calls["delete_forecast"]; cnt != 1 {
		t.Errorf("delete_forecast ran %d times", cnt)
	}
}

func TestChat_RacingDecisionsMakeExactlyOneFollowUp(t *testing.T) {
	e := newAPI(t)
	e.askFor("delete_forecast")
	_, conv, ap := e.askToDeleteOslo()
	before := e.up.count()

	const tabs = 6
	results := make([]stream, tabs)
	var wg sync.WaitGroup
	for i := range tabs {
		wg.Go(func() { results[i] = e.decide(conv, ap.ID, i%2 == 0, nil) })
	}
	wg.Wait()
	won := 0
	for _, r := range results {
		switch r.status {
		case 200:
			won++
		case 409:
		default:
			t.Errorf("status %d %s", r.status, r.body)
		}
	}
	if won != 1 || e.up.count() != before+1 {
		t.Errorf("%d decisions won, %d follow-ups; want 1 and 1", won, e.up.count()-before)
	}
}

func TestChat_PendingApprovalSurvivesReloadAndRestart(t *testing.T) {
	e := newAPI(t)
	e.askFor("delete_forecast")
	_, conv, ap := e.askToDeleteOslo()

	before := e.transcript(conv)
	if len(before.Pending) != 1 || before.Pending[0].ID != ap.ID || before.Conversation.Pending != 1 {
		t.Fatalf("reload: pending %+v", before.Pending)
	}
	e.start() // a restart: new services and server on the same database
	after := e.transcript(conv)
	if len(after.Items) != len(before.Items) || len(after.Pending) != 1 || after.Pending[0].ID != ap.ID {
		t.Fatalf("after restart: %d items (was %d), pending %+v", len(after.Items), len(before.Items), after.Pending)
	}
	e.decide(conv, ap.ID, true, nil).ok(t)
	if _, ok := e.demo.State().Forecasts["Oslo"]; ok {
		t.Error("approval after restart did not run the tool")
	}
}

func TestChat_BrowserLeavingDoesNotLoseTheTurn(t *testing.T) {
	e := newAPI(t)
	e.askFor("delete_forecast")
	e.up.setBehavior("event-delay=30ms")
	ctx, cancel := context.WithCancel(context.Background())
	res := e.open(ctx, "/api/responses", map[string]any{"input": `delete_forecast {"city": "Oslo"}`})
	evs, _ := parseSSE(t, res.Body, func(ev sseEvent) bool { return ev.Name == "conversation" })
	cancel() // the browser goes away before the approval request arrives
	res.Body.Close()
	var conv convEvent
	if len(evs) == 0 || json.Unmarshal(evs[len(evs)-1].Data, &conv) != nil {
		t.Fatalf("no conversation event: %v", evs)
	}
	tr := waitIdle(t, e, conv.ConversationID)
	if len(tr.Pending) != 1 || tr.Pending[0].ToolName != "delete_forecast" || tr.Conversation.LastResponseID == nil {
		t.Fatalf("after the browser left: pending %+v, last response %v", tr.Pending, tr.Conversation.LastResponseID)
	}
	e.up.setBehavior("")
	e.decide(conv.ConversationID, tr.Pending[0].ID, true, nil).ok(t)
}

// waitIdle waits until no turn runs in conv and returns its transcript.
func waitIdle(t *testing.T, e *apiEnv, conv string) transcript {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		tr := e.transcript(conv)
		if !tr.Conversation.Streaming {
			return tr
		}
		if time.Now().After(deadline) {
			t.Fatal("the turn did not finish")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestChat_CutStreamIsAnErrorAndDoesNotAdvance(t *testing.T) {
	e := newAPI(t)
	e.createDemo("demo")
	first := e.send("", "hello").ok(t)
	conv := first.conv(t)
	last := *one[completedEvent](t, first, "completed").ResponseID

	s := e.send(conv, "[emulator: cut, at=5] tell me more")
	if got := s.names(); got[len(got)-1] != "error" || strings.Contains(strings.Join(got, " "), "completed") {
		t.Fatalf("events %v: want an error and no completion", got)
	}
	if te := one[turnError](t, s, "error"); te.Code != "upstream_cut" || !te.Retryable {
		t.Errorf("error %+v", te)
	}
	tr := e.transcript(conv)
	if tr.Conversation.LastResponseID == nil || *tr.Conversation.LastResponseID != last || tr.Conversation.Streaming {
		t.Errorf("last response %v (want %s), streaming %v", tr.Conversation.LastResponseID, last, tr.Conversation.Streaming)
	}
	if it := tr.Items[len(tr.Items)-1]; it.Type != "error" || it.TurnErr == nil || it.TurnErr.Code != "upstream_cut" {
		t.Errorf("last transcript item %+v", it)
	}
	e.send(conv, "still there?").ok(t) // the conversation goes on from the last good response
	if got := e.up.sent(); got[len(got)-1]["previous_response_id"] != last {
		t.Errorf("next request chained from %v, want %s", got[len(got)-1]["previous_response_id"], last)
	}
}

func TestChat_RateLimitIsRetriedBeforeAnythingStreamed(t *testing.T) {
	e := newAPI(t)
	before := e.up.count()
	s := e.send("", "[emulator: status=429, retry-after=0, times=1] hello").ok(t)
	if n := e.up.count() - before; n != 2 {
		t.Errorf("%d requests upstream, want 2 (one 429, one retry)", n)
	}
	if lastMessage(t, s) == "" {
		t.Error("no answer after the retry")
	}

	before = e.up.count()
	s = e.send(s.conv(t), "[emulator: status=503, retry-after=0, times=5] hello again")
	te := one[turnError](t, s, "error")
	if te.Code != "upstream_unavailable" || !te.Retryable || e.up.count()-before != 3 {
		t.Errorf("error %+v after %d attempts; want upstream_unavailable, retryable, 3 attempts", te, e.up.count()-before)
	}
}

func TestChat_DecisionFollowUpIsNeverRetried(t *testing.T) {
	e := newAPI(t)
	e.askFor("delete_forecast")
	_, conv, ap := e.askToDeleteOslo()
	e.up.setBehavior("status=503, retry-after=0")
	before := e.up.count()
	f := e.decide(conv, ap.ID, true, nil)
	if te := one[turnError](t, f, "error"); te.Code != "upstream_unavailable" || e.up.count()-before != 1 {
		t.Fatalf("error %+v after %d attempts; want one attempt", te, e.up.count()-before)
	}
	if _, ok := e.demo.State().Forecasts["Oslo"]; !ok {
		t.Fatal("the tool ran although the follow-up failed")
	}
	// The decision is kept and goes with the next message, exactly once.
	e.up.setBehavior("")
	n := e.send(conv, "go on").ok(t)
	in, _ := json.Marshal(e.up.sent()[e.up.count()-1]["input"])
	if strings.Count(string(in), ap.ID) != 1 || !strings.Contains(string(in), `"approve":true`) {
		t.Errorf("next request input %s, want the recorded approval", in)
	}
	if _, ok := e.demo.State().Forecasts["Oslo"]; ok {
		t.Errorf("the approved tool did not run with the next message: %v", n.names())
	}
}

func TestChat_NewMessageWhilePendingDeniesTheRequests(t *testing.T) {
	e := newAPI(t)
	e.askFor("delete_forecast")
	_, conv, ap := e.askToDeleteOslo()

	n := e.send(conv, "never mind, what is the weather?").ok(t)
	if d := one[decisionEvent](t, n, "decision.recorded"); d.ApprovalRequestID != ap.ID || d.State != "superseded" {
		t.Errorf("decision %+v", d)
	}
	req := e.up.sent()[e.up.count()-1]
	in, _ := json.Marshal(req["input"])
	if !strings.Contains(string(in), ap.ID) || !strings.Contains(string(in), `"approve":false`) ||
		!strings.Contains(string(in), "new message") || !strings.Contains(string(in), "never mind") {
		t.Errorf("request input %s: want the denial and the message together", in)
	}
	if _, ok := e.demo.State().Forecasts["Oslo"]; !ok {
		t.Error("a superseded request ran")
	}
	late := e.decide(conv, ap.ID, true, nil)
	if late.status != 409 || !strings.Contains(string(late.body), "approval_superseded") {
		t.Errorf("late decision: %d %s", late.status, late.body)
	}
}

func TestChat_MessageWhileStreamingConflictsAndCancelStops(t *testing.T) {
	e := newAPI(t)
	e.createDemo("demo")
	e.up.setBehavior("event-delay=200ms")
	ctx := context.Background()
	res := e.open(ctx, "/api/responses", map[string]any{"input": "tell me a long story"})
	defer res.Body.Close()
	evs, _ := parseSSE(t, res.Body, func(ev sseEvent) bool { return ev.Name == "conversation" })
	var conv convEvent
	_ = json.Unmarshal(evs[len(evs)-1].Data, &conv)

	busy := e.send(conv.ConversationID, "and another thing")
	if busy.status != 409 || !strings.Contains(string(busy.body), "turn_in_progress") {
		t.Errorf("message while streaming: %d %s", busy.status, busy.body)
	}
	e.must(202, "POST", "/api/conversations/"+conv.ConversationID+"/cancel", nil, nil)
	rest, _ := parseSSE(t, res.Body, nil)
	if len(rest) == 0 || rest[len(rest)-1].Name != "error" || !strings.Contains(string(rest[len(rest)-1].Data), `"cancelled"`) {
		t.Fatalf("after cancel: %v", rest)
	}
	tr := waitIdle(t, e, conv.ConversationID)
	if tr.Conversation.LastResponseID != nil {
		t.Error("a cancelled turn advanced the conversation")
	}
	e.up.setBehavior("")
	e.send(conv.ConversationID, "hello again").ok(t)
	if r := e.call("POST", "/api/conversations/"+conv.ConversationID+"/cancel", nil); r.status != 409 {
		t.Errorf("cancel with nothing running: %d %s", r.status, r.body)
	}
}

// The provider forgot the conversation's last response (a new emulator
// behind the same URL): the message is answered from Toolgate's own
// transcript, a notice says so, and the request left pending expires. The
// transcript read back (checked against docs/openapi.yaml) holds both.
func TestChat_LostPreviousResponseGoesOnFromTheTranscript(t *testing.T) {
	e := newAPI(t)
	e.askFor("delete_forecast")
	_, conv, ap := e.askToDeleteOslo()
	e.up.replace(t)
	s := e.send(conv, "hello again").ok(t)
	type notice struct {
		Item struct {
			Type   string `json:"type"`
			Notice struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"notice"`
		} `json:"item"`
	}
	if n := one[notice](t, s, "notice"); n.Item.Type != "notice" || n.Item.Notice.Code != "provider_state_lost" || n.Item.Notice.Message == "" {
		t.Errorf("notice %+v", n)
	}
	var expired bool
	for _, d := range all[decisionEvent](t, s, "decision.recorded") {
		expired = expired || d.ApprovalRequestID == ap.ID && d.State == "expired" && d.Reason != nil
	}
	if !expired {
		t.Errorf("no decision.recorded says %s expired: %v", ap.ID, s.names())
	}
	tr := e.transcript(conv)
	var kinds []string
	for _, it := range tr.Items {
		kinds = append(kinds, it.Type)
		if it.Type == "mcp_approval_request" && (it.Approval == nil || it.Approval.State != "expired") {
			t.Errorf("approval request %+v, want expired", it.Approval)
		}
	}
	if !slices.Contains(kinds, "notice") || tr.Conversation.LastResponseID == nil || len(tr.Pending) != 0 {
		t.Errorf("transcript %v, last response %v, %d pending", kinds, tr.Conversation.LastResponseID, len(tr.Pending))
	}
	if _, ok := e.demo.State().Forecasts["Oslo"]; !ok {
		t.Error("the request of the lost response ran")
	}
}

func TestChat_HeartbeatsKeepIdleStreamsOpen(t *testing.T) {
	e := newAPIWith(t, envOptions{heartbeat: 40 * time.Millisecond})
	e.createDemo("demo")
	s := e.send("", "[emulator: first-event-delay=300ms] hello").ok(t)
	if s.pings < 4 {
		t.Errorf("%d heartbeats in 300 ms at 40 ms intervals", s.pings)
	}
	ids := map[string]bool{}
	for _, ev := range s.events {
		if ev.ID == "" || ids[ev.ID] {
			t.Errorf("event %s has id %q (missing or repeated)", ev.Name, ev.ID)
		}
		ids[ev.ID] = true
	}
	if got := s.header.Get("Cache-Control"); got != "no-store" {
		t.Errorf("Cache-Control %q", got)
	}
}

func TestChat_SecretArgumentsAreRedacted(t *testing.T) {
	e := newAPI(t)
	e.askFor("send_alert")
	s := e.send("", `send_alert {"city": "Oslo", "message": "storm", "auth": {"api_key": "sk-live-123"}, "password": "hunter2"}`).ok(t)
	ap := one[approval](t, s, "approval.required")
	raw := string(ap.Arguments)
	if strings.Contains(raw, "sk-live-123") || strings.Contains(raw, "hunter2") || !strings.Contains(raw, "storm") {
		t.Errorf("arguments shown: %s", raw)
	}
	if strings.Join(ap.Redacted, ",") != "auth,password" {
		t.Errorf("redacted %v", ap.Redacted)
	}
	for _, it := range e.transcript(s.conv(t)).Items {
		if it.Type == "user_message" {
			continue // the person's own words are theirs to see
		}
		if b, _ := json.Marshal(it); strings.Contains(string(b), "hunter2") || strings.Contains(string(b), "sk-live-123") {
			t.Errorf("transcript item shows a secret: %s", b)
		}
	}
}

func TestChat_FollowUpCutBeforeAnyEventIsNeverSentAgain(t *testing.T) {
	e := newAPI(t)
	e.askFor("delete_forecast")
	_, conv, ap := e.askToDeleteOslo()
	e.up.setBehavior("cut, at=0")
	f := e.decide(conv, ap.ID, true, nil)
	te := one[turnError](t, f, "error")
	if !strings.Contains(te.Message, "will not be sent again") {
		t.Errorf("error %+v does not say the decision may have been delivered", te)
	}
	// The emulator runs the approved call even though it cut the stream:
	// the next message must not approve it a second time.
	e.up.setBehavior("")
	e.send(conv, "go on").ok(t)
	in, _ := json.Marshal(e.up.sent()[e.up.count()-1]["input"])
	if !strings.Contains(string(in), ap.ID) || strings.Contains(string(in), `"approve":true`) {
		t.Errorf("next request input %s: want the request closed with a denial", in)
	}
	if n := e.demo.State().Calls["delete_forecast"]; n > 1 {
		t.Errorf("delete_forecast ran %d times", n)
	}
}

func TestChat_ToolBlockedSinceItAskedCannotBeApproved(t *testing.T) {
	e := newAPI(t)
	e.askFor("delete_forecast")
	_, conv, ap := e.askToDeleteOslo()
	e.setPolicy("demo", "delete_forecast", "blocked")
	if r := e.decide(conv, ap.ID, true, nil); r.status != 409 || !strings.Contains(string(r.body), "tool_blocked") {
		t.Fatalf("approving a blocked tool: %d %s", r.status, r.body)
	}
	if tr := e.transcript(conv); len(tr.Pending) != 1 {
		t.Fatal("the refused approval changed the request")
	}
	e.decide(conv, ap.ID, false, nil).ok(t)
	if _, ok := e.demo.State().Forecasts["Oslo"]; !ok {
		t.Error("the blocked tool ran")
	}
}

func TestChat_RetrySendsWhatFailedOnce(t *testing.T) {
	e := newAPI(t)
	e.askFor("delete_forecast")
	_, conv, ap := e.askToDeleteOslo()
	if r := e.stream("/api/conversations/"+conv+"/retry", map[string]any{}); r.status != 409 {
		t.Errorf("retry with nothing failed: %d %s", r.status, r.body)
	}

	// A decision whose follow-up failed before reaching the model.
	e.up.setBehavior("status=503, retry-after=0")
	one[turnError](t, e.decide(conv, ap.ID, true, nil), "error")
	e.up.setBehavior("")
	r := e.stream("/api/conversations/"+conv+"/retry", map[string]any{}).ok(t)
	if _, ok := e.demo.State().Forecasts["Oslo"]; ok || one[convEvent](t, r, "conversation").Kind != "decisions" {
		t.Errorf("retry did not send the approval: %v", r.names())
	}

	// A message whose turn failed: sent again, not stored twice.
	e.up.setBehavior("status=503, retry-after=0")
	one[turnError](t, e.send(conv, "what now?"), "error")
	e.up.setBehavior("")
	e.stream("/api/conversations/"+conv+"/retry", map[string]any{}).ok(t)
	n := 0
	for _, it := range e.transcript(conv).Items {
		if it.Type == "user_message" && it.Text == "what now?" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the retried message is in the transcript %d times", n)
	}
	if r := e.stream("/api/conversations/"+conv+"/retry", map[string]any{}); r.status != 409 {
		t.Errorf("second retry: %d %s", r.status, r.body)
	}
}

func TestChat_RestartSupersedesRequestsOfUnfinishedResponses(t *testing.T) {
	e := newAPI(t)
	e.askFor("delete_forecast")
	_, conv, ap := e.askToDeleteOslo()
	// As if the process died after the approval request arrived and before
	// its response completed.
	if _, err := e.pool.Exec(context.Background(),
		`UPDATE conversations SET last_response_id = NULL, active_turn = 'turn_dead' WHERE id = $1`, conv); err != nil {
		t.Fatal(err)
	}
	e.start()
	tr := e.transcript(conv)
	if len(tr.Pending) != 0 || tr.Conversation.Streaming {
		t.Fatalf("after restart: pending %+v, streaming %v", tr.Pending, tr.Conversation.Streaming)
	}
	if r := e.decide(conv, ap.ID, true, nil); r.status != 409 || !strings.Contains(string(r.body), "approval_superseded") {
		t.Errorf("deciding an orphaned request: %d %s", r.status, r.body)
	}
	e.send(conv, "hello").ok(t)
}

func TestChat_TextCutShortIsKeptAsPartial(t *testing.T) {
	e := newAPI(t)
	e.createDemo("demo")
	s := e.send("", "[emulator: cut, at=12] hello there, tell me about the tools")
	var seen string
	for _, d := range all[struct {
		Delta string `json:"delta"`
	}](t, s, "text.delta") {
		seen += d.Delta
	}
	if seen == "" {
		t.Fatalf("no text before the cut: %v", s.names())
	}
	tr := e.transcript(s.conv(t))
	var partial *item
	for _, it := range tr.Items {
		if it.Type == "message" {
			partial = &it
		}
	}
	if partial == nil || partial.Text != seen || !partial.Partial {
		t.Errorf("transcript message %+v, want the %q that arrived, marked partial", partial, seen)
	}
}

func TestChat_GatewayErrorOnAFollowUpIsTreatedAsMaybeDelivered(t *testing.T) {
	e := newAPI(t)
	e.askFor("delete_forecast")
	_, conv, ap := e.askToDeleteOslo()
	e.up.setBehavior("status=502")
	one[turnError](t, e.decide(conv, ap.ID, true, nil), "error")
	e.up.setBehavior("")
	e.send(conv, "go on").ok(t)
	in, _ := json.Marshal(e.up.sent()[e.up.count()-1]["input"])
	if strings.Contains(string(in), `"approve":true`) {
		t.Errorf("after a 502 the approval was sent again: %s", in)
	}
}

// The follow-up's stream breaks after response.created; the provider went
// on and stored the response. Toolgate reads it back: the approved call ran
// once, and the next message goes on from that response, never sending the
// approval again.
func TestChat_FollowUpCutAfterItStartedIsNeverSentAgain(t *testing.T) {
	e := newAPI(t)
	e.askFor("delete_forecast")
	_, conv, ap := e.askToDeleteOslo()
	asked := e.transcript(conv).Conversation.LastResponseID
	e.up.setBehavior("cut, at=2") // after response.created and response.in_progress
	if te := one[turnError](t, e.decide(conv, ap.ID, true, nil), "error"); te.Code != "upstream_cut" || !strings.Contains(te.Message, "read the response back") {
		t.Fatalf("error %+v, want upstream_cut saying the response was read back", te)
	}
	tr := e.transcript(conv)
	followUp := tr.Conversation.LastResponseID
	if followUp == nil || asked == nil || *followUp == *asked || tr.Conversation.Streaming {
		t.Fatalf("last response %s (asking: %s), streaming %v: want the follow-up read back", deref(followUp), deref(asked), tr.Conversation.Streaming)
	}
	e.up.setBehavior("")
	e.send(conv, "go on").ok(t)
	last := e.up.sent()[e.up.count()-1]
	in, _ := json.Marshal(last["input"])
	if strings.Contains(string(in), `"approve":true`) || last["previous_response_id"] != *followUp {
		t.Errorf("next request (after %v) input %s: want it to go on from the follow-up read back (%s), without the approval", last["previous_response_id"], in, *followUp)
	}
	if n := e.demo.State().Calls["delete_forecast"]; n != 1 {
		t.Errorf("delete_forecast ran %d times, want once", n)
	}
}
