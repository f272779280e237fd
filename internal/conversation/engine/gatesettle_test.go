package engine_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/conversation/callgate"
	"github.com/toolgate/toolgate/internal/gateway"
)

// Whether an approved call ran is known from the MCP face's records
// (MCP_ROUTE=gateway): when the turn that carried an approval ends without
// the provider saying what ran, a call on it that finished ran (the
// approval stays approved, its call holds the result), a call admitted and
// never finished is outcome_unknown (Toolgate stopped between forwarding
// it and storing its result), and no call, or one that never reached the
// server, is not_run. Direct mode keeps outcome_unknown for all of them.

// expireLease makes the turn running in conv look like its replica died.
func expireLease(t *testing.T, e *harness, conv string) {
	t.Helper()
	if _, err := e.pool.Exec(t.Context(), `UPDATE conversations SET lease_expires_at = clock_timestamp() - interval '1 second' WHERE id = $1`, conv); err != nil {
		t.Fatal(err)
	}
}

// A replica dies after claiming the follow-up that carries an approval
// (before it left: the provider never saw it). Another replica closes the
// turn: in gateway mode the approval is not_run (no call passed the face),
// and the conversation goes on: the model is told it did not run and can
// ask again. In direct mode it stays outcome_unknown, as before.
func TestGateSettle_FollowUpThatNeverReachedTheProviderIsNotRun(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		route bool
		want  string
	}{{true, conversation.NotRun}, {false, conversation.OutcomeUnknown}} {
		e := newEngine(t, engineOptions{})
		e.chat.SetRoute(tc.route)
		conv, a, _, _ := approvedTurn(t, e) // claimed, never sent: its replica died
		expireLease(t, e, conv)
		other := e.replica("rep_alive")
		other.SetRoute(tc.route)
		if n := e.janitor(other).Sweep(t.Context()); n != 1 {
			t.Fatalf("gateway %v: the sweep closed %d turns; want 1", tc.route, n)
		}
		got := e.approval(conv, a.ID)
		if got.State != tc.want {
			t.Fatalf("gateway %v: the approval is %s (%s); want %s", tc.route, got.State, deref(got.DecisionReason), tc.want)
		}
		if !tc.route {
			continue
		}
		if !strings.Contains(deref(got.DecisionReason), "did not run") || got.Call != nil {
			t.Errorf("not_run approval: reason %q, call %+v", deref(got.DecisionReason), got.Call)
		}
		// The conversation goes on, and the model can ask again.
		n := e.up.count()
		_, again := e.asking(ana, conv)
		if again.ID == a.ID || again.State != conversation.Pending {
			t.Fatalf("asking again gave %+v", again)
		}
		told := false
		for _, body := range e.up.sent()[n:] {
			var req struct {
				Input []struct {
					ApprovalRequestID string `json:"approval_request_id"`
					Approve           *bool  `json:"approve"`
					Reason            string `json:"reason"`
				} `json:"input"`
			}
			if err := json.Unmarshal(body, &req); err != nil {
				t.Fatal(err)
			}
			for _, in := range req.Input {
				if in.ApprovalRequestID != a.ID {
					continue
				}
				if in.Approve == nil || *in.Approve || !strings.Contains(in.Reason, "did not run") {
					t.Fatalf("the model was told of the not-run approval %s: approve %v, %q", a.ID, in.Approve, in.Reason)
				}
				told = true
			}
		}
		if !told {
			t.Fatal("the next request did not tell the model that the approval did not run")
		}
	}
}

// The follow-up fails with a 500 (it may or may not have reached the
// provider), or the provider ends its response as failed: with the face,
// no call on the approval passed it, so it did not run.
func TestGateSettle_FailedFollowUpWithoutACallIsNotRun(t *testing.T) {
	t.Parallel()
	for _, behavior := range []string{"status=500", "failed=server_error; mcp-error=call"} {
		e := newEngine(t, engineOptions{})
		e.chat.SetRoute(true)
		conv, a, _, turn := approvedTurn(t, e)
		e.up.setBehavior(behavior)
		rec := e.run(ana, turn)
		if last := rec.last(); last != conversation.EventNameError && last != conversation.EventNameFailed {
			t.Fatalf("%s: the follow-up ended with %v; want it to fail", behavior, rec.names())
		}
		if got := e.approval(conv, a.ID); got.State != conversation.NotRun {
			t.Fatalf("%s: the approval is %s (%s); want not_run", behavior, got.State, deref(got.DecisionReason))
		}
	}
}

