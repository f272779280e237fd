package http_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/auth"
)

// aboutConversations returns the entries among es whose after names one
// of convs as its conversation_id.
func aboutConversations(es []auditEntry, convs ...string) []auditEntry {
	var out []auditEntry
	for _, en := range es {
		var d struct {
			ConversationID string `json:"conversation_id"`
		}
		if json.Unmarshal(en.After, &d) != nil {
			continue
		}
		for _, c := range convs {
			if d.ConversationID == c {
				out = append(out, en)
			}
		}
	}
	return out
}

// decided returns the approval.decide entries about approval request id
// among es, with the after decoded.
func decided(es []auditEntry, id string) (out []decidedEntry, actors []string) {
	for _, en := range es {
		var d decidedEntry
		if en.Action != "approval.decide" || json.Unmarshal(en.After, &d) != nil || d.ApprovalRequestID != id {
			continue
		}
		out, actors = append(out, d), append(actors, en.Actor)
	}
	return out, actors
}

// A member sees every approval.decide entry about their own conversations'
// requests, whoever or whatever closed them: one that expired (Toolgate's
// sweep) and one that became outcome_unknown when its follow-up failed
// (Toolgate, by turn_end), in the list and the export; another member
// sees none of them (only their own).
func TestAudit_MemberSeesDecisionsAboutTheirOwnConversations(t *testing.T) {
	e := newAPIWith(t, envOptions{leaseTTL: time.Hour})
	e.askFor("delete_forecast")
	a, _ := e.newUser(auth.Member)
	b, _ := e.newUser(auth.Member)

	_, convA, expiring := a.askToDeleteOslo()
	_, convB, bExpiring := b.askToDeleteOslo()
	e.pastDeadline(expiring.ID)
	e.pastDeadline(bExpiring.ID)
	if n := e.chat.ExpireApprovals(context.Background()); n != 2 {
		t.Fatalf("the sweep expired %d; want 2", n)
	}

	_, convA2, unknown := a.askToDeleteOslo()
	e.up.setBehavior("status=502")
	one[turnError](t, a.decide(convA2, unknown.ID, true, nil), "error")
	e.up.setBehavior("")

	for name, entries := range map[string][]auditEntry{"list": a.audit(), "export": a.export("")} {
		if d, actors := decided(entries, expiring.ID); len(d) != 1 || d[0].State != "expired" || d[0].By != "expiry" || actors[0] != "toolgate" {
			t.Errorf("A's %s: expiry entries %+v by %v; want one, expired by Toolgate", name, d, actors)
		}
		d, actors := decided(entries, unknown.ID)
		if len(d) != 2 || d[0].State != "outcome_unknown" || d[0].By != "turn_end" || actors[0] != "toolgate" ||
			d[0].Reason == nil || !strings.Contains(*d[0].Reason, "may have run") || d[0].ConversationID != convA2 ||
			d[1].State != "approved" || d[1].By != "person" {
			t.Errorf("A's %s: entries %+v by %v; want A's approval, then outcome_unknown by Toolgate (turn_end) with the reason", name, d, actors)
		}
		if got := aboutConversations(entries, convB); len(got) != 0 {
			t.Errorf("A's %s shows %d entries about B's conversation", name, len(got))
		}
	}
	for name, entries := range map[string][]auditEntry{"list": b.audit(), "export": b.export(""),
		"list of decisions": b.export("?action=approval.decide")} {
		if got := aboutConversations(entries, convA, convA2); len(got) != 0 {
			t.Errorf("B's %s shows %d entries about A's conversations: %+v", name, len(got), got)
		}
		if d, _ := decided(entries, bExpiring.ID); len(d) != 1 || d[0].State != "expired" {
			t.Errorf("B's %s: own expiry entries %+v; want one", name, d)
		}
	}
}
