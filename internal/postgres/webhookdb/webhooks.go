// Package webhookdb is the Postgres implementation of webhook.Store: the
// webhooks, their delivery queue (leased by replicas) and its log. The
// deliveries of stored events are queued by internal/postgres in the
// statement that stores them (its webhookOutbox).
package webhookdb

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/postgres"
	"github.com/toolgate/toolgate/internal/webhook"
)

// Store is the Postgres implementation of webhook.Store.
type Store struct{ pool *pgxpool.Pool }

// New returns a Store on pool.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

var _ webhook.Store = (*Store)(nil)

const webhookCols = `id, url, description, events, secret_enc, enabled, created_at, updated_at`

func scanWebhook(row pgx.Row) (webhook.Webhook, error) {
	var w webhook.Webhook
	var sealed []byte
	// The secret is not opened here: the API never shows it again, and a
	// wrong SECRETS_KEY must not hide the webhooks (Claim reports it per
	// delivery).
	err := row.Scan(&w.ID, &w.RawURL, &w.Description, &w.Events, &sealed, &w.Enabled, &w.CreatedAt, &w.UpdatedAt)
	w.URL = policy.MaskURL(w.RawURL)
	return w, err
}

// ListWebhooks returns every webhook, oldest first, without secrets.
func (s *Store) ListWebhooks(ctx context.Context) ([]webhook.Webhook, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+webhookCols+` FROM webhooks ORDER BY created_at, id`)
	if err != nil {
		return nil, postgres.Translate(err, "list webhooks")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (webhook.Webhook, error) { return scanWebhook(r) })
	return out, postgres.Translate(err, "list webhooks")
}

// Webhook returns one webhook (without its secret).
func (s *Store) Webhook(ctx context.Context, id string) (webhook.Webhook, error) {
	w, err := scanWebhook(s.pool.QueryRow(ctx, `SELECT `+webhookCols+` FROM webhooks WHERE id = $1`, id))
	return w, postgres.Translate(err, "read webhook")
}

// CreateWebhook stores w, its secret sealed, and the audit entry.
func (s *Store) CreateWebhook(ctx context.Context, w webhook.Webhook, audit policy.AuditEntry) (webhook.Webhook, error) {
	err := postgres.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `INSERT INTO webhooks (id, url, description, events, secret_enc, enabled)
			VALUES ($1, $2, $3, $4, $5, $6) RETURNING created_at, updated_at`,
			w.ID, w.RawURL, w.Description, w.Events, postgres.Box().Seal([]byte(w.Secret), []byte(w.ID)), w.Enabled).Scan(&w.CreatedAt, &w.UpdatedAt)
		if err != nil {
			return postgres.Translate(err, "create webhook")
		}
		return postgres.InsertAudit(ctx, tx, audit)
	})
	return w, err
}

// UpdateWebhook locks the webhook, applies change and stores the result
// with change's audit entry.
func (s *Store) UpdateWebhook(ctx context.Context, id string, change func(*webhook.Webhook) (policy.AuditEntry, error)) (webhook.Webhook, error) {
	var w webhook.Webhook
	err := postgres.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		w, err = scanWebhook(tx.QueryRow(ctx, `SELECT `+webhookCols+` FROM webhooks WHERE id = $1 FOR UPDATE`, id))
		if err != nil {
			return postgres.Translate(err, "read webhook")
		}
		audit, err := change(&w)
		if err != nil {
			return err
		}
		err = tx.QueryRow(ctx, `UPDATE webhooks SET url = $2, description = $3, events = $4, enabled = $5, updated_at = now()
			WHERE id = $1 RETURNING updated_at`, id, w.RawURL, w.Description, w.Events, w.Enabled).Scan(&w.UpdatedAt)
		if err != nil {
			return postgres.Translate(err, "update webhook")
		}
		return postgres.InsertAudit(ctx, tx, audit)
	})
	return w, err
}

