package postgres

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/internal/policy"
)

// approvalStatsSQL counts, per tool, the audit log's entries in [$1, $2)
// (audit_log_action_at finds them):
//
//   - calls: tool.call receipts of calls that ran without a person being
//     asked: allowed by anything but an approval, and not refused or not
//     run at the MCP face;
//   - closed: the approval.decide entry that closed each request (from
//     state pending: an approved request whose follow-up later ended gets
//     a second entry from state approved, which is not a decision), with
//     how it ended. "stopped": true in the entry (a decision with
//     "stop": true denied it and the rest of its batch) is a stopped
//     batch; by rule, hook or policy was answered
//     without a card (not asked);
//   - the median of the time from the request (approval_requests, while
//     the conversation is kept) to a person's decision, and the three
//     people who decided most (their latest email in the log).
const approvalStatsSQL = `
WITH calls AS (
	SELECT server_label, tool_name, count(*) AS ran_unasked
	FROM audit_log
	WHERE action = 'tool.call' AND at >= $1 AND at < $2
		AND coalesce(after->'allowed_by'->>'kind', '') <> 'approval'
		AND coalesce(after->>'outcome', '') NOT IN ('refused', 'not_run')
	GROUP BY server_label, tool_name
), closed AS (
	SELECT id, at, server_label, tool_name, actor, actor_id, after->>'approval_request_id' AS request_id,
		CASE
			WHEN after->'stopped' = 'true'::jsonb THEN 'stopped'
			WHEN after->>'by' IN ('rule', 'hook', 'policy') THEN 'auto'
			WHEN after->>'state' = 'approved' THEN 'approved'
			WHEN after->>'state' = 'denied' THEN 'denied'
			WHEN after->>'state' = 'expired' THEN 'expired'
			ELSE 'superseded'
		END AS outcome
	FROM audit_log
	WHERE action = 'approval.decide' AND at >= $1 AND at < $2 AND before->>'state' = 'pending'
), asked AS (
	SELECT c.server_label, c.tool_name,
		count(*) FILTER (WHERE outcome <> 'auto') AS asked,
		count(*) FILTER (WHERE outcome = 'approved') AS approved,
		count(*) FILTER (WHERE outcome = 'denied') AS denied,
		count(*) FILTER (WHERE outcome = 'stopped') AS stopped,
		count(*) FILTER (WHERE outcome = 'expired') AS expired,
		count(*) FILTER (WHERE outcome = 'superseded') AS superseded,
		percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM c.at - r.requested_at))
			FILTER (WHERE outcome IN ('approved', 'denied', 'stopped') AND c.actor_id IS NOT NULL) AS median
	FROM closed c LEFT JOIN approval_requests r ON r.id = c.request_id
	GROUP BY c.server_label, c.tool_name
), deciders AS (
	SELECT server_label, tool_name, actor_id, (array_agg(actor ORDER BY id DESC))[1] AS email, count(*) AS n,
		row_number() OVER (PARTITION BY server_label, tool_name ORDER BY count(*) DESC, max(id) DESC) AS rank
	FROM closed
	WHERE outcome IN ('approved', 'denied', 'stopped') AND actor_id IS NOT NULL
	GROUP BY server_label, tool_name, actor_id
)
SELECT coalesce(a.server_label, c.server_label, ''), coalesce(a.tool_name, c.tool_name, ''), coalesce(c.ran_unasked, 0),
	coalesce(a.asked, 0), coalesce(a.approved, 0), coalesce(a.denied, 0), coalesce(a.stopped, 0), coalesce(a.expired, 0),
	coalesce(a.superseded, 0), a.median,
	coalesce((SELECT json_agg(json_build_object('user_id', d.actor_id, 'email', d.email, 'count', d.n) ORDER BY d.rank)
		FROM deciders d WHERE d.server_label = a.server_label AND d.tool_name = a.tool_name AND d.rank <= 3), '[]')
FROM asked a FULL JOIN calls c ON c.server_label = a.server_label AND c.tool_name = a.tool_name
WHERE coalesce(a.asked, 0) > 0 OR coalesce(c.ran_unasked, 0) > 0
ORDER BY 1, 2`

// ApprovalStats reads approvalStatsSQL for period p.
func (r auditStore) Stats(ctx context.Context, p policy.StatsPeriod) ([]policy.ToolStats, error) {
	rows, err := r.q.Query(ctx, approvalStatsSQL, p.From, p.To)
	if err != nil {
		return nil, translate(err, "count approvals")
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (policy.ToolStats, error) {
		var t policy.ToolStats
		var deciders []byte
		err := row.Scan(&t.ServerLabel, &t.ToolName, &t.RanUnasked, &t.Asked, &t.Approved, &t.Denied, &t.Stopped, &t.Expired,
			&t.Superseded, &t.MedianSecondsToDecision, &deciders)
		if err == nil {
			err = json.Unmarshal(deciders, &t.TopDeciders)
		}
		return t, err
	})
	return out, translate(err, "count approvals")
}
