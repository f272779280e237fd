package postgres

import (
	"context"

	"github.com/toolgate/toolgate/internal/policy"
)

// hookStore is policy.HookStore.
type hookStore struct{ q querier }

// hookAAD binds a decision hook's sealed secret to its row: the server's
// label, or "" for the workspace's.
func hookAAD(label string) []byte { return []byte("decision_hook:" + label) }

func (r hookStore) Get(ctx context.Context, label string) (policy.DecisionHook, bool, error) {
	h := policy.DecisionHook{ServerLabel: label}
	var sealed []byte
	err := r.q.QueryRow(ctx, `SELECT url, secret_enc, timeout_ms, enabled, updated_at, updated_by FROM decision_hooks
		WHERE coalesce(server_label, '') = $1`, label).Scan(&h.URL, &sealed, &h.TimeoutMS, &h.Enabled, &h.UpdatedAt, &h.UpdatedBy)
	if noRows(err) {
		return h, false, nil
	}
	if err != nil {
		return h, false, translate(err, "read decision hook")
	}
	plain, err := box().Open(sealed, hookAAD(label))
	if err != nil {
		// Another SECRETS_KEY sealed it: the hook is still shown, replaced
		// and removed; it is not asked until a new secret is saved.
		h.SecretUnreadable = true
		return h, true, nil
	}
	h.Secret = string(plain)
	return h, true, nil
}

func (r hookStore) Put(ctx context.Context, h policy.DecisionHook) (policy.DecisionHook, error) {
	sealed := box().Seal([]byte(h.Secret), hookAAD(h.ServerLabel))
	err := r.q.QueryRow(ctx, `INSERT INTO decision_hooks (server_label, url, secret_enc, timeout_ms, enabled, updated_by)
		VALUES (nullif($1, ''), $2, $3, $4, $5, $6)
		ON CONFLICT ((coalesce(server_label, '')))
		DO UPDATE SET url = excluded.url, secret_enc = excluded.secret_enc, timeout_ms = excluded.timeout_ms,
			enabled = excluded.enabled, updated_at = now(), updated_by = excluded.updated_by
		RETURNING updated_at`, h.ServerLabel, h.URL, sealed, h.TimeoutMS, h.Enabled, h.UpdatedBy).Scan(&h.UpdatedAt)
	return h, translate(err, "write decision hook")
}

func (r hookStore) Delete(ctx context.Context, label string) error {
	_, err := r.q.Exec(ctx, `DELETE FROM decision_hooks WHERE coalesce(server_label, '') = $1`, label)
	return translate(err, "delete decision hook")
}