// DeleteWebhook deletes the webhook and its deliveries, audited.
func (s *Store) DeleteWebhook(ctx context.Context, id string, audit func(webhook.Webhook) policy.AuditEntry) error {
	return postgres.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		w, err := scanWebhook(tx.QueryRow(ctx, `DELETE FROM webhooks WHERE id = $1 RETURNING `+webhookCols, id))
		if err != nil {
			return postgres.Translate(err, "delete webhook")
		}
		return postgres.InsertAudit(ctx, tx, audit(w))
	})
}

// EnqueuePing queues a ping, due now, and wakes the dispatchers.
func (s *Store) EnqueuePing(ctx context.Context, webhookID string, data json.RawMessage) (webhook.Delivery, error) {
	var id string
	err := s.pool.QueryRow(ctx, `WITH d AS (
			INSERT INTO webhook_deliveries (id, webhook_id, event, data)
			VALUES ('whd_' || md5(random()::text || clock_timestamp()::text), $1, $2, $3) RETURNING id
		) SELECT d.id, pg_notify('`+webhook.Channel+`', '') FROM d`, webhookID, webhook.EventPing, data).Scan(&id, new(any))
	if err != nil {
		return webhook.Delivery{}, postgres.Translate(err, "queue a test delivery")
	}
	ds, err := s.deliveries(ctx, `d.id = $1`, id)
	if err != nil || len(ds) == 0 {
		return webhook.Delivery{}, postgres.Translate(err, "read the test delivery")
	}
	return ds[0], nil
}

// Deliveries lists the webhook's latest deliveries with their attempts.
func (s *Store) Deliveries(ctx context.Context, webhookID string, limit int) ([]webhook.Delivery, error) {
	return s.deliveries(ctx, `d.webhook_id = $1 ORDER BY d.created_at DESC, d.id LIMIT $2`, webhookID, limit)
}

func (s *Store) deliveries(ctx context.Context, where string, args ...any) ([]webhook.Delivery, error) {
	rows, err := s.pool.Query(ctx, `SELECT d.id, d.webhook_id, d.event, nullif(d.conversation_id, ''), d.state, d.attempts,
			d.last_status, d.last_error, d.last_latency_ms, CASE WHEN d.state = 'pending' THEN d.next_attempt_at END, d.delivered_at, d.created_at,
			coalesce((SELECT json_agg(json_build_object('attempt', a.attempt, 'at', a.at, 'status', a.status, 'error', a.error,
				'latency_ms', a.latency_ms) ORDER BY a.attempt) FROM webhook_attempts a WHERE a.delivery_id = d.id), '[]')
		FROM webhook_deliveries d WHERE `+where, args...)
	if err != nil {
		return nil, postgres.Translate(err, "read webhook deliveries")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (webhook.Delivery, error) {
		var d webhook.Delivery
		var log []byte
		err := r.Scan(&d.ID, &d.WebhookID, &d.Event, &d.ConversationID, &d.State, &d.Attempts, &d.Status, &d.Error,
			&d.LatencyMS, &d.NextAttemptAt, &d.DeliveredAt, &d.CreatedAt, &log)
		if err == nil {
			err = json.Unmarshal(log, &d.Log)
		}
		return d, err
	})
	return out, postgres.Translate(err, "read webhook deliveries")
}

