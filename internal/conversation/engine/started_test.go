package engine_test

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/conversation/engine"
)

// events are what rec holds, in order.
func (r *recorder) all() []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// callDone is the index and item of the item.done event of the mcp_call id.
func callDone(rec *recorder, id string) (int, conversation.Item) {
	for i, ev := range rec.all() {
		if ie, ok := ev.data.(conversation.ItemEvent); ok && ev.name == conversation.EventNameItem && ie.Item.Type == conversation.ItemCall && ie.Item.ID == id {
			return i, ie.Item
		}
	}
	return -1, conversation.Item{}
}

// started are the tool.started events of rec, with their indexes.
func started(rec *recorder) (idx []int, evs []conversation.ToolStartedEvent) {
	for i, ev := range rec.all() {
		if ev.name == conversation.EventNameToolStarted {
			idx = append(idx, i)
			evs = append(evs, ev.data.(conversation.ToolStartedEvent))
		}
	}
	return idx, evs
}

// A tool that runs without asking is announced while it runs: tool.started
// names it, with Toolgate's label and the upstream one, before its
// item.done, which has the same item id.
func TestToolStarted_AutoRunToolIsAnnouncedBeforeItsResult(t *testing.T) {
	t.Parallel()
	e := newEngine(t, engineOptions{})
	before := time.Now()
	conv, rec := e.send(ana, "", `get_forecast {"city": "Oslo"}`)

	idx, evs := started(rec)
	if len(evs) != 1 {
		t.Fatalf("%d tool.started events, want 1; events %v", len(evs), rec.names())
	}
	s := evs[0]
	done, item := callDone(rec, s.ItemID)
	if done < 0 {
		t.Fatalf("no item.done for the started call %s; events %v", s.ItemID, rec.names())
	}
	if idx[0] >= done {
		t.Errorf("tool.started at %d, its item.done at %d; want it before; events %v", idx[0], done, rec.names())
	}
	if s.ToolName != "get_forecast" || s.ServerLabel != "demo" || s.UpstreamLabel != "demo" || s.ApprovalRequestID != nil {
		t.Errorf("tool.started %+v; want get_forecast on demo (upstream demo), answering no approval", s)
	}
	if s.ResponseID == "" || s.ResponseID != item.ResponseID {
		t.Errorf("tool.started response %q, its item's %q", s.ResponseID, item.ResponseID)
	}
	if s.StartedAt.Before(before.Add(-time.Second)) || s.StartedAt.After(time.Now()) {
		t.Errorf("started_at %v, not during the turn", s.StartedAt)
	}
	if item.Interrupted || item.Output == nil {
		t.Errorf("the finished call %+v is marked interrupted or has no output", item)
	}
	for _, it := range e.transcript(ana, conv).Items {
		if it.Interrupted {
			t.Errorf("a completed turn left an interrupted call: %+v", it)
		}
	}
}

// An approved call is announced too, with the request it answers.
func TestToolStarted_ApprovedCallNamesItsRequest(t *testing.T) {
	t.Parallel()
	e := newEngine(t, engineOptions{})
	conv, a := e.asking(ana, "")
	turn, err := e.decide(ana, conv, a.ID, true)
	if err != nil {
		t.Fatal(err)
	}
	rec := e.run(ana, turn)
	idx, evs := started(rec)
	if len(evs) != 1 {
		t.Fatalf("%d tool.started events, want 1; events %v", len(evs), rec.names())
	}
	s := evs[0]
	done, _ := callDone(rec, s.ItemID)
	if done < 0 || idx[0] >= done {
		t.Errorf("tool.started at %d, item.done at %d; events %v", idx[0], done, rec.names())
	}
	if s.ToolName != "delete_forecast" || s.ServerLabel != "demo" || s.ApprovalRequestID == nil || *s.ApprovalRequestID != a.ID {
		t.Errorf("tool.started %+v; want delete_forecast on demo answering %s", s, a.ID)
	}
}

