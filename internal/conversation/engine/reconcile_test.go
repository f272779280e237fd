package engine_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/conversation/engine"
)

// A follow-up's stream breaks after response.created, before anything of
// the call or the answer arrived; the provider went on and stored the
// response. Reading it back settles what ran: the approval stays approved
// with its call in the transcript (not outcome_unknown), the answer is
// kept, and the conversation goes on from that response without running
// the tool again.
func TestReadBack_CutFollowUpIsSettledFromTheStoredResponse(t *testing.T) {
	t.Parallel()
	e := newEngine(t, engineOptions{})
	conv, a := e.askToDelete()
	e.up.setBehavior("cut; at=2") // after response.created and response.in_progress
	turn, err := e.decide(ana, conv, a.ID, true)
	if err != nil {
		t.Fatal(err)
	}
	rec := e.run(ana, turn)

	te, _ := rec.lastData().(conversation.TurnError)
	if rec.last() != conversation.EventNameError || te.Code != "upstream_cut" || !strings.Contains(te.Message, "read the response back") || te.Retryable {
		t.Errorf("the turn ended with %s %+v, want upstream_cut saying the response was read back, not retryable", rec.last(), te)
	}
	got := e.approval(conv, a.ID)
	if got.State != conversation.Approved || got.AnsweredIn == nil || !strings.HasPrefix(*got.AnsweredIn, "resp_") {
		t.Fatalf("approval %s answered in %v, want approved, answered in the response read back", got.State, deref(got.AnsweredIn))
	}
	tr := e.transcript(ana, conv)
	wantSettled(t, tr, a.ID, *got.AnsweredIn, "upstream_cut")
	if n := e.demo.State().Calls["delete_forecast"]; n != 1 {
		t.Errorf("delete_forecast ran %d times, want once", n)
	}

	e.up.setBehavior("")
	_, rec = e.send(ana, conv, "thanks")
	if n := e.demo.State().Calls["delete_forecast"]; n != 1 {
		t.Errorf("after the next message delete_forecast ran %d times, want still once", n)
	}
	if c, _ := rec.lastData().(conversation.CompletedEvent); c.ResponseID == nil || *c.ResponseID == *got.AnsweredIn {
		t.Errorf("the next message did not complete with a response of its own: %v", rec.names())
	}
}

// wantSettled checks a transcript settled from the response read back
// (resp): the approved call with its output (not interrupted), the whole
// answer, an error item with code last, and the conversation going on from
// resp.
func wantSettled(t *testing.T, tr conversation.Transcript, approval, resp, code string) {
	t.Helper()
	var calls, answers int
	for _, it := range tr.Items {
		switch it.Type {
		case conversation.ItemCall:
			calls++
			if it.Interrupted || it.ApprovalRequestID != approval || it.ResponseID != resp || it.Output == nil ||
				!strings.Contains(*it.Output, "Deleted the forecast for Berlin") || it.AllowedBy == nil || it.AllowedBy.Kind != "approval" {
				t.Errorf("call item %+v, want the approved call with its output, from %s", it, resp)
			}
		case conversation.ItemMessage:
			answers++
			if it.Partial || it.ResponseID != resp || !strings.Contains(it.Text, "Deleted the forecast for Berlin") {
				t.Errorf("message %+v, want the whole answer of %s", it, resp)
			}
		}
	}
	if calls != 1 || answers != 1 {
		t.Errorf("%d calls and %d answers in the transcript, want one of each", calls, answers)
	}
	if last := tr.Items[len(tr.Items)-1]; last.Type != conversation.ItemError || last.Error.Code != code {
		t.Errorf("last item %+v, want the error %s", last, code)
	}
	if c := tr.Conversation; c.Streaming || deref(c.LastResponseID) != resp || c.PendingCount != 0 {
		t.Errorf("conversation streaming %v, last response %s, %d pending; want idle, going on from %s", c.Streaming, deref(c.LastResponseID), c.PendingCount, resp)
	}
}

