package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/conversation/callgate"
	"github.com/toolgate/toolgate/internal/conversation/engine"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/policy"
)

// endCase drives a turn, through the real engine, to one way of ending
// without completing: a terminal error or failed event with Code.
// TestEndCodes_EveryCodeHasACase makes sure every code the engine's source
// can end a turn with has one.
type endCase struct {
	name      string
	code      string
	failed    bool // ends with a failed event (the response failed upstream), not an error event
	retryable bool
	opts      engineOptions
	// start prepares what the case needs (faults included) and starts the turn.
	start func(e *harness) *engine.Turn
	// stop, when set, stops the running turn from outside once the model's
	// text streams.
	stop func(e *harness, turn *engine.Turn)
	// check, when set, checks what else the case promises.
	check func(t *testing.T, e *harness, turn *engine.Turn, rec *recorder, tr conversation.Transcript)
}

// streaming is a behavior whose answer streams two text deltas, then stalls
// until the turn is stopped.
const streaming = "deltas=4; stall=1m; at=12"

var endCases = []endCase{
	{name: "the tool policies cannot be read", code: "policy_unavailable", retryable: true,
		start: func(e *harness) *engine.Turn {
			turn := e.message(ana, "", "hello")
			e.exec(`ALTER TABLE settings RENAME TO settings_gone`)
			return turn
		},
		check: func(t *testing.T, e *harness, _ *engine.Turn, _ *recorder, _ conversation.Transcript) {
			if n := e.up.count(); n != 0 {
				t.Errorf("%d requests reached the model, want none", n)
			}
		}},
	{name: "what the model sent cannot be stored", code: "storage_failed", retryable: true,
		start: func(e *harness) *engine.Turn {
			turn := e.message(ana, "", "hello")
			e.exec(`ALTER TABLE conversation_items ADD CONSTRAINT no_answers CHECK (type <> 'message') NOT VALID`)
			return turn
		},
		check: func(t *testing.T, _ *harness, _ *engine.Turn, rec *recorder, tr conversation.Transcript) {
			if it := find(tr.Items, conversation.ItemMessage); it != nil {
				t.Errorf("the answer that could not be stored is in the transcript: %+v", it)
			}
			if rec.count(conversation.EventNameTextDelta) == 0 {
				t.Error("the turn stopped before the answer streamed: the fault is not where this case puts it")
			}
		}},
	{name: "the response failed after asking", code: "response_failed", failed: true,
		start: func(e *harness) *engine.Turn {
			e.up.setBehavior("failed=server_error")
			return e.message(ana, "", `delete_forecast {"city": "Berlin"}`)
		},
		check: func(t *testing.T, e *harness, turn *engine.Turn, rec *recorder, tr conversation.Transcript) {
			a, ok := rec.first(conversation.EventNameApproval).(conversation.Approval)
			if !ok {
				t.Fatalf("the model did not ask before failing: %v", rec.names())
			}
			// A response that failed cannot be continued: what it asked is superseded.
			stored := e.approval(turn.ConversationID(), a.ID)
			if stored.State != conversation.Superseded || !strings.Contains(deref(stored.DecisionReason), "(response_failed)") {
				t.Errorf("its approval request is %s (%q), want superseded saying why", stored.State, deref(stored.DecisionReason))
			}
		}},
	{name: "the response stopped incomplete", code: "response_incomplete", failed: true,
		start: func(e *harness) *engine.Turn {
			e.up.setBehavior("incomplete=max_output_tokens")
			return e.message(ana, "", "hello")
		},
		check: func(t *testing.T, _ *harness, _ *engine.Turn, rec *recorder, _ conversation.Transcript) {
			if f, _ := rec.lastData().(conversation.FailedEvent); !strings.Contains(f.Message, "max_output_tokens") {
				t.Errorf("failed event %+v does not say why", f)
			}
		}},
	{name: "the provider sent an error event", code: "upstream_error", retryable: true,
		start: func(e *harness) *engine.Turn {
			e.up.setBehavior("error-event=server_error")
			return e.message(ana, "", "hello")
		}},
	{name: "the server shuts down", code: "server_shutdown", retryable: true,
		start: func(e *harness) *engine.Turn {
			e.up.setBehavior(streaming)
			return e.message(ana, "", "hello")
		},
		stop: func(e *harness, _ *engine.Turn) { e.chat.Stop(e.t.Context()) },
		check: func(t *testing.T, _ *harness, _ *engine.Turn, _ *recorder, tr conversation.Transcript) {
			wantPartial(t, tr)
		}},
	{name: "an admin disables the account", code: "account_disabled",
		start: func(e *harness) *engine.Turn {
			e.up.setBehavior(streaming)
			return e.message(ana, "", "hello")
		},
		stop: func(e *harness, _ *engine.Turn) {
			if n := e.chat.StopUser(ben.ID); n != 0 {
				e.t.Errorf("StopUser(ben) stopped %d turns, want none of ana's", n)
			}
			if n := e.chat.StopUser(ana.ID); n != 1 {
				e.t.Errorf("StopUser(ana) stopped %d turns, want 1", n)
			}
		},
		check: func(t *testing.T, _ *harness, _ *engine.Turn, _ *recorder, tr conversation.Transcript) {
			wantPartial(t, tr)
		}},
	{name: "the person stops the batch", code: conversation.CodeStoppedByUser,
		start: func(e *harness) *engine.Turn {
			conv, a := e.asking(ana, "")
			no, why := false, "not now"
			turn, err := e.chat.StartDecisions(as(e.t.Context(), ana), conv,
				[]conversation.Decision{{ApprovalRequestID: a.ID, Approve: &no, Reason: &why, Stop: true}})
			if err != nil {
				e.t.Fatalf("stop: %v", err)
			}
			return turn
		},
		check: func(t *testing.T, e *harness, _ *engine.Turn, rec *recorder, tr conversation.Transcript) {
			if n := e.up.count(); n != 1 {
				t.Errorf("%d requests reached the model, want 1 (the message that asked): a stop sends no follow-up", n)
			}
			d, _ := rec.first(conversation.EventNameDecision).(conversation.DecisionEvent)
			if d.State != conversation.Denied || !d.Stopped || deref(d.Reason) != "not now" {
				t.Errorf("decision %+v; want denied, stopped, with the person's reason", d)
			}
		}},
	{name: "the person cancels", code: "cancelled",
		start: func(e *harness) *engine.Turn {
			e.up.setBehavior(streaming)
			return e.message(ana, "", "hello")
		},
		stop: func(e *harness, turn *engine.Turn) {
			if err := e.chat.Cancel(as(e.t.Context(), ana), turn.ConversationID()); err != nil {
				e.t.Errorf("Cancel: %v", err)
			}
		},
		check: func(t *testing.T, _ *harness, _ *engine.Turn, _ *recorder, tr conversation.Transcript) {
			wantPartial(t, tr)
		}},
	{name: "the replica running the turn stops renewing its lease", code: "interrupted", retryable: true,
		start: func(e *harness) *engine.Turn {
			e.up.setBehavior(streaming)
			return e.message(ana, "", "hello")
		},
		stop: func(e *harness, turn *engine.Turn) {
			// As if replica a had stopped: its lease runs out, and replica b,
			// sweeping, closes the turn from its stored events.
			e.exec(`UPDATE conversations SET lease_expires_at = now() - interval '1 second'`)
			if n := e.janitor(e.replica("rep_b")).Sweep(e.t.Context()); n != 1 {
				e.t.Errorf("replica b closed %d turns, want 1", n)
			}
			// Replica a, still running it, learns at its next renewal that
			// the lease is gone and stops.
			e.chat.SetReplica("", time.Second)
			ctx, cancel := context.WithCancel(context.Background())
			e.t.Cleanup(cancel)
			e.janitor(e.chat).Start(ctx)
		},
		check: func(t *testing.T, e *harness, turn *engine.Turn, _ *recorder, tr conversation.Transcript) {
			wantPartial(t, tr)
			n := 0
			for _, it := range tr.Items {
				if it.Type == conversation.ItemError {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%d error items; want the one replica b wrote, not a second from replica a", n)
			}
		}},
	{name: "the provider cannot be reached", code: conversation.CodeUnreachable, retryable: true,
		opts: engineOptions{unreachable: true},
		start: func(e *harness) *engine.Turn {
			return e.message(ana, "", "hello")
		}},
	{name: "the provider rate limits past the retries", code: "upstream_rate_limited", retryable: true,
		start: func(e *harness) *engine.Turn {
			e.up.setBehavior("status=429; retry-after=0")
			return e.message(ana, "", "hello")
		},
		check: func(t *testing.T, e *harness, _ *engine.Turn, _ *recorder, _ conversation.Transcript) {
			if n := e.up.count(); n != 3 {
				t.Errorf("%d requests, want 3 (a message retries twice)", n)
			}
		}},
	{name: "a request with more servers than the provider accepts is not sent", code: conversation.CodeRequestTooLarge,
		opts: engineOptions{maxTools: 1},
		start: func(e *harness) *engine.Turn {
			if _, err := e.policies.Servers.CreateServer(as(e.t.Context(), admin), policy.NewServer{Label: "demo2", URL: e.demoURL}); err != nil {
				e.t.Fatal(err)
			}
			// Offered whatever its discovery made of it on a busy machine:
			// reachable, so not left out of the request.
			if _, err := e.pool.Exec(e.t.Context(), `UPDATE mcp_servers SET health_status = 'ok', health_since = NULL, health_error = NULL`); err != nil {
				e.t.Fatal(err)
			}
			return e.message(ana, "", "hello")
		},
		check: func(t *testing.T, e *harness, _ *engine.Turn, rec *recorder, _ conversation.Transcript) {
			if n := e.up.count(); n != 0 {
				t.Errorf("%d requests reached the provider, want none", n)
			}
			if te, _ := rec.lastData().(conversation.TurnError); !strings.Contains(te.Message, "2 MCP tool entries") ||
				!strings.Contains(te.Message, "disable servers") {
				t.Errorf("error %q does not say how many entries and what to do", te.Message)
			}
		}},
	{name: "the provider's account is out of quota", code: "upstream_quota_exceeded",
		start: func(e *harness) *engine.Turn {
			e.up.setBehavior("quota")
			return e.message(ana, "", "hello")
		},
		check: func(t *testing.T, e *harness, _ *engine.Turn, rec *recorder, _ conversation.Transcript) {
			if n := e.up.count(); n != 1 {
				t.Errorf("%d requests, want 1: waiting does not bring quota back, so it is never retried", n)
			}
			if te, _ := rec.lastData().(conversation.TurnError); !strings.Contains(te.Message, "plan and billing") {
				t.Errorf("error %q does not say to check the account's plan and billing", te.Message)
			}
		}},
	{name: "the provider sends nothing after the request", code: conversation.CodeFirstByteTimeout, retryable: true,
		opts: engineOptions{firstByte: 300 * time.Millisecond, idle: time.Minute},
		start: func(e *harness) *engine.Turn {
			e.up.setBehavior("stall=1m")
			return e.message(ana, "", "hello")
		},
		check: func(t *testing.T, e *harness, _ *engine.Turn, rec *recorder, _ conversation.Transcript) {
			if n := e.up.count(); n != 1 {
				t.Errorf("%d requests, want 1: a timeout is not retried on its own", n)
			}
			if te, _ := rec.lastData().(conversation.TurnError); !strings.Contains(te.Message, "300ms") || !strings.Contains(te.Message, "retrying may help") {
				t.Errorf("error %q does not say how long it waited and that retrying may help", te.Message)
			}
		}},
	{name: "a slow but steady provider is not cut", code: conversation.CodeFirstByteTimeout, retryable: true,
		opts: engineOptions{firstByte: 300 * time.Millisecond, idle: 300 * time.Millisecond},
		start: func(e *harness) *engine.Turn {
			// Each event comes within the idle timeout, the whole answer
			// takes far longer than both: the turn completes, then the next
			// request stalls before its first event.
			e.up.setBehavior("event-delay=100ms; deltas=6")
			conv, _ := e.send(ana, "", "hello")
			e.up.setBehavior("stall=1m")
			return e.message(ana, conv, "again")
		}},
	{name: "the provider goes silent mid-answer", code: conversation.CodeIdleTimeout, retryable: true,
		opts: engineOptions{firstByte: time.Minute, idle: 300 * time.Millisecond},
		start: func(e *harness) *engine.Turn {
			e.up.setBehavior(streaming)
			return e.message(ana, "", "hello")
		},
		check: func(t *testing.T, _ *harness, _ *engine.Turn, rec *recorder, tr conversation.Transcript) {
			if te, _ := rec.lastData().(conversation.TurnError); !strings.Contains(te.Message, "300ms") || !strings.Contains(te.Message, "retrying may help") {
				t.Errorf("error %q does not say how long it waited and that retrying may help", te.Message)
			}
			wantPartial(t, tr)
		}},
	{name: "the provider fails", code: "upstream_unavailable", retryable: true,
		start: func(e *harness) *engine.Turn {
			e.up.setBehavior("status=503; retry-after=0")
			return e.message(ana, "", "hello")
		}},
	{name: "a gateway error on decisions that may have been delivered", code: "upstream_unavailable", retryable: true,
		start: func(e *harness) *engine.Turn {
			conv, a := e.asking(ana, "")
			e.up.setBehavior("status=502")
			turn, err := e.decide(ana, conv, a.ID, true)
			if err != nil {
				e.t.Fatal(err)
			}
			return turn
		},
		check: func(t *testing.T, e *harness, turn *engine.Turn, rec *recorder, tr conversation.Transcript) {
			if te, _ := rec.lastData().(conversation.TurnError); !strings.Contains(te.Message, "may have reached") {
				t.Errorf("error %q does not say the decisions may have been delivered", te.Message)
			}
			var answered *string
			if err := e.pool.QueryRow(t.Context(), `SELECT answered_in FROM approval_requests`).Scan(&answered); err != nil {
				t.Fatal(err)
			}
			if deref(answered) != "unknown" {
				t.Errorf("answered_in = %v, want unknown: the decision must never be sent again", answered)
			}
			if n := e.up.count(); n != 2 {
				t.Errorf("%d requests, want 2: a follow-up is never retried", n)
			}
		}},
	{name: "the provider cannot list an MCP server's tools", code: "mcp_server_failed", retryable: true,
		start: func(e *harness) *engine.Turn {
			// The 424 names demo, the request is sent once more without it,
			// and that one fails on demo-2: a request is retried only once.
			e.register("demo-2", newMCPSite(e.t).url())
			e.up.setBehavior("mcp-error=list")
			return e.message(ana, "", "hello")
		},
		check: func(t *testing.T, e *harness, _ *engine.Turn, rec *recorder, _ conversation.Transcript) {
			if n := e.up.count(); n != 2 {
				t.Errorf("%d requests, want 2: the first without the server its 424 named, then no more", n)
			}
			wantNotice(t, rec.notices(), conversation.NoticeServerDropped, "demo")
		}},
	{name: "the provider refuses the request", code: "upstream_rejected",
		start: func(e *harness) *engine.Turn {
			e.up.setBehavior("status=401")
			return e.message(ana, "", "hello")
		}},
	{name: "the connection breaks off", code: "upstream_cut", retryable: true,
		start: func(e *harness) *engine.Turn {
			e.up.setBehavior("deltas=4; cut; at=12")
			return e.message(ana, "", "hello")
		},
		check: func(t *testing.T, _ *harness, _ *engine.Turn, rec *recorder, tr conversation.Transcript) {
			if te, _ := rec.lastData().(conversation.TurnError); !strings.Contains(te.Message, "broke off") {
				t.Errorf("error %q does not say the connection broke off", te.Message)
			}
			wantPartial(t, tr)
		}},
	{name: "the stream ends without a terminal event", code: "upstream_cut", retryable: true,
		start: func(e *harness) *engine.Turn {
			e.up.endStreamsAfter(12)
			return e.message(ana, "", "hello")
		},
		check: func(t *testing.T, _ *harness, _ *engine.Turn, rec *recorder, tr conversation.Transcript) {
			if te, _ := rec.lastData().(conversation.TurnError); !strings.Contains(te.Message, "ended without saying") {
				t.Errorf("error %q does not say the stream ended unfinished", te.Message)
			}
			wantPartial(t, tr)
		}},
}

// Every way a turn can end without completing, through the real engine:
// the stream ends with exactly one terminal event carrying the code, the
// transcript ends with an error item saying the same, the conversation no
// longer runs a turn and stays at the last response that completed, and
// nothing is left pending.
func TestEndCodes(t *testing.T) {
	for _, tc := range endCases {
		t.Run(tc.code+"/"+tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEngine(t, tc.opts)
			turn := tc.start(e)
			conv := turn.ConversationID()
			before := e.transcript(ana, conv).Conversation.LastResponseID

			rec := newRecorder()
			done := make(chan struct{})
			go func() {
				defer close(done)
				turn.Run(as(context.Background(), ana), rec)
			}()
			if tc.stop != nil {
				rec.waitFor(t, conversation.EventNameTextDelta)
				tc.stop(e, turn)
			}
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatalf("the turn did not end within 30s; events %v", rec.names())
			}

			terminal := conversation.EventNameError
			if tc.failed {
				terminal = conversation.EventNameFailed
			}
			n := rec.count(conversation.EventNameError) + rec.count(conversation.EventNameFailed) + rec.count(conversation.EventNameCompleted)
			if rec.last() != terminal || n != 1 {
				t.Fatalf("events %v; want exactly one terminal event, %s, last", rec.names(), terminal)
			}
			switch ev := rec.lastData().(type) {
			case conversation.TurnError:
				if ev.Code != tc.code || ev.Retryable != tc.retryable || ev.Message == "" {
					t.Errorf("error event %+v; want code %s, retryable %v, a message", ev, tc.code, tc.retryable)
				}
			case conversation.FailedEvent:
				if ev.Code != tc.code || ev.ResponseID == "" || ev.Message == "" {
					t.Errorf("failed event %+v; want code %s, the response, a message", ev, tc.code)
				}
			default:
				t.Fatalf("terminal event data %T", ev)
			}

			tr := e.transcript(ana, conv)
			last := tr.Items[len(tr.Items)-1]
			if last.Type != conversation.ItemError || last.Error == nil || last.Error.Code != tc.code || last.Error.Retryable != tc.retryable {
				t.Errorf("last transcript item %+v (%+v); want the error %s, retryable %v", last, last.Error, tc.code, tc.retryable)
			}
			if c := tr.Conversation; c.Streaming || deref(c.LastResponseID) != deref(before) {
				t.Errorf("conversation streaming %v at response %q; want no turn, still at %q", c.Streaming, deref(c.LastResponseID), deref(before))
			}
			if len(tr.Pending) != 0 {
				t.Errorf("%d approval requests left pending", len(tr.Pending))
			}
			err := e.chat.Cancel(as(t.Context(), ana), conv)
			wantCode(t, "Cancel after the end", err, apperr.Conflict, "no_turn_running")
			if tc.check != nil {
				tc.check(t, e, turn, rec, tr)
			}
		})
	}
}