// A call that began and never finished (the turn was cancelled while it
// ran) stays in the transcript as an interrupted mcp_call, before the error
// item: it may or may not have run.
func TestToolStarted_CancelledCallLeavesAnInterruptedItem(t *testing.T) {
	for _, tc := range []struct {
		name     string
		approved bool
		// behavior stalls the stream right after the call's
		// output_item.added (event 8 of a first response: created,
		// in_progress, the listing's four, a reasoning item's two; event 2
		// of a follow-up, which runs the approved call first).
		behavior string
		tool     string
	}{
		{name: "runs without asking", behavior: "stall=1m; at=9", tool: "get_forecast"},
		// The provider holds the follow-up after the call's
		// output_item.added (a stall would end when Toolgate leaves, and
		// the response read back would then say how the call ended).
		{name: "approved", approved: true, tool: "delete_forecast"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEngine(t, engineOptions{})
			var turn *engine.Turn
			var approval string
			if tc.approved {
				conv, a := e.asking(ana, "")
				approval = a.ID
				engine.SetReadBackWait(e.chat, 300*time.Millisecond)
				held := newGate()
				t.Cleanup(held.open)
				e.up.setWrap(func(w http.ResponseWriter, _ *http.Request) (http.ResponseWriter, func()) {
					return &pass{ResponseWriter: w, left: 3, then: held.wait}, nil
				})
				var err error
				if turn, err = e.decide(ana, conv, a.ID, true); err != nil {
					t.Fatal(err)
				}
			} else {
				e.up.setBehavior(tc.behavior)
				turn = e.message(ana, "", tc.tool+` {"city": "Oslo"}`)
			}
			rec := newRecorder()
			done := make(chan struct{})
			go func() {
				defer close(done)
				turn.Run(as(context.Background(), ana), rec)
			}()
			t.Cleanup(func() { // a failure below must not leave the turn stalled for a minute
				_ = e.chat.Cancel(as(context.Background(), ana), turn.ConversationID())
				<-done
			})
			rec.waitFor(t, conversation.EventNameToolStarted)
			if err := e.chat.Cancel(as(t.Context(), ana), turn.ConversationID()); err != nil {
				t.Fatalf("Cancel: %v", err)
			}
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatalf("the turn did not end within 30s; events %v", rec.names())
			}
			_, evs := started(rec)
			if i, _ := callDone(rec, evs[0].ItemID); i >= 0 {
				t.Fatalf("the call finished before the cancel: the stall is not where this test puts it; events %v", rec.names())
			}
			if rec.last() != conversation.EventNameError {
				t.Fatalf("events %v, want the cancelled error last", rec.names())
			}

			items := e.transcript(ana, turn.ConversationID()).Items
			last := items[len(items)-1]
			if last.Type != conversation.ItemError || last.Error.Code != "cancelled" {
				t.Fatalf("last item %+v, want the cancelled error", last)
			}
			var got *conversation.Item
			for i := range items {
				if items[i].Type == conversation.ItemCall {
					if got != nil {
						t.Errorf("a second call item: %+v", items[i])
					}
					got = &items[i]
				}
			}
			if got == nil {
				var types []string
				for _, it := range items {
					types = append(types, it.Type)
				}
				t.Fatalf("no trace of the interrupted call in the transcript: %v", types)
			}
			if !got.Interrupted || got.ID != evs[0].ItemID || got.Name != tc.tool || got.ServerLabel != "demo" || got.UpstreamLabel != "demo" ||
				got.ResponseID != evs[0].ResponseID || got.Output != nil || got.CallError != nil || got.Arguments != nil {
				t.Errorf("call item %+v; want %s on demo, interrupted, with the started call's id and response and no arguments, output or error", *got, tc.tool)
			}
			if got.Seq >= last.Seq {
				t.Errorf("the interrupted call (seq %d) comes after the error item (seq %d)", got.Seq, last.Seq)
			}
			switch {
			case tc.approved && (got.ApprovalRequestID != approval || got.AllowedBy == nil || got.AllowedBy.Kind != "approval"):
				t.Errorf("approved call: approval %q, allowed by %+v; want %s, approval", got.ApprovalRequestID, got.AllowedBy, approval)
			case !tc.approved && (got.ApprovalRequestID != "" || got.AllowedBy == nil || got.AllowedBy.Kind != "policy"):
				t.Errorf("call that runs unasked: approval %q, allowed by %+v; want none, policy", got.ApprovalRequestID, got.AllowedBy)
			}
		})
	}
}
