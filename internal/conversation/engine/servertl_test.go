package engine_test

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/conversation/engine"
	"github.com/toolgate/toolgate/internal/demomcp"
	"github.com/toolgate/toolgate/internal/policy"
)

// addServer registers another demo MCP server under label, with settings
// applied by set before it is created.
func (e *harness) addServer(label string, set func(*policy.NewServer)) *demomcp.Demo {
	e.t.Helper()
	d := demomcp.New(demomcp.Options{})
	srv := httptest.NewServer(d.Handler())
	e.t.Cleanup(srv.Close)
	in := policy.NewServer{Label: label, URL: srv.URL + "/mcp"}
	if set != nil {
		set(&in)
	}
	got, err := e.policies.Servers.CreateServer(as(e.t.Context(), admin), in)
	if err != nil || got.ToolCount == 0 {
		e.t.Fatalf("registering %s: %v (%d tools)", label, err, got.ToolCount)
	}
	return d
}

// A server's approval_ttl_seconds replaces APPROVAL_TTL for its requests: of
// two requests of the same age, the one of a server with a one-minute limit
// expires (with a reason naming that server and limit) while the other,
// under the default 30 minutes, waits on; the cards count down to each
// one's own limit.
func TestExpiry_ServerOverrideExpiresOnlyItsOwnRequests(t *testing.T) {
	e := newEngine(t, engineOptions{})
	minute := 60
	e.addServer("quick", func(n *policy.NewServer) { n.ApprovalTTLSeconds = &minute })

	turn := e.message(ana, "", `demo.delete_forecast {"city": "Berlin"} quick.delete_forecast {"city": "Bonn"}`)
	rec := e.run(ana, turn)
	conv := turn.ConversationID()
	byServer := map[string]conversation.Approval{}
	for _, ev := range rec.all() {
		if a, ok := ev.data.(conversation.Approval); ok && ev.name == conversation.EventNameApproval {
			byServer[a.ServerLabel] = a
		}
	}
	demo, quick := byServer["demo"], byServer["quick"]
	if demo.ID == "" || quick.ID == "" {
		t.Fatalf("approval.required for %v; want one for demo and one for quick (events %v)", byServer, rec.names())
	}
	for _, c := range []struct {
		a   conversation.Approval
		ttl time.Duration
	}{{demo, engine.DefaultApprovalTTL}, {quick, time.Minute}} {
		if c.a.ExpiresAt == nil || !c.a.ExpiresAt.Equal(c.a.RequestedAt.Add(c.ttl)) {
			t.Errorf("%s: approval.required expires_at %v; want requested_at + %v", c.a.ServerLabel, c.a.ExpiresAt, c.ttl)
		}
		if got := e.approval(conv, c.a.ID); got.ExpiresAt == nil || !got.ExpiresAt.Equal(got.RequestedAt.Add(c.ttl)) {
			t.Errorf("%s: transcript expires_at %v; want requested_at + %v", c.a.ServerLabel, got.ExpiresAt, c.ttl)
		}
	}

	if n := e.chat.ExpireApprovals(t.Context()); n != 0 {
		t.Fatalf("%d expired when both had just asked; want none", n)
	}
	// Both asked two minutes ago.
	if _, err := e.pool.Exec(t.Context(), `UPDATE approval_requests SET requested_at = requested_at - interval '2 minutes'
		WHERE conversation_id = $1`, conv); err != nil {
		t.Fatal(err)
	}
	if n := e.chat.ExpireApprovals(t.Context()); n != 1 {
		t.Fatalf("%d expired; want only quick's", n)
	}
	gotQuick, gotDemo := e.approval(conv, quick.ID), e.approval(conv, demo.ID)
	want := conversation.ExpiredServerTTLReason("quick", time.Minute)
	if gotQuick.State != conversation.Expired || deref(gotQuick.DecisionReason) != want {
		t.Errorf("quick's request %s (%q); want expired with %q", gotQuick.State, deref(gotQuick.DecisionReason), want)
	}
	if gotDemo.State != conversation.Pending || gotDemo.ExpiresAt == nil {
		t.Errorf("demo's request %s (expires %v); want still pending with its countdown", gotDemo.State, gotDemo.ExpiresAt)
	}

	// 0: the server's requests never expire, however old.
	never := 0
	if _, err := e.policies.Servers.UpdateServer(as(t.Context(), admin), "demo", policy.ServerPatch{
		ApprovalTTLSeconds: policy.Optional[int]{Set: true, Value: &never}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.pool.Exec(t.Context(), `UPDATE approval_requests SET requested_at = requested_at - interval '2 hours'
		WHERE id = $1`, demo.ID); err != nil {
		t.Fatal(err)
	}
	if n := e.chat.ExpireApprovals(t.Context()); n != 0 {
		t.Errorf("%d expired of a server whose requests never expire; want none", n)
	}
	if got := e.approval(conv, demo.ID); got.State != conversation.Pending || got.ExpiresAt != nil {
		t.Errorf("demo's request %s, expires %v; want pending with no countdown", got.State, got.ExpiresAt)
	}
}
