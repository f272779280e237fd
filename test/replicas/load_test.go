package replicas_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"
)

// load drives conversations through the proxy while replicas are killed,
// and keeps the ledger the invariants are checked against.
type load struct {
	plan      plan
	c         *client
	convs     []*conv
	killsDone chan struct{} // closed when the killer has made its kills
	started   time.Time     // when the load began

	mu            sync.Mutex
	messages      int // message POSTs sent
	decisionPosts int // decision POSTs sent
	approved      int // approvals decided approve, once each
	denied        int
	cuts          int // chat streams that ended without a terminal event
	blocked       []blockRecord
	refused       []refusal         // decisions refused on requests of a completed turn
	unusable      map[string]string // conversation id -> how it answered the last message
	kills         []killRecord
	problems      []string // harness failures (a replica that did not restart, …)
}

// blockRecord is one wait for a conversation to take messages again.
type blockRecord struct {
	conv, replica, why string
	waited             time.Duration
	cleared            bool
}

type refusal struct{ conv, approval, answer string }

type killRecord struct {
	replica string
	at      time.Time
	down    time.Duration
	streams int // chat streams it was serving when killed
}

// conv is one conversation and its plan: which tool each turn asks for and
// whether it is approved, drawn from its own generator so the plan depends
// only on the seed.
type conv struct {
	idx       int
	id        string
	rng       *rand.Rand
	completed map[string]bool // approval requests announced by a turn that completed
}

func (l *load) note(f func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f()
}

// nextTurn returns the message of turn tag and whether its approvals are
// approved. Every tool call's arguments carry tag, so each is unique and
// the demo MCP server's call log says how often it ran.
func (cv *conv) nextTurn(tag string) (string, bool) {
	var msg string
	switch cv.rng.IntN(3) {
	case 0:
		msg = fmt.Sprintf(`send_alert {"city": "Oslo", "message": "%s"}`, tag)
	case 1:
		msg = fmt.Sprintf(`delete_forecast {"city": "%s"}`, tag)
	default: // one call runs at once, the other asks
		msg = fmt.Sprintf(`get_forecast {"city": "%s"} then send_alert {"city": "Lisbon", "message": "%s"}`, tag, tag)
	}
	return msg, cv.rng.Float64() < 0.75
}

// runConversation sends the conversation's turns one after the other: the
// message, then the decisions on what it asked. After a cut stream it waits
// until the conversation takes messages again and reads the transcript to
// learn what is still pending. A message is never sent twice.
func (l *load) runConversation(ctx context.Context, cv *conv) {
	for j := 0; j < l.plan.maxTurns && ctx.Err() == nil; j++ {
		if j >= l.plan.turns && !l.killing() {
			return
		}
		tag := fmt.Sprintf("c%d-t%d", cv.idx, j)
		input, approve := cv.nextTurn(tag)
		l.note(func() { l.messages++ })
		res := l.send(ctx, cv, "/api/responses", map[string]any{"conversation_id": cv.id, "input": input})
		var pending []string
		if res.terminal == "completed" {
			var done struct {
				IDs []string `json:"pending_approval_ids"`
			}
			_ = json.Unmarshal([]byte(res.last("completed")), &done)
			pending = done.IDs
			for _, id := range pending {
				cv.completed[id] = true
			}
		} else if !l.settled(ctx, cv, res) {
			return
		} else if tr, err := l.c.transcript(ctx, cv.id); err == nil {
			for _, a := range tr.Pending {
				pending = append(pending, a.ID)
			}
		}
		l.decide(ctx, cv, tag, pending, approve)
	}
}

// killing says whether the killer is still at work: conversations go on
// past plan.turns (up to plan.maxTurns) while it is, so kills land in turns.
func (l *load) killing() bool {
	select {
	case <-l.killsDone:
		return false
	default:
		return true
	}
}

// decide sends one decision per pending request, all in one POST, until
// none of them is pending any more (a cut POST may not have recorded them).
func (l *load) decide(ctx context.Context, cv *conv, tag string, pending []string, approve bool) {
	counted := map[string]bool{}
	for attempt := 0; len(pending) > 0 && attempt < 3 && ctx.Err() == nil; attempt++ {
		var ds []map[string]any
		for _, id := range pending {
			d := map[string]any{"approval_request_id": id, "approve": approve}
			if !approve {
				d["reason"] = "denied by the replica test (" + tag + ")"
			}
			ds = append(ds, d)
			if !counted[id] {
				counted[id] = true
				l.note(func() {
					if approve {
						l.approved++
					} else {
						l.denied++
					}
				})
			}
		}
		l.note(func() { l.decisionPosts++ })
		res := l.send(ctx, cv, "/api/responses/approval-response", map[string]any{"conversation_id": cv.id, "decisions": ds})
		if res.status == http.StatusConflict || res.status == http.StatusNotFound {
			var e struct {
				Error struct {
					Details struct {
						Approval struct {
							State  string  `json:"state"`
							Reason *string `json:"reason"`
						} `json:"approval"`
					} `json:"details"`
				} `json:"error"`
			}
			_ = json.Unmarshal(res.body, &e)
			a := e.Error.Details.Approval
			answer := fmt.Sprintf("%d %s (state %s, reason %q)", res.status, res.code, a.State, deref(a.Reason))
			for _, id := range pending {
				if cv.completed[id] {
					l.note(func() { l.refused = append(l.refused, refusal{cv.id, id, answer}) })
				}
			}
			return
		}
		if res.terminal != "" || !l.settled(ctx, cv, res) {
			return
		}
		tr, err := l.c.transcript(ctx, cv.id)
		if err != nil {
			return
		}
		still := map[string]bool{}
		for _, a := range tr.Pending {
			still[a.ID] = true
		}
		var left []string
		for _, id := range pending {
			if still[id] {
				left = append(left, id)
			}
		}
		pending = left
	}
}

