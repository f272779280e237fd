package postgres

import (
	"github.com/toolgate/toolgate/internal/webhook"
)

// webhookOutbox is the part of AppendEvents that queues a delivery of each
// stored event to every enabled webhook that wants it, in the statement
// that stores the event: both commit or neither does. The delivery id is
// derived from the webhook and the event, so it is the same however the
// statement is retried. It needs AppendEvents's seq CTE and parameters.
const webhookOutbox = `, webhook_outbox AS (
			INSERT INTO webhook_deliveries (id, webhook_id, event, conversation_id, conversation_title, event_id, data)
			SELECT 'whd_' || md5(w.id || '/' || $1 || '/' || (seq.base + e.ord)::text), w.id, e.name, $1,
				coalesce((SELECT title FROM conversations WHERE id = $1), ''), seq.base + e.ord, e.data::jsonb
			FROM seq, unnest($4::text[], $5::text[]) WITH ORDINALITY AS e(name, data, ord)
			JOIN webhooks w ON w.enabled AND e.name = ANY (w.events)
			ON CONFLICT DO NOTHING
			RETURNING 1
		)`

// webhookWake wakes the dispatchers (on commit) when webhookOutbox queued
// something.
const webhookWake = `(SELECT pg_notify('` + webhook.Channel + `', '') FROM webhook_outbox LIMIT 1)`