// refusalCase drives a request to start (or act on) a turn, through the
// real engine, to one refusal: an apperr error with Code.
type refusalCase struct {
	name string
	code string
	kind apperr.Kind
	opts engineOptions
	do   func(e *harness) error
}

var refusalCases = []refusalCase{
	{name: "no signed-in user", code: "no_caller", kind: apperr.Internal,
		do: func(e *harness) error {
			_, err := e.chat.StartMessage(context.Background(), "", "hello")
			return err
		}},
	{name: "an empty message", code: "invalid_input", kind: apperr.Invalid,
		do: func(e *harness) error {
			_, err := e.chat.StartMessage(as(e.t.Context(), ana), "", " \x00 ")
			return err
		}},
	{name: "a title too long", code: "invalid_title", kind: apperr.Invalid,
		do: func(e *harness) error {
			_, err := e.chat.Book().Create(as(e.t.Context(), ana), strings.Repeat("t", conversation.MaxTitleLen+1))
			return err
		}},
	{name: "a list too long", code: "invalid_limit", kind: apperr.Invalid,
		do: func(e *harness) error {
			_, err := e.chat.Book().List(as(e.t.Context(), ana), 501)
			return err
		}},
	{name: "a message while a turn runs", code: "turn_in_progress", kind: apperr.Conflict,
		do: func(e *harness) error {
			turn := e.message(ana, "", "hello") // prepared, not run: it stays running
			_, err := e.chat.StartMessage(as(e.t.Context(), ana), turn.ConversationID(), "again")
			return err
		}},
	{name: "too many turns at once", code: "too_many_turns", kind: apperr.TooMany,
		opts: engineOptions{limits: conversation.Limits{MaxConcurrentTurns: 1}},
		do: func(e *harness) error {
			e.message(ana, "", "hello")
			_, err := e.chat.StartMessage(as(e.t.Context(), ana), "", "elsewhere")
			return err
		}},
	{name: "a decision's follow-up with too many turns at once", code: "too_many_turns", kind: apperr.TooMany,
		opts: engineOptions{limits: conversation.Limits{MaxConcurrentTurns: 1}},
		do: func(e *harness) error {
			conv, a := e.asking(ana, "")
			e.message(ana, "", "elsewhere") // prepared, not run: it stays running
			_, err := e.decide(ana, conv, a.ID, true)
			return err
		}},
	{name: "too many messages in a minute", code: "too_many_messages", kind: apperr.TooMany,
		opts: engineOptions{limits: conversation.Limits{MessagesPerMinute: 1}},
		do: func(e *harness) error {
			conv, _ := e.send(ana, "", "hello")
			_, err := e.chat.StartMessage(as(e.t.Context(), ana), conv, "again")
			return err
		}},
	{name: "cancel with no turn running", code: "no_turn_running", kind: apperr.Conflict,
		do: func(e *harness) error {
			conv, _ := e.send(ana, "", "hello")
			return e.chat.Cancel(as(e.t.Context(), ana), conv)
		}},
	{name: "retry after a turn that completed", code: "nothing_to_retry", kind: apperr.Conflict,
		do: func(e *harness) error {
			conv, _ := e.send(ana, "", "hello")
			_, err := e.chat.StartRetry(as(e.t.Context(), ana), conv)
			return err
		}},
	{name: "no decisions", code: "invalid_decisions", kind: apperr.Invalid,
		do: func(e *harness) error {
			conv, _ := e.asking(ana, "")
			_, err := e.chat.StartDecisions(as(e.t.Context(), ana), conv, nil)
			return err
		}},
	{name: "a stop that approves", code: "invalid_stop", kind: apperr.Invalid,
		do: func(e *harness) error {
			conv, a := e.asking(ana, "")
			yes := true
			_, err := e.chat.StartDecisions(as(e.t.Context(), ana), conv, []conversation.Decision{{ApprovalRequestID: a.ID, Approve: &yes, Stop: true}})
			return err
		}},
	{name: "a decision without approve", code: "invalid_decision", kind: apperr.Invalid,
		do: func(e *harness) error {
			conv, a := e.asking(ana, "")
			_, err := e.chat.StartDecisions(as(e.t.Context(), ana), conv, []conversation.Decision{{ApprovalRequestID: a.ID}})
			return err
		}},
	{name: "a decision on a request that does not exist", code: "approval_not_found", kind: apperr.NotFound,
		do: func(e *harness) error {
			conv, _ := e.asking(ana, "")
			_, err := e.decide(ana, conv, "mcpr_missing", true)
			return err
		}},
	{name: "a correction that does not fit the tool's schema", code: "invalid_correction", kind: apperr.Invalid,
		do: func(e *harness) error {
			conv, a := e.asking(ana, "")
			_, err := e.denyWith(conv, a.ID, `{"city": 5}`, "")
			return err
		}},
	{name: "a second decision", code: "approval_already_decided", kind: apperr.Conflict,
		do: func(e *harness) error {
			conv, a := e.asking(ana, "")
			turn, err := e.decide(ana, conv, a.ID, false)
			if err != nil {
				e.t.Fatal(err)
			}
			e.run(ana, turn)
			_, err = e.decide(ana, conv, a.ID, true)
			return err
		}},
	{name: "a decision on a request a new message superseded", code: "approval_superseded", kind: apperr.Conflict,
		do: func(e *harness) error {
			conv, a := e.asking(ana, "")
			e.send(ana, conv, "never mind")
			_, err := e.decide(ana, conv, a.ID, true)
			return err
		}},
	{name: "a decision after the request's expires_at, before any sweep ran", code: "approval_expired", kind: apperr.Conflict,
		do: func(e *harness) error {
			conv, a := e.asking(ana, "")
			e.exec(`UPDATE approval_requests SET requested_at = clock_timestamp() - interval '30 minutes 1 second'`)
			_, err := e.decide(ana, conv, a.ID, true)
			if got := e.approval(conv, a.ID); got.State != conversation.Expired {
				e.t.Errorf("after the refused decision the request is %s; want expired", got.State)
			}
			return err
		}},
	{name: "a call's result stored twice through the MCP face", code: "call_not_running", kind: apperr.Conflict,
		do: func(e *harness) error {
			g := callgate.New(e.chat.Keeper())
			turn := e.message(ana, "", "hello")
			v, err := g.Admit(e.t.Context(), gateCall(e.t, e, gateway.Claims{ConversationID: turn.ConversationID(), TurnID: turn.ID(),
				ServerLabel: "demo"}, "get_forecast", `{"city": "Oslo"}`))
			if err != nil || !v.Run {
				e.t.Fatalf("Admit: %+v, %v", v, err)
			}
			if err := g.Finish(e.t.Context(), v.CallID, gateway.Result{JSON: []byte(`{"content":[]}`)}); err != nil {
				e.t.Fatal(err)
			}
			return g.Finish(e.t.Context(), v.CallID, gateway.Result{JSON: []byte(`{"content":[]}`)})
		}},
	{name: "approving a tool blocked since it asked", code: "tool_blocked", kind: apperr.Conflict,
		do: func(e *harness) error {
			conv, a := e.asking(ana, "")
			blocked := policy.Blocked
			if _, err := e.policies.Policies.SetPolicy(as(e.t.Context(), admin), "demo", "delete_forecast",
				policy.PolicyChange{Layer: policy.LayerWorkspace, Policy: &blocked}); err != nil {
				e.t.Fatal(err)
			}
			_, err := e.decide(ana, conv, a.ID, true)
			if got := e.approval(conv, a.ID); got.State != conversation.Pending {
				e.t.Errorf("the refused decision was recorded: %s", got.State)
			}
			return err
		}},
	{name: "a grant for a tool an admin locked at Ask", code: "policy_locked", kind: apperr.Forbidden,
		do: func(e *harness) error {
			always := policy.Always
			if _, err := e.policies.Policies.SetPolicy(as(e.t.Context(), admin), "demo", "delete_forecast",
				policy.PolicyChange{Layer: policy.LayerWorkspace, Policy: &always, Locked: ptr(true)}); err != nil {
				e.t.Fatal(err)
			}
			conv, a := e.asking(ana, "")
			approve, scope := true, conversation.ScopeConversation
			_, err := e.chat.StartDecisions(as(e.t.Context(), ana), conv,
				[]conversation.Decision{{ApprovalRequestID: a.ID, Approve: &approve, Scope: &scope}})
			if got := e.approval(conv, a.ID); got.State != conversation.Pending {
				e.t.Errorf("the refused decision was recorded: %s", got.State)
			}
			return err
		}},
	{name: "a choice an admin did not leave the tool", code: "choice_not_allowed", kind: apperr.Forbidden,
		do: func(e *harness) error {
			if _, err := e.policies.Cards.SetApprovalCard(as(e.t.Context(), admin), policy.ApprovalCard{ServerLabel: "demo",
				ToolName: "delete_forecast", Choices: []policy.Choice{policy.ChoiceApproveOnce, policy.ChoiceDeny}}); err != nil {
				e.t.Fatal(err)
			}
			conv, a := e.asking(ana, "")
			approve, scope := true, conversation.ScopeHour
			_, err := e.chat.StartDecisions(as(e.t.Context(), ana), conv,
				[]conversation.Decision{{ApprovalRequestID: a.ID, Approve: &approve, Scope: &scope}})
			if got := e.approval(conv, a.ID); got.State != conversation.Pending {
				e.t.Errorf("the refused decision was recorded: %s", got.State)
			}
			return err
		}},
}