// A follow-up whose response never finishes (the provider holds it)
// cannot be settled: after the bounded read-back the approval is
// outcome_unknown, saying the tool may have run, and the conversation
// stays where it was.
func TestReadBack_ResponseStillRunningStaysUnknown(t *testing.T) {
	t.Parallel()
	e := newEngine(t, engineOptions{firstByte: time.Minute, idle: 300 * time.Millisecond})
	engine.SetReadBackWait(e.chat, 600*time.Millisecond)
	conv, a := e.askToDelete()
	before := e.transcript(ana, conv).Conversation.LastResponseID
	held := newGate()
	t.Cleanup(held.open)
	e.up.setWrap(func(w http.ResponseWriter, _ *http.Request) (http.ResponseWriter, func()) {
		return &pass{ResponseWriter: w, left: 2, then: held.wait}, nil
	})
	turn, err := e.decide(ana, conv, a.ID, true)
	if err != nil {
		t.Fatal(err)
	}
	rec := e.run(ana, turn)

	te, _ := rec.lastData().(conversation.TurnError)
	if te.Code != conversation.CodeIdleTimeout || strings.Contains(te.Message, "read the response back") {
		t.Errorf("the turn ended with %+v, want the idle timeout, nothing read back", te)
	}
	got := e.approval(conv, a.ID)
	if got.State != conversation.OutcomeUnknown || !strings.Contains(deref(got.DecisionReason), "may have run") {
		t.Errorf("approval %s (%q), want outcome_unknown saying it may have run", got.State, deref(got.DecisionReason))
	}
	if after := e.transcript(ana, conv).Conversation.LastResponseID; deref(after) != deref(before) {
		t.Errorf("last response %s, want it unchanged (%s)", deref(after), deref(before))
	}
}

// A follow-up's stream goes silent (idle timeout) while the provider is
// still busy with it; it finishes a moment later, while Toolgate reads it
// back: the read-back waits for it and settles the approval.
func TestReadBack_WaitsForAResponseStillRunning(t *testing.T) {
	t.Parallel()
	e := newEngine(t, engineOptions{firstByte: time.Minute, idle: 300 * time.Millisecond})
	conv, a := e.askToDelete()
	held := newGate()
	t.Cleanup(held.open)
	e.up.setWrap(func(w http.ResponseWriter, _ *http.Request) (http.ResponseWriter, func()) {
		return &pass{ResponseWriter: w, left: 2, then: func() {
			time.AfterFunc(time.Second, held.open) // after the idle timeout, within the read-back's wait
			held.wait()
		}}, nil
	})
	turn, err := e.decide(ana, conv, a.ID, true)
	if err != nil {
		t.Fatal(err)
	}
	rec := e.run(ana, turn)

	te, _ := rec.lastData().(conversation.TurnError)
	if te.Code != conversation.CodeIdleTimeout || !strings.Contains(te.Message, "read the response back") {
		t.Errorf("the turn ended with %+v, want the idle timeout, then the response read back", te)
	}
	got := e.approval(conv, a.ID)
	if got.State != conversation.Approved || got.AnsweredIn == nil {
		t.Fatalf("approval %s (%q), want approved, settled by the read-back", got.State, deref(got.DecisionReason))
	}
	wantSettled(t, e.transcript(ana, conv), a.ID, *got.AnsweredIn, conversation.CodeIdleTimeout)
}

