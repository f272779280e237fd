package postgres

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolgate/toolgate/internal/conversation"
)

// ConversationStore is the Postgres implementation of conversation.Store.
type ConversationStore struct{ pool *pgxpool.Pool }

var _ conversation.Store = (*ConversationStore)(nil)

// NewConversationStore returns a ConversationStore on pool.
func NewConversationStore(pool *pgxpool.Pool) *ConversationStore {
	return &ConversationStore{pool: pool}
}

// EventWriterConns is the size of the pool NewEventWriterStore opens.
const EventWriterConns = 2

// NewEventWriterStore opens a small pool of its own on pool's database,
// for the writes of streamed text deltas: they go on while the main pool is
// busy starting turns (a burst of new streams must not hold up the ones
// already streaming). Its commits are asynchronous (synchronous_commit
// off): the deltas were streamed already, and a Postgres crash can lose
// only the last of them, which a later synchronous commit (the turn's next
// event, its end) or the takeover's partial message makes good; Postgres
// flushes its log in order, so a durable event never follows a lost delta.
// Close it after the service using it has stopped.
func NewEventWriterStore(ctx context.Context, pool *pgxpool.Pool) (*ConversationStore, func(), error) {
	cfg := pool.Config().Copy()
	cfg.MaxConns, cfg.MinConns = EventWriterConns, 1
	if cfg.ConnConfig.RuntimeParams == nil {
		cfg.ConnConfig.RuntimeParams = map[string]string{}
	}
	cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	own, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, nil, translate(err, "open the event writer's connections")
	}
	return &ConversationStore{pool: own}, own.Close, nil
}

// Tx runs fn in one transaction; the decisions of NewConversationPolicies,
// given fn's repository, work in it too.
func (s *ConversationStore) Tx(ctx context.Context, fn func(conversation.Repo) error) error {
	p := &pipeTx{pool: s.pool}
	defer p.rollback(context.WithoutCancel(ctx))
	if err := fn(stores(p)); err != nil {
		return err
	}
	return p.commit(ctx)
}

// Repo returns a repository that runs each statement on its own.
func (s *ConversationStore) Repo() conversation.Repo { return stores(s.pool) }

// The stores of a conversation.Repo, each on the same querier: a
// transaction's (Tx) or the pool's (Repo).
type (
	conversationStore struct{ q querier }
	turnStore         struct{ q querier }
	eventStore        struct{ q querier }
	approvalStore     struct{ q querier }
	leaseStore        struct{ q querier }
	grantStore        struct{ q querier }
	callStore         struct{ q querier }
)

// stores is the conversation.Repo of q.
func stores(q querier) conversation.Repo {
	return conversation.Repo{
		Conversations: conversationStore{q},
		Turns:         turnStore{q},
		Events:        eventStore{q},
		Approvals:     approvalStore{q},
		Leases:        leaseStore{q},
		Grants:        grantStore{q},
		Calls:         callStore{q},
	}
}

// storesOf is the conversationStore of a Repo that stores made; false for
// another (a Repo whose stores are not all Postgres's on one querier).
func storesOf(r conversation.Repo) (conversationStore, bool) {
	c, ok := r.Conversations.(conversationStore)
	if !ok || r != stores(c.q) {
		return conversationStore{}, false
	}
	return c, true
}
