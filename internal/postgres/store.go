package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolgate/toolgate/internal/policy"
)

// Store is the Postgres implementation of policy.Store.
type Store struct{ pool *pgxpool.Pool }

// NewStore returns a Store on pool.
func NewStore(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// Tx runs fn in one transaction.
func (s *Store) Tx(ctx context.Context, fn func(policy.Repo) error) error {
	return inTx(ctx, s.pool, func(tx pgx.Tx) error { return fn(newRepo(tx)) })
}

// Repo returns a repository that runs each statement on its own.
func (s *Store) Repo() policy.Repo { return newRepo(s.pool) }

// Ping reports whether the database answers.
func (s *Store) Ping(ctx context.Context) error { return translate(s.pool.Ping(ctx), "ping") }

// newRepo returns the policy stores on q: a pool, or one transaction.
func newRepo(q querier) policy.Repo {
	return policy.Repo{Settings: settingsStore{q}, Servers: serverStore{q}, Health: healthStore{q}, Tools: toolStore{q},
		Policies: policyStore{q}, Rules: ruleStore{q}, Hooks: hookStore{q}, Cards: cardStore{q}, Audit: auditStore{q}}
}

// repo writes audit entries in another store's transaction (webhooks.go).
type repo struct{ q querier }

// InsertAudit records e with q.
func (r repo) InsertAudit(ctx context.Context, e policy.AuditEntry) error {
	return auditStore(r).Insert(ctx, e)
}

// settingsStore is policy.SettingsStore.
type settingsStore struct{ q querier }

func (r settingsStore) Get(ctx context.Context) (policy.Settings, error) {
	var s policy.Settings
	err := r.q.QueryRow(ctx, `SELECT default_policy, default_policy_locked, ask_everything, updated_at FROM settings`).
		Scan(&s.DefaultPolicy, &s.DefaultPolicyLocked, &s.AskEverything, &s.UpdatedAt)
	return s, translate(err, "read settings")
}

func (r settingsStore) Put(ctx context.Context, s policy.Settings) (policy.Settings, error) {
	err := r.q.QueryRow(ctx, `UPDATE settings SET default_policy = $1, default_policy_locked = $2, ask_everything = $3, updated_at = now()
		RETURNING default_policy, default_policy_locked, ask_everything, updated_at`, s.DefaultPolicy, s.DefaultPolicyLocked, s.AskEverything).
		Scan(&s.DefaultPolicy, &s.DefaultPolicyLocked, &s.AskEverything, &s.UpdatedAt)
	return s, translate(err, "write settings")
}