// send POSTs a chat request through the proxy. Answers that say nothing
// was started (503: no replica or no database for a moment; 429; 409
// turn_in_progress, after waiting for the turn) are sent again.
func (l *load) send(ctx context.Context, cv *conv, path string, body any) streamResult {
	var res streamResult
	for attempt := 0; attempt < 6 && ctx.Err() == nil; attempt++ {
		res = l.c.stream(ctx, path, body, l.plan.streamLimit)
		switch {
		case res.status == http.StatusServiceUnavailable, res.status == http.StatusTooManyRequests:
			time.Sleep(300 * time.Millisecond)
		case res.status == http.StatusConflict && res.code == "turn_in_progress":
			l.waitUnblocked(ctx, cv, time.Now(), "", "409 turn_in_progress on "+path)
		default:
			if res.cut() && ctx.Err() == nil {
				l.note(func() { l.cuts++ })
			}
			if res.stalled {
				l.note(func() {
					l.blocked = append(l.blocked, blockRecord{conv: cv.id, replica: res.replica, waited: l.plan.streamLimit,
						why: fmt.Sprintf("its stream on %s sent no terminal event within %s", res.replica, l.plan.streamLimit)})
				})
			}
			return res
		}
	}
	return res
}

// settled handles a chat request whose outcome is unknown: a stream cut
// (its replica died), a 502 from the proxy, no answer. It waits until the
// conversation takes messages again and says whether the conversation can
// go on.
func (l *load) settled(ctx context.Context, cv *conv, res streamResult) bool {
	switch {
	case res.terminal != "":
		return true // failed or error: the turn ended, nothing is pending from it
	case res.cut(), res.status == http.StatusBadGateway, res.status == http.StatusGatewayTimeout, res.status == 0:
		return l.waitUnblocked(ctx, cv, res.ended, res.replica, "its stream was cut")
	default: // refused before anything started
		return true
	}
}

// waitUnblocked polls the conversation until it is no longer streaming (a
// message would not get 409 turn_in_progress), for blockCap at most, and
// records how long that took from since.
func (l *load) waitUnblocked(ctx context.Context, cv *conv, since time.Time, replica, why string) bool {
	rec := blockRecord{conv: cv.id, replica: replica, why: why}
	for ctx.Err() == nil {
		var tr transcript
		st, _, err := l.c.call(ctx, http.MethodGet, "/api/conversations/"+cv.id, nil, &tr)
		if err == nil && st == http.StatusOK && !tr.Conversation.Streaming {
			rec.cleared = true
			break
		}
		if time.Since(since) > l.plan.blockCap {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	rec.waited = time.Since(since)
	l.note(func() { l.blocked = append(l.blocked, rec) })
	return rec.cleared
}

// killer SIGKILLs a replica every so often (preferably one serving chat
// streams, never the last one up) until plan.kills were made or the load
// is done, and restarts each after a while. Every other kill keeps its
// replica down for longer than the lease, and no other replica starts
// meanwhile: the conversations it ran must be taken over by the replicas
// still up, not released by some replica's start.
func (l *load) killer(ctx context.Context, cl *cluster, done <-chan struct{}) {
	defer close(l.killsDone)
	rng := newRand(l.plan.seed, 1<<32) // apart from the conversations' streams
	var restarts sync.WaitGroup
	defer restarts.Wait()
	wait := func(d time.Duration) bool {
		select {
		case <-done:
			return false
		case <-ctx.Done():
			return false
		case <-time.After(d):
			return true
		}
	}
	for k := 0; k < l.plan.kills; k++ {
		long := k%2 == 1
		if long {
			restarts.Wait()
		}
		if !wait(time.Duration(600+rng.IntN(1400)) * time.Millisecond) {
			return
		}
		r := l.victim(ctx, cl, rng, done)
		if r == nil {
			return
		}
		down := time.Duration(300+rng.IntN(700)) * time.Millisecond
		if long {
			down = l.plan.leaseTTL + l.plan.margin + time.Second
		}
		streams := l.c.busy(r.name)
		if !r.kill() {
			continue
		}
		l.note(func() {
			l.kills = append(l.kills, killRecord{replica: r.name, at: time.Now(), down: down, streams: streams})
		})
		restart := func() {
			select {
			case <-ctx.Done():
				return
			case <-time.After(down):
			}
			if err := cl.start(ctx, r); err != nil && ctx.Err() == nil {
				l.note(func() { l.problems = append(l.problems, "restarting "+r.name+": "+err.Error()) })
			}
		}
		if long {
			restart()
		} else {
			restarts.Go(restart)
		}
	}
}

// victim picks the replica to kill: one that is up and serving a chat
// stream, while at least one other stays up; it waits up to 3 s for one.
func (l *load) victim(ctx context.Context, cl *cluster, rng *rand.Rand, done <-chan struct{}) *replica {
	for deadline := time.Now().Add(3 * time.Second); ; {
		var up, busy []*replica
		for _, r := range cl.replicas {
			if r.isUp() {
				up = append(up, r)
				if l.c.busy(r.name) > 0 {
					busy = append(busy, r)
				}
			}
		}
		if len(up) >= 2 {
			if len(busy) > 0 {
				return busy[rng.IntN(len(busy))]
			}
			if time.Now().After(deadline) {
				return up[rng.IntN(len(up))]
			}
		}
		select {
		case <-done:
			return nil
		case <-ctx.Done():
			return nil
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// newRand is the generator of stream i of a run with seed.
func newRand(seed int64, i uint64) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), i))
}
