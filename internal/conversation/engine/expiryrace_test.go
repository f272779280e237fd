package engine_test

import (
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/conversation/engine"
	"github.com/toolgate/toolgate/internal/conversation/record"
)

// A decision racing the deadline, and the sweep racing both: for each
// request exactly one of them wins. An approval the decision route
// accepted stays approved (the sweep leaves it alone); a request whose
// time was up is expired, and its decision was refused (approval_expired,
// or approval_already_decided when the sweep got there first). Each has
// exactly one approval.decide audit entry.
func TestExpiry_DecisionRacingTheDeadlineHasOneOutcome(t *testing.T) {
	e := newEngine(t, engineOptions{})
	const n = 8
	type req struct{ conv, id string }
	reqs := make([]req, n)
	for i := range reqs {
		conv, a := e.asking(ana, "")
		reqs[i] = req{conv, a.ID}
	}
	// The deadlines fall 250 ms apart around now.
	for i, r := range reqs {
		if _, err := e.pool.Exec(t.Context(), `UPDATE approval_requests SET requested_at =
			clock_timestamp() - interval '30 minutes' + make_interval(secs => $2::float8 / 1000) WHERE id = $1`, r.id, 250*(i-n/2)); err != nil {
			t.Fatal(err)
		}
	}
	turns := make([]*engine.Turn, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, r := range reqs {
		wg.Add(2)
		go func() {
			defer wg.Done()
			turns[i], errs[i] = e.decide(ana, r.conv, r.id, true)
		}()
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i) * 5 * time.Millisecond)
			e.chat.ExpireApprovals(t.Context())
		}()
	}
	wg.Wait()
	won := map[string]int{}
	for i, r := range reqs {
		if turns[i] != nil {
			e.run(ana, turns[i])
		}
		got := e.approval(r.conv, r.id)
		var entries int
		if err := e.pool.QueryRow(t.Context(), `SELECT count(*) FROM audit_log WHERE action = 'approval.decide'
			AND after->>'approval_request_id' = $1`, r.id).Scan(&entries); err != nil {
			t.Fatal(err)
		}
		code := ""
		if ae, ok := apperr.As(errs[i]); ok {
			code = ae.Code
		}
		switch {
		case errs[i] == nil && got.State == conversation.Approved:
			won["decision"]++
			// Accepted only before its deadline (judged when the locks were
			// taken, a moment before decided_at).
			if deadline := got.RequestedAt.Add(engine.DefaultApprovalTTL); got.DecidedAt == nil || got.DecidedAt.After(deadline.Add(50*time.Millisecond)) {
				t.Errorf("request %d was approved at %v, after its deadline %v", i, got.DecidedAt, deadline)
			}
		case (code == "approval_expired" || code == "approval_already_decided") && got.State == conversation.Expired:
			won["expiry"]++
		default:
			t.Errorf("request %d: decision error %v, state %s; want approved and accepted, or expired and refused", i, errs[i], got.State)
		}
		if entries != 1 {
			t.Errorf("request %d (%s): %d approval.decide entries; want 1", i, got.State, entries)
		}
	}
	t.Logf("outcomes: %v", won)
}

// A request left by a response that never completed is superseded when a
// replica starts (Recover), with its approval.decide entry: Toolgate
// closed it (by turn_end), with the reason.
func TestRecover_SupersededOrphanIsAudited(t *testing.T) {
	e := newEngine(t, engineOptions{})
	conv, a := e.asking(ana, "")
	e.exec(`UPDATE conversations SET last_response_id = 'resp_later'`)
	if err := e.janitor(e.chat).Recover(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := e.approval(conv, a.ID); got.State != conversation.Superseded {
		t.Fatalf("the orphan is %s; want superseded", got.State)
	}
	var actor, state, by, reason, convID string
	if err := e.pool.QueryRow(t.Context(), `SELECT actor, after->>'state', after->>'by', after->>'reason', conversation_id
		FROM audit_log WHERE action = 'approval.decide' AND after->>'approval_request_id' = $1`, a.ID).
		Scan(&actor, &state, &by, &reason, &convID); err != nil {
		t.Fatalf("the superseded orphan's approval.decide entry: %v", err)
	}
	if actor != "toolgate" || state != conversation.Superseded || by != record.ClosedByTurnEnd || reason == "" || convID != conv {
		t.Errorf("entry: actor %q state %q by %q reason %q conversation %q", actor, state, by, reason, convID)
	}
}
