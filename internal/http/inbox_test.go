package http_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/conversation"
)

// waiting mirrors an inbox entry: the card's fields the tests read, and
// its source.
type waiting struct {
	ID          string          `json:"approval_request_id"`
	Conv        string          `json:"conversation_id"`
	ServerLabel string          `json:"server_label"`
	ToolName    string          `json:"tool_name"`
	Arguments   json.RawMessage `json:"arguments"`
	State       string          `json:"state"`
	RequestedAt time.Time       `json:"requested_at"`
	ExpiresAt   *time.Time      `json:"expires_at"`
	Choices     []string        `json:"choices"`
	Source      struct {
		Kind           string `json:"kind"`
		ConversationID string `json:"conversation_id"`
		Title          string `json:"title"`
		Client         *struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"client"`
	} `json:"source"`
}

// inbox is GET /api/approvals?state=pending as e's user.
func (e *apiEnv) inbox() []waiting {
	e.t.Helper()
	var out struct {
		Approvals []waiting `json:"approvals"`
	}
	e.must(200, "GET", "/api/approvals?state=pending", nil, &out)
	return out.Approvals
}

func ids(ws []waiting) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.ID
	}
	return out
}

// agentAsks stores, as an agent's MCP session of owner would, a session
// (a conversation of kind agent) and a pending request of its held call,
// and returns the request's id.
func (e *apiEnv) agentAsks(owner, session, id string) string {
	e.t.Helper()
	ctx := context.Background()
	if _, err := e.pool.Exec(ctx, `INSERT INTO conversations (id, title, owner_id, kind, client)
		VALUES ($1, 'Claude Code session', $2, 'agent', '{"name": "claude-code", "version": "2.1.0"}')
		ON CONFLICT (id) DO NOTHING`, session, owner); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.pool.Exec(ctx, `INSERT INTO approval_requests (id, conversation_id, response_id, server_label,
			upstream_label, tool_name, arguments, reason_source)
		VALUES ($1, $2, $1, 'demo', 'demo', 'delete_forecast', '{"city":"Rome"}', 'tool')`, id, session); err != nil {
		e.t.Fatal(err)
	}
	return id
}

// heldDecider is an agent gate for the tests: it records what it was
// asked and decides the request in the database, as the caller.
type heldDecider struct {
	e    *apiEnv
	mu   sync.Mutex
	got  []conversation.Decision
	who  []string
	fail error
}

func (h *heldDecider) DecideHeld(ctx context.Context, d conversation.Decision) (conversation.Approval, error) {
	u, _ := auth.UserFrom(ctx)
	h.mu.Lock()
	h.got, h.who = append(h.got, d), append(h.who, u.ID)
	h.mu.Unlock()
	if h.fail != nil {
		return conversation.Approval{}, h.fail
	}
	state := conversation.Denied
	if *d.Approve {
		state = conversation.Approved
	}
	_, err := h.e.pool.Exec(ctx, `UPDATE approval_requests SET state = $2, decided_at = now(), decided_by_id = $3, reason = $4
		WHERE id = $1`, d.ApprovalRequestID, state, u.ID, d.Reason)
	return conversation.Approval{ID: d.ApprovalRequestID, State: state}, err
}

// The inbox lists what waits for its caller across chats and agents,
// oldest first, with the card's fields and the source; nobody else's.
// Catches: an inbox not scoped to the owner (ben sees ana's), agents left
// out, the wrong order, the source's kind or client not filled.
func TestInbox_ListsOwnRequestsAcrossChatsAndAgentsOldestFirst(t *testing.T) {
	e := newAPI(t)
	e.askFor("delete_forecast")
	ana, anaUser := e.newUser(auth.Member)
	ben, benUser := e.newUser(auth.Member)
	_, conv, ap := ana.askToDeleteOslo()
	agentReq := e.agentAsks(anaUser.ID, "conv_agent_ana_000000000001", "mcpr_agent_ana_1")
	e.agentAsks(benUser.ID, "conv_agent_ben_000000000001", "mcpr_agent_ben_1")

	got := ana.inbox()
	if want := []string{ap.ID, agentReq}; !slices.Equal(ids(got), want) {
		t.Fatalf("ana's inbox %v, want %v (her chat's request, then her agent's)", ids(got), want)
	}
	chat, agent := got[0], got[1]
	if chat.Source.Kind != "chat" || chat.Source.ConversationID != conv || chat.Source.Title == "" || chat.Source.Client != nil {
		t.Errorf("chat source %+v, want kind chat in %s with its title", chat.Source, conv)
	}
	if chat.ServerLabel != "demo" || chat.ToolName != "delete_forecast" || string(chat.Arguments) != `{"city":"Oslo"}` ||
		chat.State != "pending" || chat.ExpiresAt == nil || len(chat.Choices) == 0 {
		t.Errorf("chat request %+v: want the card the chat shows (arguments, expiry, choices)", chat)
	}
	if agent.Source.Kind != "agent" || agent.Source.Client == nil || agent.Source.Client.Name != "claude-code" || agent.ToolName != "delete_forecast" {
		t.Errorf("agent request %+v, want kind agent with its client", agent)
	}
	if got := ids(ben.inbox()); !slices.Equal(got, []string{"mcpr_agent_ben_1"}) {
		t.Errorf("ben's inbox %v: want only his own", got)
	}
	if got := e.inbox(); len(got) != 0 {
		t.Errorf("the admin's inbox %v: want empty (an admin sees no one else's)", ids(got))
	}
}

// The routes need a signed-in caller; a bad state is refused.
// Catches: a route outside authentication; a state filter that lists
// something else (decided requests) when asked for it.
func TestInbox_NeedsSignInAndAValidState(t *testing.T) {
	e := newAPI(t)
	for _, r := range []struct{ method, path string }{
		{"GET", "/api/approvals?state=pending"},
		{"GET", "/api/approvals/events"},
		{"POST", "/api/approvals/mcpr_x/decision"},
	} {
		var body any
		if r.method == "POST" {
			body = map[string]any{"approve": true}
		}
		if res := e.anon().call(r.method, r.path, body); res.status != 401 {
			t.Errorf("%s %s without credentials: %d %s, want 401", r.method, r.path, res.status, res.body)
		}
	}
	for _, state := range []string{"approved", "all", "PENDING"} {
		res := e.call("GET", "/api/approvals?state="+state, nil)
		var ae apiError
		_ = json.Unmarshal(res.body, &ae)
		if res.status != 400 || ae.Error.Code != "invalid_state" || ae.Error.Fields["state"] == "" {
			t.Errorf("state=%s: %d %s, want 400 invalid_state naming state", state, res.status, res.body)
		}
	}
	if got := e.inbox(); len(got) != 0 {
		t.Errorf("empty inbox %v", got)
	}
}

// A request whose expires_at passed waits for nothing, sweep or not.
// Catches: listing by state alone.
func TestInbox_LeavesOutRequestsWhoseTimeIsUp(t *testing.T) {
	e := newAPIWith(t, envOptions{leaseTTL: time.Hour}) // the sweep does not run in this test
	e.askFor("delete_forecast")
	_, _, ap := e.askToDeleteOslo()
	if got := ids(e.inbox()); !slices.Equal(got, []string{ap.ID}) {
		t.Fatalf("inbox %v, want %s", got, ap.ID)
	}
	e.pastDeadline(ap.ID)
	if got := e.inbox(); len(got) != 0 {
		t.Errorf("inbox %v after the deadline, want empty", ids(got))
	}
}

// decideInbox posts a decision on id through the inbox.
func (e *apiEnv) decideInbox(id string, body any) (response, apiError) {
	e.t.Helper()
	res := e.call("POST", "/api/approvals/"+id+"/decision", body)
	var ae apiError
	_ = json.Unmarshal(res.body, &ae)
	return res, ae
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("%s: not within 10 s", what)
}