// Of four approvals whose turns a dead replica left, in gateway mode: the
// one whose call was admitted and finished ran (approved, with its
// result); the one admitted and never finished is the only
// outcome_unknown; the one whose call never reached the server, and the
// one never called, are not_run.
func TestGateSettle_OutcomeUnknownOnlyForAdmittedButUnfinished(t *testing.T) {
	t.Parallel()
	e := newEngine(t, engineOptions{})
	e.chat.SetRoute(true)
	g := callgate.New(e.chat.Keeper())
	cases := []struct {
		name   string
		finish *gateway.Result // nil: admitted, never finished
		admit  bool
		want   string
	}{
		{"ran", &gateway.Result{JSON: json.RawMessage(`{"content":[{"type":"text","text":"Deleted."}]}`)}, true, conversation.Approved},
		{"forwarded, result never stored", nil, true, conversation.OutcomeUnknown},
		{"never reached the server", &gateway.Result{NotRun: true, Failure: "connection refused"}, true, conversation.NotRun},
		{"never called", nil, false, conversation.NotRun},
	}
	type started struct {
		conv string
		a    conversation.Approval
		call string
	}
	var runs []started
	for _, tc := range cases {
		conv, a, claims, _ := approvedTurn(t, e)
		st := started{conv: conv, a: a}
		if tc.admit {
			v := admit(t, g, gateCall(t, e, claims, "delete_forecast", approvedArgs))
			if !v.Run {
				t.Fatalf("%s: %+v", tc.name, v)
			}
			st.call = v.CallID
			if tc.finish != nil {
				if err := g.Finish(t.Context(), v.CallID, *tc.finish); err != nil {
					t.Fatal(err)
				}
			}
		}
		runs = append(runs, st)
		expireLease(t, e, conv)
	}
	other := e.replica("rep_alive")
	other.SetRoute(true)
	if n := e.janitor(other).Sweep(t.Context()); n != len(cases) {
		t.Fatalf("the sweep closed %d turns; want %d", n, len(cases))
	}
	for i, tc := range cases {
		got := e.approval(runs[i].conv, runs[i].a.ID)
		if got.State != tc.want {
			t.Errorf("%s: the approval is %s (%s); want %s", tc.name, got.State, deref(got.DecisionReason), tc.want)
		}
		if tc.admit && (got.Call == nil || got.Call.ID != runs[i].call) {
			t.Errorf("%s: the card's call is %+v; want %s", tc.name, got.Call, runs[i].call)
		}
	}
	if got := e.approval(runs[1].conv, runs[1].a.ID); !strings.Contains(deref(got.DecisionReason), "stopped before it could store the result") {
		t.Errorf("outcome_unknown says %q; want that Toolgate stopped between forwarding and storing", deref(got.DecisionReason))
	}
	// A late Finish of the unfinished call still lands (the face on a live
	// replica), and is never stored twice.
	if err := g.Finish(t.Context(), runs[1].call, gateway.Result{JSON: json.RawMessage(`{"content":[]}`)}); err != nil {
		t.Fatal(err)
	}
}

// The follow-up completes, but the one call the provider made on the
// approval was refused at the face (its definition changed): the approval
// did not run, and the provider's mcp_call item is linked to the refusal.
func TestGateSettle_CompletedFollowUpWhoseCallTheFaceRefusedIsNotRun(t *testing.T) {
	t.Parallel()
	e := newEngine(t, engineOptions{})
	e.chat.SetRoute(true)
	g := callgate.New(e.chat.Keeper())
	conv, a, claims, turn := approvedTurn(t, e)
	call := gateCall(t, e, claims, "delete_forecast", approvedArgs)
	changed := *call.Definition
	changed.Description = "Deletes every forecast"
	call.Definition = &changed
	refused := admit(t, g, call)
	wantRefused(t, refused, gateway.RefusedChanged)
	e.up.setBehavior("mcp-error=call") // what the provider reports of the refused call
	rec := e.run(ana, turn)
	if rec.last() != conversation.EventNameCompleted {
		t.Fatalf("the follow-up ended with %v", rec.names())
	}
	got := e.approval(conv, a.ID)
	if got.State != conversation.NotRun || !strings.Contains(deref(got.DecisionReason), "did not run") {
		t.Fatalf("the approval is %s (%s); want not_run", got.State, deref(got.DecisionReason))
	}
	notRun := 0
	rec.mu.Lock()
	for _, ev := range rec.events {
		if d, ok := ev.data.(conversation.DecisionEvent); ok && d.State == conversation.NotRun && d.ApprovalRequestID == a.ID {
			notRun++
		}
	}
	rec.mu.Unlock()
	if notRun != 1 {
		t.Errorf("%d decision events say it did not run; want 1 (events %v)", notRun, rec.names())
	}
	item := find(e.transcript(ana, conv).Items, conversation.ItemCall)
	if item == nil || item.GatewayCallID != refused.CallID || item.Refusal == nil || item.Refusal.Code != gateway.RefusedChanged || item.AllowedBy != nil {
		t.Fatalf("the transcript's call: %+v", item)
	}
}

// A replica dies while its follow-up streams, after response.created; the
// provider ends the response as failed before any call. The replica that
// takes the turn over reads the response back (it finished): with the
// face, the approval no call used is not_run, and the conversation goes on.
func TestGateSettle_TakeoverWithAResponseReadBackIsNotRun(t *testing.T) {
	t.Parallel()
	e := newEngine(t, engineOptions{})
	e.chat.SetRoute(true)
	conv, a := e.askToDelete()
	stored, released := newGate(), newGate()
	t.Cleanup(released.open)
	e.up.setBehavior("failed=server_error; at=1")
	e.up.setWrap(func(w http.ResponseWriter, r *http.Request) (http.ResponseWriter, func()) {
		return &pass{ResponseWriter: w, left: 1}, func() { stored.open(); released.wait() }
	})
	turn, err := e.decide(ana, conv, a.ID, true)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		turn.Run(as(context.Background(), ana), nil)
	}()
	t.Cleanup(func() { released.open(); <-done })
	stored.wait()
	for deadline := time.Now().Add(10 * time.Second); e.approval(conv, a.ID).AnsweredIn == nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("replica a never recorded the response that took the answer")
		}
	}
	expireLease(t, e, conv)
	b := e.replica("rep_b")
	b.SetRoute(true)
	if n := e.janitor(b).Sweep(t.Context()); n != 1 {
		t.Fatalf("replica b closed %d turns, want 1", n)
	}
	if got := e.approval(conv, a.ID); got.State != conversation.NotRun {
		t.Fatalf("the approval is %s (%s); want not_run", got.State, deref(got.DecisionReason))
	}
	released.open()
	<-done
	e.up.setWrap(nil)
	e.up.setBehavior("")
	e.send(ana, conv, "thanks")
}
