package engine_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/conversation/engine"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/policy/policysvc"
	"github.com/toolgate/toolgate/internal/postgres"
	"github.com/toolgate/toolgate/internal/testdb"
)

var (
	ana   = auth.User{ID: "usr_00000000000000000000000a", Email: "ana@example.com", Role: auth.Member}
	ben   = auth.User{ID: "usr_00000000000000000000000b", Email: "ben@example.com", Role: auth.Member}
	admin = auth.User{ID: "usr_0000000000000000000000ad", Email: "admin@example.com", Role: auth.Admin}
)

// chatEnv is the conversation service on real Postgres and the real policy
// service, with a scripted model: each Stream answers with the next script.
type chatEnv struct {
	t    *testing.T
	pool *pgxpool.Pool
	chat *engine.Service
	up   *scriptedUpstream
}

func newChat(t *testing.T, limits conversation.Limits) *chatEnv {
	t.Helper()
	pool := testdb.New(t)
	for _, u := range []auth.User{ana, ben, admin} {
		if _, err := pool.Exec(t.Context(), `INSERT INTO users (id, email, role) VALUES ($1, $2, $3)`, u.ID, u.Email, u.Role); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pool.Exec(t.Context(), `INSERT INTO mcp_servers (label, url) VALUES ('demo', 'http://127.0.0.1:1/mcp')`); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	policies := policysvc.New(postgres.NewStore(pool), nil, log, policy.Options{})
	up := &scriptedUpstream{}
	chat := engine.New(postgres.NewConversationStore(pool), postgres.NewConversationPolicies(policies), up, log,
		engine.Options{Info: conversation.Info{Offline: true}, Limits: limits})
	return &chatEnv{t: t, pool: pool, chat: chat, up: up}
}

func as(ctx context.Context, u auth.User) context.Context { return auth.WithUser(ctx, u) }

// askingTurn is what the model answers to a message: it asks to run
// delete_forecast and completes.
func askingTurn(response, approvalID string) []conversation.Event {
	return []conversation.Event{
		{Kind: conversation.EventCreated, ResponseID: response},
		{Kind: conversation.EventItemDone, Item: &conversation.UpstreamItem{Type: conversation.ItemApprovalRequest,
			ID: approvalID, ServerLabel: "demo", UpstreamLabel: "demo", Name: "delete_forecast", Arguments: `{"city":"Berlin"}`}},
		{Kind: conversation.EventCompleted, ResponseID: response},
	}
}

func answerTurn(response string) []conversation.Event {
	return []conversation.Event{
		{Kind: conversation.EventCreated, ResponseID: response},
		{Kind: conversation.EventItemDone, Item: &conversation.UpstreamItem{Type: conversation.ItemMessage, ID: "msg_" + response, Text: "done"}},
		{Kind: conversation.EventCompleted, ResponseID: response},
	}
}

// send starts a message turn as u and runs it to its end.
func (e *chatEnv) send(u auth.User, conv, input string, script []conversation.Event) (string, []string) {
	e.t.Helper()
	e.up.push(script)
	turn, err := e.chat.StartMessage(as(e.t.Context(), u), conv, input)
	if err != nil {
		e.t.Fatalf("StartMessage as %s: %v", u.Email, err)
	}
	var s sink
	turn.Run(as(e.t.Context(), u), &s)
	return turn.ConversationID(), s.names()
}

// A conversation with a pending approval request, owned by ana.
func (e *chatEnv) anasPendingApproval() string {
	e.t.Helper()
	conv, events := e.send(ana, "", "delete Berlin", askingTurn("resp_1", "mcpr_1"))
	if events[len(events)-1] != conversation.EventNameCompleted {
		e.t.Fatalf("ana's turn: events %v", events)
	}
	return conv
}

func wantCode(t *testing.T, what string, err error, kind apperr.Kind, code string) *apperr.Error {
	t.Helper()
	e, ok := apperr.As(err)
	if !ok || e.Kind != kind || e.Code != code {
		t.Errorf("%s: got %v, want %s %s", what, err, kind, code)
		return &apperr.Error{}
	}
	return e
}

// Nobody but the owner, admins included, finds a conversation, its
// approvals or its turns: each answer is the one for a conversation that
// does not exist, and nothing changes.
func TestOwnership_OthersGetNotFoundAndChangeNothing(t *testing.T) {
	e := newChat(t, conversation.Limits{})
	conv := e.anasPendingApproval()
	approve := true

	for _, u := range []auth.User{ben, admin} {
		ctx := as(t.Context(), u)
		const code = "conversation_not_found"
		_, err := e.chat.Book().Get(ctx, conv)
		wantCode(t, u.Email+" Get", err, apperr.NotFound, code)
		_, err = e.chat.Book().Rename(ctx, conv, "mine")
		wantCode(t, u.Email+" Rename", err, apperr.NotFound, code)
		wantCode(t, u.Email+" Delete", e.chat.Book().Delete(ctx, conv), apperr.NotFound, code)
		wantCode(t, u.Email+" Cancel", e.chat.Cancel(ctx, conv), apperr.NotFound, code)
		_, err = e.chat.StartMessage(ctx, conv, "hello")
		wantCode(t, u.Email+" StartMessage", err, apperr.NotFound, code)
		_, err = e.chat.StartRetry(ctx, conv)
		wantCode(t, u.Email+" StartRetry", err, apperr.NotFound, code)
		_, err = e.chat.StartDecisions(ctx, conv, []conversation.Decision{{ApprovalRequestID: "mcpr_1", Approve: &approve, Remember: true}})
		wantCode(t, u.Email+" StartDecisions", err, apperr.NotFound, code)
		list, err := e.chat.Book().List(ctx, 0)
		if err != nil || len(list) != 0 {
			t.Errorf("%s List = %v, %v; want none", u.Email, list, err)
		}
		// A missing conversation answers the same: no existence oracle.
		_, errMissing := e.chat.Book().Get(ctx, "conv_000000000000000000000000")
		if em, eo := wantCode(t, "Get missing", errMissing, apperr.NotFound, code), wantCode(t, "Get other's", func() error { _, err := e.chat.Book().Get(ctx, conv); return err }(), apperr.NotFound, code); em.Message == "" || len(em.Message) != len(eo.Message) {
			t.Errorf("messages differ beyond the id: %q vs %q", em.Message, eo.Message)
		}
	}

	tr, err := e.chat.Book().Get(as(t.Context(), ana), conv)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Conversation.Title != "delete Berlin" || len(tr.Pending) != 1 || tr.Pending[0].State != conversation.Pending ||
		tr.Pending[0].DecidedBy != nil || len(tr.Items) != 2 {
		t.Errorf("ana's conversation changed: %+v", tr)
	}
	var personal, workspace int
	if err := e.pool.QueryRow(t.Context(), `SELECT (SELECT count(*) FROM user_tool_policies), (SELECT count(*) FROM tool_policies)`).Scan(&personal, &workspace); err != nil {
		t.Fatal(err)
	}
	if personal != 0 || workspace != 0 {
		t.Errorf("policies written: %d personal, %d workspace; want none", personal, workspace)
	}
}

// The owner decides; the decision names them, and remember writes their
// personal policy, never the workspace's.
func TestOwnership_OwnerDecidesAndRemembersPersonally(t *testing.T) {
	e := newChat(t, conversation.Limits{})
	conv := e.anasPendingApproval()
	approve := true
	e.up.push(answerTurn("resp_2"))
	ctx := as(t.Context(), ana)
	turn, err := e.chat.StartDecisions(ctx, conv, []conversation.Decision{{ApprovalRequestID: "mcpr_1", Approve: &approve, Remember: true}})
	if err != nil {
		t.Fatal(err)
	}
	var s sink
	turn.Run(ctx, &s)
	d, ok := s.first(conversation.EventNameDecision).(conversation.DecisionEvent)
	if !ok || d.PolicyChanged == nil || d.PolicyChanged.Layer != "user" || d.PolicyChanged.Policy != "never" {
		t.Errorf("decision.recorded = %+v; want policy_changed never in layer user", s.first(conversation.EventNameDecision))
	}
	tr, err := e.chat.Book().Get(ctx, conv)
	if err != nil {
		t.Fatal(err)
	}
	var a *conversation.Approval
	for _, it := range tr.Items {
		if it.Approval != nil {
			a = it.Approval
		}
	}
	if a == nil || a.State != conversation.Approved || deref(a.DecidedBy) != ana.Email || deref(a.DecidedByID) != ana.ID {
		t.Errorf("decided approval = %+v; want approved by %s (%s)", a, ana.Email, ana.ID)
	}
	var user, p string
	if err := e.pool.QueryRow(t.Context(), `SELECT user_id, policy FROM user_tool_policies WHERE server_label = 'demo' AND tool_name = 'delete_forecast'`).Scan(&user, &p); err != nil {
		t.Fatalf("personal policy: %v", err)
	}
	var workspace int
	if err := e.pool.QueryRow(t.Context(), `SELECT count(*) FROM tool_policies`).Scan(&workspace); err != nil {
		t.Fatal(err)
	}
	if user != ana.ID || p != "never" || workspace != 0 {
		t.Errorf("stored: personal %s=%s, %d workspace policies; want ana's never and no workspace policy", user, p, workspace)
	}
}

// Without a signed-in user on the context nothing happens: an internal
// error, never "anyone".
func TestOwnership_MissingCallerIsAnInternalError(t *testing.T) {
	e := newChat(t, conversation.Limits{})
	ctx := t.Context()
	_, err := e.chat.Book().Create(ctx, "x")
	wantCode(t, "Create", err, apperr.Internal, "no_caller")
	_, err = e.chat.Book().List(ctx, 0)
	wantCode(t, "List", err, apperr.Internal, "no_caller")
	_, err = e.chat.StartMessage(ctx, "", "hello")
	wantCode(t, "StartMessage", err, apperr.Internal, "no_caller")
	var n int
	if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM conversations`).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d conversations, %v; want none", n, err)
	}
}

// Beyond USER_MAX_CONCURRENT_TURNS a new turn is refused with 429 and
// nothing is created; other users are not affected.
func TestLimits_ConcurrentTurnsRefusedAndNothingCreated(t *testing.T) {
	e := newChat(t, conversation.Limits{MaxConcurrentTurns: 2})
	ctx := as(t.Context(), ana)
	for range 2 { // prepared, never run: their turns stay running
		if _, err := e.chat.StartMessage(ctx, "", "hello"); err != nil {
			t.Fatal(err)
		}
	}
	_, err := e.chat.StartMessage(ctx, "", "one more")
	if ae := wantCode(t, "third turn", err, apperr.TooMany, "too_many_turns"); ae.RetryAfter < 1 || !contains(ae.Message, "USER_MAX_CONCURRENT_TURNS") {
		t.Errorf("refusal: retry after %d, %q", ae.RetryAfter, ae.Message)
	}
	if n := e.count(`SELECT count(*) FROM conversations WHERE owner_id = $1`, ana.ID); n != 2 {
		t.Errorf("ana has %d conversations after the refusal, want 2", n)
	}
	if _, err := e.chat.StartMessage(as(t.Context(), ben), "", "hello"); err != nil {
		t.Errorf("ben's turn: %v", err)
	}
}

// Beyond USER_MESSAGES_PER_MINUTE a message is refused with 429, a
// Retry-After within the minute, and is not stored.
func TestLimits_MessagesPerMinuteRefusedAndNotStored(t *testing.T) {
	e := newChat(t, conversation.Limits{MessagesPerMinute: 2})
	conv, _ := e.send(ana, "", "one", answerTurn("resp_1"))
	e.send(ana, conv, "two", answerTurn("resp_2"))
	_, err := e.chat.StartMessage(as(t.Context(), ana), conv, "three")
	if ae := wantCode(t, "third message", err, apperr.TooMany, "too_many_messages"); ae.RetryAfter < 1 || ae.RetryAfter > 60 || !contains(ae.Message, "USER_MESSAGES_PER_MINUTE") {
		t.Errorf("refusal: retry after %d, %q", ae.RetryAfter, ae.Message)
	}
	_, err = e.chat.StartMessage(as(t.Context(), ana), "", "three, elsewhere")
	wantCode(t, "third message in a new conversation", err, apperr.TooMany, "too_many_messages")
	if n := e.count(`SELECT count(*) FROM conversation_items WHERE type = 'user_message'`); n != 2 {
		t.Errorf("%d user messages stored, want 2", n)
	}
	if n := e.count(`SELECT count(*) FROM conversations`); n != 1 {
		t.Errorf("%d conversations, want 1", n)
	}
	if _, err := e.chat.StartMessage(as(t.Context(), ben), "", "hello"); err != nil {
		t.Errorf("ben's message: %v", err)
	}
}

// Requests at the same moment are counted one after the other: exactly
// the limit's worth of turns start.
func TestLimits_ConcurrentRequestsCannotBothPass(t *testing.T) {
	e := newChat(t, conversation.Limits{MaxConcurrentTurns: 3})
	ctx := as(t.Context(), ana)
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		ok, too int
	)
	start := make(chan struct{})
	for range 10 {
		wg.Go(func() {
			<-start
			_, err := e.chat.StartMessage(ctx, "", "hello")
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				ok++
			} else if ae, _ := apperr.As(err); ae != nil && ae.Code == "too_many_turns" {
				too++
			} else {
				t.Errorf("StartMessage: %v", err)
			}
		})
	}
	close(start)
	wg.Wait()
	if ok != 3 || too != 7 {
		t.Errorf("%d turns started, %d refused; want 3 and 7", ok, too)
	}
	if n := e.count(`SELECT count(*) FROM conversations WHERE active_turn IS NOT NULL`); n != 3 {
		t.Errorf("%d conversations running, want 3", n)
	}
}

func (e *chatEnv) count(q string, args ...any) int {
	e.t.Helper()
	var n int
	if err := e.pool.QueryRow(e.t.Context(), q, args...).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// sink keeps a turn's events.
type sink struct {
	mu     sync.Mutex
	events []struct {
		name string
		data any
	}
}

func (s *sink) Send(name string, data any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, struct {
		name string
		data any
	}{name, data})
}

func (s *sink) names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, len(s.events))
	for i, e := range s.events {
		out[i] = e.name
	}
	return out
}

func (s *sink) first(name string) any {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.events {
		if e.name == name {
			return e.data
		}
	}
	return nil
}

// scriptedUpstream answers each Stream with the next pushed script.
type scriptedUpstream struct {
	mu      sync.Mutex
	scripts [][]conversation.Event
}

func (u *scriptedUpstream) push(s []conversation.Event) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.scripts = append(u.scripts, s)
}

func (u *scriptedUpstream) Stream(ctx context.Context, req conversation.UpstreamRequest) (conversation.EventStream, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.scripts) == 0 {
		return nil, errors.New("no scripted answer left")
	}
	s := u.scripts[0]
	u.scripts = u.scripts[1:]
	return &sliceStream{events: s}, nil
}

// Retrieve refuses: nothing scripted is stored, so a read-back learns
// nothing (at once: a 404 would be asked again).
func (u *scriptedUpstream) Retrieve(context.Context, string) (conversation.StoredResponse, error) {
	return conversation.StoredResponse{}, &conversation.UpstreamError{Status: 400, Code: "not_scripted", Message: "no stored responses here"}
}

type sliceStream struct {
	events []conversation.Event
	i      int
}

func (s *sliceStream) Next() bool                { s.i++; return s.i <= len(s.events) }
func (s *sliceStream) Event() conversation.Event { return s.events[s.i-1] }
func (s *sliceStream) Err() error                { return nil }
func (s *sliceStream) Close() error              { return nil }
