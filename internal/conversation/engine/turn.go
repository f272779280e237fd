package engine

import (
	"context"
	"time"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/policy"
)

// SupersededReason is sent upstream for a request the person did not answer
// because they wrote a new message instead.
const SupersededReason = "The user sent a new message instead of answering this approval request, so it was not approved."

// interruptedReason closes a request whose answer already reached upstream in
// a response that broke off: it must not run a second time.
const interruptedReason = "This request was already answered in an earlier response that was interrupted; it must not run again."

// Turn is one prepared turn: the conversation is marked as running it, and
// Run sends it upstream (or, for decisions while others are pending, only
// reports them) and relays the answer.
type Turn struct {
	s         *Service
	user      auth.User // the caller: the conversation's owner
	conv      conversation.Conversation
	id        string
	kind      string // "message" or "decisions"
	userItem  *conversation.Item
	decisions []conversation.DecisionEvent
	claimed   bool // the conversation is marked as running this turn
	previous  string
	userText  string
	answers   []conversation.Answer
	answerIDs []string
	// sent: some approval's answer was marked sent in this turn
	// (sent_in_turn): its end has approvals to settle in gateway mode.
	sent        bool
	grants      map[string]map[string]policy.GrantRef
	pendingIDs  []string // with no follow-up: the requests still waiting
	after, last int64    // the ids just before the turn's first event and of its opening's last
	// policies is the policy read of the turn's first request, made by the
	// statement that opened the turn (openingRepo); nil once used.
	policies *policy.Read
	// dbNow is the database's clock when the message's turn locked the
	// previous response's requests: a pending one whose time is up then
	// is expired, not superseded. Zero: not known (none is judged so).
	dbNow time.Time
	// expired are the requests closeApprovals expired (for the metric,
	// once the turn's opening is committed).
	expired []conversation.Approval
	// opened is the turn's opening events as stored (after commit, Follow
	// hands them to its stream from memory).
	opened []conversation.StoredEvent
	// stopped is how a turn a person's stop ended ends (no follow-up);
	// nil otherwise.
	stopped *conversation.TurnError
}

// openingRepo is r for logOpening: its OpenTurn also makes the policy read
// of the turn's first request (policy_version and the owner's personal
// policies) and keeps it on the turn, so the request leaves without a
// statement of its own after the commit.
type openingRepo struct {
	conversation.Turns
	t *Turn
}

func (o openingRepo) Open(ctx context.Context, op conversation.TurnOpening) (int64, []conversation.Grant, error) {
	rd := &policy.Read{}
	op.Policies = rd
	last, gs, err := o.Turns.Open(ctx, op)
	if err == nil {
		o.t.policies = rd
	}
	return last, gs, err
}

// open is logOpening with the policy read folded into the opening.
func (t *Turn) open(ctx context.Context, r conversation.Repo) error {
	r.Turns = openingRepo{Turns: r.Turns, t: t}
	return t.logOpening(ctx, r)
}

// ConversationID is the conversation the turn belongs to.
func (t *Turn) ConversationID() string { return t.conv.ID }

// claim makes the turn the one that runs in the conversation, under the
// lock the caller's transaction holds: logOpening, which follows, records
// the claim, the answers it carries and its opening events in one statement.
func (t *Turn) claim() { t.claimed = true }

func turnInProgress(id string) error {
	return apperr.New(apperr.Conflict, "turn_in_progress",
		"a turn is streaming in conversation %q; wait for it to finish or cancel it (POST /api/conversations/%s/cancel)", id, id)
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// stripNUL removes NUL characters, which Postgres text cannot hold and no
// person means to type.
func stripNUL(s string) string { return conversation.StripNUL(s) }

// IdempotencyKey is the Idempotency-Key a request holds (internal/http):
// the turn it starts records itself on it (Repo.Turns.ClaimIdempotencyKey).
type IdempotencyKey struct {
	Key    string
	Holder string // the reservation that holds it
}

type idempotencyKeyCtx struct{}

// WithIdempotencyKey says that the turn started with ctx is the one of the
// request holding k.
func WithIdempotencyKey(ctx context.Context, k IdempotencyKey) context.Context {
	return context.WithValue(ctx, idempotencyKeyCtx{}, k)
}
