package engine_test

import (
	"context"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/conversation/agentgate"
	"github.com/toolgate/toolgate/internal/conversation/inbox"
	"github.com/toolgate/toolgate/internal/postgres"
)

// The refusals of the packages beside the engine that decide requests too:
// agentgate (an agent's held calls) and inbox (every request by id).
func init() {
	refusalCases = append(refusalCases,
		refusalCase{name: "a held call's decision after its holder stopped", code: "held_call_gone", kind: apperr.Conflict,
			do: func(e *harness) error {
				id := e.heldRequest(ana, "clock_timestamp() - interval '1 second'")
				return heldDecision(e, id)
			}},
		refusalCase{name: "a decision on a held call whose client went away", code: "approval_withdrawn", kind: apperr.Conflict,
			do: func(e *harness) error {
				id := e.heldRequest(ana, "clock_timestamp() + interval '1 minute'")
				if _, err := e.pool.Exec(context.Background(), `UPDATE approval_requests SET state = 'withdrawn', decided_at = now() WHERE id = $1`, id); err != nil {
					e.t.Fatal(err)
				}
				return heldDecision(e, id)
			}},
		refusalCase{name: "a chat's request decided as a held call", code: "not_a_held_call", kind: apperr.Conflict,
			do: func(e *harness) error {
				_, a := e.asking(ana, "")
				return heldDecision(e, a.ID)
			}},
		refusalCase{name: "an inbox of another state than pending", code: "invalid_state", kind: apperr.Invalid,
			do: func(*harness) error { return inbox.ValidState("everything") }},
		refusalCase{name: "a held call decided where no MCP face for agents runs", code: "held_calls_unavailable", kind: apperr.Unavailable,
			do: func(e *harness) error {
				id := e.heldRequest(ana, "clock_timestamp() + interval '1 minute'")
				approve := true
				_, err := inbox.New(postgres.NewInboxStore(e.pool), e.chat.Book(), e.chat, inbox.Options{}).
					Decide(as(e.t.Context(), ana), id, conversation.Decision{Approve: &approve})
				return err
			}},
	)
}

// heldRequest stores an agent's session of u with one pending request of a
// held call whose holder's lease ends at until (SQL), and returns its id.
func (e *harness) heldRequest(u auth.User, until string) string {
	e.t.Helper()
	ctx := context.Background()
	const conv, id = "agt_codes", "mcpr_held_codes"
	if _, err := e.pool.Exec(ctx, `INSERT INTO conversations (id, title, owner_id, kind, client) VALUES ($1, 'agent (MCP)', $2, 'agent', '{"name":"agent"}')
		ON CONFLICT (id) DO NOTHING`, conv, u.ID); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.pool.Exec(ctx, `INSERT INTO approval_requests (id, conversation_id, response_id, server_label, upstream_label, tool_name,
			arguments, reason_source, sent_in_turn, held_until)
		VALUES ($1, $2, 'call_codes', 'demo', 'demo', 'delete_forecast', '{"city":"Oslo"}', 'tool', 'call_codes', `+until+`)`, id, conv); err != nil {
		e.t.Fatal(err)
	}
	return id
}

func heldDecision(e *harness, id string) error {
	approve := true
	_, err := agentgate.New(agentgate.Options{Keeper: e.chat.Keeper()}).
		DecideHeld(as(e.t.Context(), ana), conversation.Decision{ApprovalRequestID: id, Approve: &approve})
	return err
}
