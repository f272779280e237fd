package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/conversation/engine"
	"github.com/toolgate/toolgate/internal/conversation/eventlog"
	"github.com/toolgate/toolgate/internal/postgres"
)

// approvalAnswer is an mcp_approval_response as the provider received it.
type approvalAnswer struct {
	Type              string  `json:"type"`
	ApprovalRequestID string  `json:"approval_request_id"`
	Approve           *bool   `json:"approve"`
	Reason            *string `json:"reason"`
}

// A request nobody decides within APPROVAL_TTL expires once, whichever
// replicas look (two run the expiry at once here, each with an open event
// stream, and both streams get the one decision.recorded); it can no longer
// be decided; the next message sends the provider a denial saying it
// expired, and the tool never runs.
func TestExpiry_PendingApprovalExpiresOnceAndIsDeniedUpstream(t *testing.T) {
	e := newEngine(t, engineOptions{})
	conv, a := e.asking(ana, "")
	if a.ExpiresAt == nil || !a.ExpiresAt.Equal(a.RequestedAt.Add(engine.DefaultApprovalTTL)) {
		t.Fatalf("approval.required expires_at %v; want requested_at (%v) + %v", a.ExpiresAt, a.RequestedAt, engine.DefaultApprovalTTL)
	}
	other := e.replica("rep_b")
	ctx := as(t.Context(), ana)
	subs := make([]*eventlog.Subscription, 2)
	for i, svc := range []*engine.Service{e.chat, other} {
		sub, err := svc.Events(ctx, conv, -1)
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
		subs[i] = sub
	}

	if n := e.chat.ExpireApprovals(t.Context()); n != 0 {
		t.Fatalf("%d expired within the default TTL; want none", n)
	}
	const ttl = 300 * time.Millisecond
	e.chat.SetApprovalTTL(ttl)
	other.SetApprovalTTL(ttl)
	var counted atomic.Int64 // the metric's hook
	count := func(string, time.Time) { counted.Add(1) }
	e.chat.ObserveExpiry(count)
	other.ObserveExpiry(count)
	time.Sleep(ttl + 100*time.Millisecond)
	var wg sync.WaitGroup
	counts := make([]int, 4)
	for i, svc := range []*engine.Service{e.chat, other, e.chat, other} {
		wg.Add(1)
		go func() { defer wg.Done(); counts[i] = svc.ExpireApprovals(t.Context()) }()
	}
	wg.Wait()
	if total := counts[0] + counts[1] + counts[2] + counts[3]; total != 1 {
		t.Fatalf("four passes on two replicas expired %v requests; want exactly 1 in all", counts)
	}
	if counted.Load() != 1 {
		t.Errorf("Observer.ApprovalExpired called %d times; want once", counted.Load())
	}

	// The update is conditional: a request already expired (or decided) is
	// not expired again, whoever asks.
	again := postgres.NewConversationStore(e.pool)
	if err := again.Tx(t.Context(), func(r conversation.Repo) error {
		_, aps, err := r.Leases.ExpireApprovals(t.Context(), conv, ttl, func(conversation.Approval) string { return "again" })
		if len(aps) != 0 {
			t.Errorf("expiring again changed %d requests; want none", len(aps))
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}

	reason := conversation.ExpiredTTLReason(ttl)
	for i, sub := range subs {
		wait, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		evs, err := sub.Next(wait)
		cancel()
		if err != nil {
			t.Fatalf("stream %d: %v; want the expiry's decision.recorded", i, err)
		}
		more, _ := sub.Backlog(t.Context())
		evs = append(evs, more...)
		if len(evs) != 1 || evs[0].Name != conversation.EventNameDecision {
			t.Fatalf("stream %d got %d events (%v); want one decision.recorded", i, len(evs), evs)
		}
		var d conversation.DecisionEvent
		if err := json.Unmarshal(evs[0].Data, &d); err != nil {
			t.Fatal(err)
		}
		if d.ApprovalRequestID != a.ID || d.State != conversation.Expired || deref(d.Reason) != reason || d.DecidedBy != nil {
			t.Errorf("stream %d: decision %+v; want %s expired by Toolgate with %q", i, d, a.ID, reason)
		}
	}
	got := e.approval(conv, a.ID)
	if got.State != conversation.Expired || deref(got.DecisionReason) != reason || got.DecidedAt == nil || got.ExpiresAt != nil {
		t.Errorf("stored approval %s (%q, decided %v, expires %v); want expired with the reason, decided, no expiry left",
			got.State, deref(got.DecisionReason), got.DecidedAt, got.ExpiresAt)
	}
	if !strings.Contains(reason, "APPROVAL_TTL") {
		t.Errorf("reason %q does not name APPROVAL_TTL", reason)
	}

	_, err := e.decide(ana, conv, a.ID, true)
	var ae *apperr.Error
	if !errors.As(err, &ae) || ae.Kind != apperr.Conflict {
		t.Fatalf("approving an expired request: %v; want a conflict", err)
	}
	if d, _ := json.Marshal(ae.Details); !strings.Contains(string(d), `"state":"expired"`) {
		t.Errorf("the conflict's details %s do not give the state expired", d)
	}

	n := e.up.count()
	e.send(ana, conv, "never mind")
	bodies := e.up.sent()[n:]
	if len(bodies) != 1 {
		t.Fatalf("%d requests for the next message; want 1", len(bodies))
	}
	var req struct {
		Input []approvalAnswer `json:"input"`
	}
	if err := json.Unmarshal(bodies[0], &req); err != nil {
		t.Fatal(err)
	}
	answered := false
	for _, in := range req.Input {
		if in.Type != "mcp_approval_response" || in.ApprovalRequestID != a.ID {
			continue
		}
		answered = true
		if in.Approve == nil || *in.Approve || deref(in.Reason) != reason {
			t.Errorf("the expired request was answered approve %v reason %q; want a denial with %q", in.Approve != nil && *in.Approve, deref(in.Reason), reason)
		}
	}
	if !answered {
		t.Errorf("the next message's request %s does not answer the expired request", bodies[0])
	}
	if st := e.demo.State(); st.Calls["delete_forecast"] != 0 {
		t.Errorf("delete_forecast ran %d times; an expired request must never run", st.Calls["delete_forecast"])
	}
}

// A request in a conversation whose turn still runs is left to that turn.
func TestExpiry_SkipsAConversationWithARunningTurn(t *testing.T) {
	e := newEngine(t, engineOptions{})
	conv, a := e.asking(ana, "")
	e.chat.SetApprovalTTL(time.Millisecond)
	if _, err := e.pool.Exec(t.Context(), `UPDATE conversations SET active_turn = 'turn_x', lease_owner = 'rep_a',
		lease_expires_at = clock_timestamp() + interval '1 minute' WHERE id = $1`, conv); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	if n := e.chat.ExpireApprovals(t.Context()); n != 0 {
		t.Fatalf("%d expired while a turn runs; want none", n)
	}
	if got := e.approval(conv, a.ID); got.State != conversation.Pending {
		t.Errorf("state %s; want pending", got.State)
	}
}

// The replicas' background loop (recovery.Janitor.Start) expires requests on its own.
func TestExpiry_TheBackgroundLoopExpires(t *testing.T) {
	e := newEngine(t, engineOptions{})
	conv, a := e.asking(ana, "")
	other := e.replica("rep_loop")
	other.SetReplica("", time.Second)
	other.SetApprovalTTL(200 * time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e.janitor(other).Start(ctx)
	deadline := time.Now().Add(5 * time.Second)
	for e.approval(conv, a.ID).State != conversation.Expired {
		if time.Now().After(deadline) {
			t.Fatal("still pending 5 s after a 200 ms APPROVAL_TTL with the loop running every second or so")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