// Claim gives owner the lease on up to limit due deliveries, counting an
// attempt on each. FOR UPDATE SKIP LOCKED lets replicas claim at once
// without waiting on or taking each other's rows; the lease keeps a row
// claimed after the statement commits, until its result is recorded or
// the lease runs out (the replica died), when another replica claims it
// again. A delivery whose webhook is disabled waits (a ping is sent
// regardless).
func (s *Store) Claim(ctx context.Context, owner string, lease time.Duration, maxAttempts, limit int) ([]webhook.Claimed, error) {
	_, err := s.pool.Exec(ctx, `UPDATE webhook_deliveries SET state = 'failed', lease_owner = NULL, lease_expires_at = NULL,
			last_error = 'the replica sending the last attempt stopped before it finished; no attempts are left'
		WHERE state = 'pending' AND attempts >= $1 AND lease_expires_at < clock_timestamp()`, maxAttempts)
	if err != nil {
		return nil, postgres.Translate(err, "give up on webhook deliveries")
	}
	rows, err := s.pool.Query(ctx, `WITH due AS (
			SELECT d.id FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
			WHERE d.state = 'pending' AND d.next_attempt_at <= clock_timestamp() AND d.attempts < $4
				AND (d.lease_expires_at IS NULL OR d.lease_expires_at < clock_timestamp())
				AND (w.enabled OR d.event = 'ping')
			ORDER BY d.next_attempt_at LIMIT $3
			FOR UPDATE OF d SKIP LOCKED
		)
		UPDATE webhook_deliveries d SET attempts = d.attempts + 1, lease_owner = $1,
			lease_expires_at = clock_timestamp() + make_interval(secs => $2)
		FROM due, webhooks w WHERE d.id = due.id AND w.id = d.webhook_id
		RETURNING d.id, d.webhook_id, w.url, w.secret_enc, d.event, d.conversation_id, d.conversation_title, d.data, d.created_at, d.attempts`,
		owner, lease.Seconds(), limit, maxAttempts)
	if err != nil {
		return nil, postgres.Translate(err, "claim webhook deliveries")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (webhook.Claimed, error) {
		var c webhook.Claimed
		var sealed []byte
		err := r.Scan(&c.ID, &c.WebhookID, &c.URL, &sealed, &c.Event, &c.ConversationID, &c.ConversationTitle, &c.Data, &c.CreatedAt, &c.Attempt)
		if err != nil {
			return c, err
		}
		plain, err := postgres.Box().Open(sealed, []byte(c.WebhookID))
		if err != nil {
			c.SecretErr = fmt.Errorf("the webhook's signing secret cannot be read: %w", err)
		}
		c.Secret = string(plain)
		return c, nil
	})
	return out, postgres.Translate(err, "claim webhook deliveries")
}

// Record logs the attempt (unless its webhook was deleted meanwhile) and,
// if owner still holds that attempt's lease, stores its outcome and
// releases the lease.
func (s *Store) Record(ctx context.Context, owner string, r webhook.Result) error {
	var status *int
	if r.Status != 0 {
		status = &r.Status
	}
	var next *time.Time
	if r.State == webhook.StatePending {
		next = &r.NextAt
	}
	ms := int(r.Latency.Milliseconds())
	_, err := s.pool.Exec(ctx, `WITH logged AS (
			INSERT INTO webhook_attempts (delivery_id, attempt, status, error, latency_ms)
			SELECT $1, $2, $3, nullif($4, ''), $5 WHERE EXISTS (SELECT 1 FROM webhook_deliveries WHERE id = $1)
			ON CONFLICT DO NOTHING
		)
		UPDATE webhook_deliveries SET state = $6, last_status = $3, last_error = nullif($4, ''), last_latency_ms = $5,
			next_attempt_at = $7, delivered_at = CASE WHEN $6 = 'delivered' THEN clock_timestamp() END,
			lease_owner = NULL, lease_expires_at = NULL
		WHERE id = $1 AND attempts = $2 AND lease_owner = $8`,
		r.DeliveryID, r.Attempt, status, r.Error, ms, r.State, next, owner)
	return postgres.Translate(err, "record a webhook delivery attempt")
}

// Prune deletes the delivered and failed deliveries created before before,
// with their attempts; it returns how many.
func (s *Store) Prune(ctx context.Context, before time.Time) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM webhook_deliveries WHERE state <> 'pending' AND created_at < $1`, before)
	return tag.RowsAffected(), postgres.Translate(err, "prune the webhook delivery log")
}
