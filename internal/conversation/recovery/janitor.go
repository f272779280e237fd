// Package recovery keeps turns honest across replicas: it renews this
// replica's turn leases, closes the turns whose replica died (their lease
// expired), and expires approval requests that waited too long.
package recovery

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/conversation/record"
)

// Turns is what recovery needs of the turns running on this replica.
type Turns interface {
	// Replica is this process's replica id.
	Replica() string
	// LeaseTTL is how long a turn outlives the replica running it.
	LeaseTTL() time.Duration
	// Running are the turns running here.
	Running() []string
	// Ending are the turns whose end is still being stored here.
	Ending() []string
	// Here reports whether the conversation's turn runs here, or turn's end is still being stored here.
	Here(conversationID, turn string) bool
	// StopTurn cancels the turn running here with cause.
	StopTurn(turn string, cause error)
	// StopAll cancels every turn running here with cause.
	StopAll(cause error)
	// Stopping is closed when the turns stop for good (shutdown).
	Stopping() <-chan struct{}
	// ExpireApprovals expires the approval requests out of time; it reports how many.
	ExpireApprovals(ctx context.Context) int
	// Poke wakes the streams of a conversation whose events changed.
	Poke(conversationID string)
}

// Options are a Janitor's settings.
type Options struct {
	// Keeper is the record of what ran (read-back, receipts, approvals).
	Keeper *record.Keeper
	// Observer hears what metrics count; nil: NopObserver.
	Observer conversation.Observer
}

// Janitor runs recovery for the turns of this replica.
type Janitor struct {
	store    conversation.Store
	turns    Turns
	log      *slog.Logger
	observer conversation.Observer
	closer   *Closer
	now      func() time.Time
}

// New returns the Janitor over store for turns, logging to log.
func New(store conversation.Store, turns Turns, log *slog.Logger, opts Options) *Janitor {
	j := &Janitor{store: store, turns: turns, log: log, observer: opts.Observer, now: time.Now}
	if j.observer == nil {
		j.observer = conversation.NopObserver{}
	}
	j.closer = NewCloser(store, opts.Keeper, log, turns.Poke)
	return j
}

// Recover closes the turns whose replica died (their lease expired) and
// supersedes approval requests left by responses that never completed. It
// never touches a live replica's turns: a turn whose lease is still valid
// is left alone, and closed by a later sweep if its lease runs out.
func (j *Janitor) Recover(ctx context.Context) error {
	if n := j.Sweep(ctx); n > 0 {
		j.log.WarnContext(ctx, "closed turns left running by a replica that stopped", "count", n)
	}
	// Their responses never completed: what they asked cannot be answered.
	n, err := j.store.Repo().Leases.SupersedeOrphans(ctx, "The response that asked did not complete (the server stopped), so this request can no longer be answered.")
	if n > 0 {
		j.log.WarnContext(ctx, "superseded approval requests of responses that never completed", "count", n)
	}
	return err
}

// Start runs, until ctx ends or the turns stop, what keeps turns honest across
// replicas: this replica's leases are renewed every third of the lease,
// turns whose lease expired (their replica died) are closed, and approval
// requests that waited longer than APPROVAL_TTL expire.
func (j *Janitor) Start(ctx context.Context) {
	go func() {
		renew := time.NewTicker(j.turns.LeaseTTL() / 3)
		defer renew.Stop()
		last := j.now()
		sweep := time.NewTimer(j.turns.LeaseTTL()/2 + rand.N(j.turns.LeaseTTL()/4+1))
		defer sweep.Stop()
		for {
			select {
			case <-ctx.Done():
				sweep.Stop()
				return
			case <-j.turns.Stopping():
				sweep.Stop()
				return
			case <-renew.C:
				if j.renew(ctx) {
					last = j.now()
				} else if j.now().Sub(last) > j.turns.LeaseTTL()*2/3 {
					// Unrenewed, the leases may expire and be taken over:
					// stop before another replica closes these turns.
					j.turns.StopAll(ErrLeaseLost)
				}
			case <-sweep.C:
				j.Sweep(ctx)
				j.turns.ExpireApprovals(ctx)
				j.withdrawAbandoned(ctx)
				sweep.Reset(j.turns.LeaseTTL()/2 + rand.N(j.turns.LeaseTTL()/4+1))
			}
		}
	}()
}

// withdrawAbandoned withdraws the requests of agents' held calls that no
// replica holds open any longer (theirs stopped): no one waits for them.
func (j *Janitor) withdrawAbandoned(ctx context.Context) {
	n, err := j.store.Repo().Leases.WithdrawAbandoned(ctx, "Withdrawn: the connection that held this call open ended (its Toolgate replica stopped), so it can no longer run.")
	if err != nil {
		j.log.WarnContext(ctx, "withdrawing abandoned held calls failed", "error", err)
	}
	if n > 0 {
		j.log.WarnContext(ctx, "withdrew held calls no replica holds any longer", "count", n)
	}
}

// renew extends the leases of this replica's turns and stops the turns it
// no longer holds; false when the database could not be asked.
func (j *Janitor) renew(ctx context.Context) bool {
	turns := j.turns.Running()
	byTurn := map[string]bool{}
	for _, t := range turns {
		byTurn[t] = true
	}
	// A turn whose end is still being stored keeps its lease: this replica
	// holds what it received and could not store yet.
	turns = append(turns, j.turns.Ending()...)
	if len(turns) == 0 {
		return true
	}
	held, err := j.store.Repo().Leases.Renew(ctx, j.turns.Replica(), turns, j.turns.LeaseTTL())
	if err != nil {
		j.log.WarnContext(ctx, "renewing turn leases failed", "error", err)
		return false
	}
	for _, h := range held {
		delete(byTurn, h)
	}
	for turn := range byTurn {
		j.log.WarnContext(ctx, "a turn's lease was lost; stopping it here", "turn_id", turn)
		j.turns.StopTurn(turn, ErrLeaseLost)
	}
	return true
}

// Sweep closes the turns whose lease expired, as interrupted; it reports
// how many it closed. A few at a time: closing one may wait a few seconds
// for its response to be read back.
func (j *Janitor) Sweep(ctx context.Context) int {
	expired, err := j.store.Repo().Leases.ExpiredTurns(ctx, 100)
	if err != nil {
		j.log.WarnContext(ctx, "looking for expired turn leases failed", "error", err)
		return 0
	}
	var n atomic.Int64
	var wg sync.WaitGroup
	slots := make(chan struct{}, sweepParallel)
	for _, rt := range expired {
		if rt.LeaseOwner == j.turns.Replica() && j.turns.Here(rt.ConversationID, rt.Turn) {
			continue // ours and running, or its end still being stored here: the renewal is late, not the replica dead
		}
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			ok, err := j.closer.Close(ctx, rt)
			if err != nil {
				j.log.WarnContext(ctx, "closing a turn whose lease expired failed", "conversation_id", rt.ConversationID, "turn_id", rt.Turn, "error", err)
				return
			}
			if ok {
				n.Add(1)
				j.observer.LeaseTakeover()
				j.log.WarnContext(ctx, "closed a turn whose replica stopped renewing its lease", "conversation_id", rt.ConversationID,
					"turn_id", rt.Turn, "replica", rt.LeaseOwner)
			}
		}()
	}
	wg.Wait()
	return int(n.Load())
}

// sweepParallel is how many expired turns a sweep closes at once.
const sweepParallel = 8