// A replica dies while its follow-up streams, after response.created; the
// provider goes on. The replica that takes the turn over reads the
// response back: completed, it is adopted as in the cut stream; ended
// without the call (failed), the approval stays approved (it did not run)
// and the conversation stays where it was.
func TestReadBack_TakeoverSettlesFromTheStoredResponse(t *testing.T) {
	for _, tc := range []struct {
		name     string
		behavior string
		events   int // what replica a gets of the follow-up before it dies
		ran      bool
	}{
		{name: "completed", events: 2, ran: true},
		{name: "failed before the call", behavior: "failed=server_error; at=1", events: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEngine(t, engineOptions{})
			conv, a := e.askToDelete()
			before := e.transcript(ana, conv).Conversation.LastResponseID
			// Replica a gets the first events (response.created), then
			// nothing more, as if it had died; the emulator runs to the
			// end and stores the response.
			stored, released := newGate(), newGate()
			t.Cleanup(released.open)
			e.up.setBehavior(tc.behavior)
			e.up.setWrap(func(w http.ResponseWriter, r *http.Request) (http.ResponseWriter, func()) {
				return &pass{ResponseWriter: w, left: tc.events}, func() { stored.open(); released.wait() }
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
			e.exec(`UPDATE conversations SET lease_expires_at = now() - interval '1 second'`)
			if n := e.janitor(e.replica("rep_b")).Sweep(t.Context()); n != 1 {
				t.Fatalf("replica b closed %d turns, want 1", n)
			}

			got := e.approval(conv, a.ID)
			if got.State != conversation.Approved || got.AnsweredIn == nil || !strings.HasPrefix(*got.AnsweredIn, "resp_") {
				t.Fatalf("approval %s (%q) answered in %v, want approved", got.State, deref(got.DecisionReason), deref(got.AnsweredIn))
			}
			tr := e.transcript(ana, conv)
			last := tr.Items[len(tr.Items)-1]
			if last.Type != conversation.ItemError || last.Error.Code != "interrupted" || !strings.Contains(last.Error.Message, "read the response back") {
				t.Errorf("last item %+v, want the interrupted error saying the response was read back", last)
			}
			if tc.ran {
				wantSettled(t, tr, a.ID, *got.AnsweredIn, "interrupted")
			} else {
				if it := find(tr.Items, conversation.ItemCall); it != nil {
					t.Errorf("a call item %+v, but the response failed before the call", it)
				}
				if after := tr.Conversation.LastResponseID; deref(after) != deref(before) || tr.Conversation.Streaming {
					t.Errorf("last response %s (streaming %v), want it unchanged (%s)", deref(after), tr.Conversation.Streaming, deref(before))
				}
			}
			want := 0
			if tc.ran {
				want = 1
			}
			if n := e.demo.State().Calls["delete_forecast"]; n != want {
				t.Errorf("delete_forecast ran %d times, want %d", n, want)
			}

			// The conversation goes on, and the decision is never sent
			// as an approval again.
			released.open()
			<-done
			e.up.setWrap(nil)
			e.up.setBehavior("")
			e.send(ana, conv, "thanks")
			if n := e.demo.State().Calls["delete_forecast"]; n != want {
				t.Errorf("after the next message delete_forecast ran %d times, want %d", n, want)
			}
		})
	}
}

// askToDelete makes the model ask to run delete_forecast for Berlin and
// returns the conversation and the approval request.
func (e *harness) askToDelete() (string, conversation.Approval) {
	e.t.Helper()
	conv, rec := e.send(ana, "", `delete_forecast {"city": "Berlin"}`)
	a, ok := rec.first(conversation.EventNameApproval).(conversation.Approval)
	if !ok {
		e.t.Fatalf("the model did not ask: %v", rec.names())
	}
	return conv, a
}

// setWrap puts w between the emulator and each following POST answer.
func (u *emuTap) setWrap(w func(http.ResponseWriter, *http.Request) (http.ResponseWriter, func())) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.wrap = w
}

// pass passes the first left stream events on (the emulator writes one
// per Write); then it calls then, if set, once, and drops the rest.
type pass struct {
	http.ResponseWriter
	left int
	then func()
	once sync.Once
}

func (w *pass) Write(p []byte) (int, error) {
	if bytes.HasPrefix(p, []byte("event: ")) {
		if w.left <= 0 {
			if w.then != nil {
				w.once.Do(w.then)
			}
			return len(p), nil
		}
		w.left--
	}
	return w.ResponseWriter.Write(p)
}

func (w *pass) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// gate is closed until opened, once.
type gate struct {
	c    chan struct{}
	once sync.Once
}

func newGate() *gate  { return &gate{c: make(chan struct{})} }
func (g *gate) open() { g.once.Do(func() { close(g.c) }) }
func (g *gate) wait() { <-g.c }