// Every refusal a turn can meet before it starts, through the real engine.
func TestRefusalCodes(t *testing.T) {
	for _, tc := range refusalCases {
		t.Run(tc.code, func(t *testing.T) {
			t.Parallel()
			e := newEngine(t, tc.opts)
			wantCode(t, tc.name, tc.do(e), tc.kind, tc.code)
		})
	}
}

func (e *harness) exec(sql string) {
	e.t.Helper()
	if _, err := e.pool.Exec(e.t.Context(), sql); err != nil {
		e.t.Fatal(err)
	}
}

// approval is one approval request as ana's transcript shows it.
func (e *harness) approval(conv, id string) conversation.Approval {
	e.t.Helper()
	for _, it := range e.transcript(ana, conv).Items {
		if it.Type == conversation.ItemApprovalRequest && it.ID == id && it.Approval != nil {
			return *it.Approval
		}
	}
	e.t.Fatalf("conversation %s has no approval request %s", conv, id)
	return conversation.Approval{}
}

func find(items []conversation.Item, typ string) *conversation.Item {
	for i := range items {
		if items[i].Type == typ {
			return &items[i]
		}
	}
	return nil
}

// wantPartial wants the text that streamed before the turn stopped kept in
// the transcript as a partial message.
func wantPartial(t *testing.T, tr conversation.Transcript) {
	t.Helper()
	it := find(tr.Items, conversation.ItemMessage)
	if it == nil || !it.Partial || it.Text == "" {
		t.Errorf("the text that arrived is not kept as a partial message: %+v", it)
	}
}
