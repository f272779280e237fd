package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/policy/policysvc"
	"github.com/toolgate/toolgate/internal/postgres"
	"github.com/toolgate/toolgate/internal/testdb"
)

// owner owns the conversations of these tests; other is another user.
const (
	owner = "usr_0000000000000000000000a1"
	other = "usr_0000000000000000000000b2"
)

func newConversations(t testing.TB) (*postgres.ConversationStore, *pgxpool.Pool) {
	t.Helper()
	pool := testdb.New(t)
	_, err := pool.Exec(t.Context(), `INSERT INTO users (id, email, role) VALUES
		($1, 'owner@example.com', 'member'), ($2, 'other@example.com', 'admin')`, owner, other)
	if err != nil {
		t.Fatal(err)
	}
	return postgres.NewConversationStore(pool), pool
}

func mustCreate(t *testing.T, r conversation.Repo, id string) conversation.Conversation {
	t.Helper()
	c, err := r.Conversations.Create(t.Context(), owner, id, "title of "+id)
	if err != nil {
		t.Fatalf("CreateConversation(%q): %v", id, err)
	}
	return c
}

func mustConversation(t *testing.T, r conversation.Repo, id string) conversation.Conversation {
	t.Helper()
	c, err := r.Conversations.Get(t.Context(), owner, id, false)
	if err != nil {
		t.Fatalf("Conversation(%q): %v", id, err)
	}
	return c
}

func mustAppend(t *testing.T, r conversation.Repo, convID string, it conversation.Item) conversation.Item {
	t.Helper()
	got, err := r.Conversations.AppendItem(t.Context(), convID, it)
	if err != nil {
		t.Fatalf("AppendItem(%q, %s): %v", convID, it.Type, err)
	}
	return got
}

func mustInsertApproval(t *testing.T, r conversation.Repo, a conversation.Approval) {
	t.Helper()
	if err := r.Approvals.Insert(t.Context(), a); err != nil {
		t.Fatalf("InsertApproval(%q): %v", a.ID, err)
	}
}

func mustApprovals(t *testing.T, r conversation.Repo, convID string, ids ...string) []conversation.Approval {
	t.Helper()
	got, err := r.Approvals.List(t.Context(), owner, convID, ids, false)
	if err != nil {
		t.Fatalf("Approvals(%q, %v): %v", convID, ids, err)
	}
	return got
}

func approval(id, convID, response string) conversation.Approval {
	return conversation.Approval{
		ID:              id,
		ConversationID:  convID,
		ResponseID:      response,
		ServerLabel:     "crm",
		UpstreamLabel:   "crm_up",
		ToolName:        "delete_contact",
		StoredArguments: `{"id":"c_1","api_key":"[redacted]"}`, // the turn engine stores them redacted
		Annotations:     json.RawMessage(`{"destructiveHint":true}`),
		Reason:          conversation.AskReason{Policy: policy.Always, Source: policy.FromTool},
	}
}

func ids(as []conversation.Approval) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.ID
	}
	return out
}

func wantNotFound(t *testing.T, what string, err error, code string) {
	t.Helper()
	e, ok := apperr.As(err)
	if !ok || e.Kind != apperr.NotFound || e.Code != code {
		t.Errorf("%s: got error %v, want NotFound %s", what, err, code)
	}
}

func ptr[T any](v T) *T { return &v }

// sameJSON compares raw JSON by meaning: jsonb columns keep no layout.
var sameJSON = cmp.Transformer("json", func(m json.RawMessage) any {
	var v any
	if err := json.Unmarshal(m, &v); err != nil {
		return "invalid JSON: " + string(m)
	}
	return v
})

func TestConversations_CreateThenRead(t *testing.T) {
	store, _ := newConversations(t)
	r := store.Repo()
	before := time.Now().Add(-time.Minute)

	created, err := r.Conversations.Create(t.Context(), owner, "conv_1", "Plan the trip")
	if err != nil {
		t.Fatal(err)
	}
	want := conversation.Conversation{ID: "conv_1", OwnerID: owner, Title: "Plan the trip", Kind: conversation.KindChat,
		Tools: policy.Selection{Servers: map[string]policy.ServerSelection{}}} // offers everything
	if diff := cmp.Diff(want, created, cmpopts.IgnoreFields(conversation.Conversation{}, "CreatedAt", "UpdatedAt")); diff != "" {
		t.Errorf("CreateConversation (-want +got):\n%s", diff)
	}
	if created.CreatedAt.Before(before) || !created.UpdatedAt.Equal(created.CreatedAt) {
		t.Errorf("times: created %v, updated %v", created.CreatedAt, created.UpdatedAt)
	}
	for _, lock := range []bool{false, true} {
		var got conversation.Conversation
		err := store.Tx(t.Context(), func(r conversation.Repo) (err error) {
			got, err = r.Conversations.Get(t.Context(), owner, "conv_1", lock)
			return err
		})
		if err != nil {
			t.Fatalf("Conversation(lock=%v): %v", lock, err)
		}
		if diff := cmp.Diff(created, got); diff != "" {
			t.Errorf("Conversation(lock=%v) (-created +read):\n%s", lock, diff)
		}
	}
}

func TestConversations_DuplicateIDIsAConflict(t *testing.T) {
	store, _ := newConversations(t)
	r := store.Repo()
	mustCreate(t, r, "conv_1")
	_, err := r.Conversations.Create(t.Context(), owner, "conv_1", "again")
	if e, ok := apperr.As(err); !ok || e.Kind != apperr.Conflict || e.Code != "duplicate_conversation" {
		t.Errorf("second CreateConversation: got %v, want Conflict duplicate_conversation", err)
	}
}

func TestConversations_MissingConversationIsNotFound(t *testing.T) {
	store, _ := newConversations(t)
	r := store.Repo()
	ctx := t.Context()
	const code = "conversation_not_found"

	_, err := r.Conversations.Get(ctx, owner, "nope", false)
	wantNotFound(t, "Conversation", err, code)
	if e, _ := apperr.As(err); e != nil && e.Message != `there is no conversation with id "nope"` {
		t.Errorf("message: %q", e.Message)
	}
	_, err = r.Conversations.Rename(ctx, owner, "nope", "x")
	wantNotFound(t, "RenameConversation", err, code)
	wantNotFound(t, "DeleteConversation", r.Conversations.Delete(ctx, owner, "nope"), code)
	wantNotFound(t, "StartTurn", r.Turns.Start(ctx, "nope", "turn_1", "rep_test", time.Minute), code)
	_, err = r.Conversations.AppendItem(ctx, "nope", conversation.Item{Type: conversation.ItemUserMessage, Text: "hi"})
	wantNotFound(t, "AppendItem", err, code)
	wantNotFound(t, "InsertApproval", r.Approvals.Insert(ctx, approval("mcpr_1", "nope", "resp_1")), code)
	wantNotFound(t, "AddGrant", r.Grants.Add(ctx, owner, convGrant("grant_000000000000000000000001", "nope", "crm", "t")), code)
	wantNotFound(t, "Decide", r.Approvals.Decide(ctx, owner, conversation.Approval{ID: "mcpr_nope", State: conversation.Denied}),
		"approval_not_found")

	// A turn whose conversation was deleted meanwhile just ends.
	if err := r.Turns.End(ctx, "nope", "turn_1", "resp_1"); err != nil {
		t.Errorf("EndTurn on a missing conversation: %v", err)
	}
	// Reading the parts of a missing conversation finds nothing.
	if items, err := r.Conversations.Items(ctx, owner, "nope"); err != nil || items == nil || len(items) != 0 {
		t.Errorf("Items: %v, %v; want an empty list", items, err)
	}
	if as, err := r.Approvals.List(ctx, owner, "nope", nil, false); err != nil || as == nil || len(as) != 0 {
		t.Errorf("Approvals: %v, %v; want an empty list", as, err)
	}
	if g, err := r.Grants.List(ctx, owner, conversation.GrantFilter{ConversationID: "nope", Now: time.Now()}); err != nil || g == nil || len(g) != 0 {
		t.Errorf("Grants: %v, %v; want an empty list", g, err)
	}
}

func TestConversations_ListNewestUpdatedFirst(t *testing.T) {
	store, _ := newConversations(t)
	r := store.Repo()
	ctx := t.Context()

	if got, err := r.Conversations.List(ctx, owner, 10); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("empty list: %v, %v", got, err)
	}
	for _, id := range []string{"a", "b", "c", "d"} {
		mustCreate(t, r, id)
	}
	// Updating b moves it to the front.
	if err := r.Turns.Start(ctx, "b", "turn_1", "rep_test", time.Minute); err != nil {
		t.Fatal(err)
	}
	got, err := r.Conversations.List(ctx, owner, 10)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"b", "d", "c", "a"}, convIDs(got)); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	if !got[0].Streaming {
		t.Errorf("b is streaming but listed as %+v", got[0])
	}
	got, err = r.Conversations.List(ctx, owner, 2)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"b", "d"}, convIDs(got)); diff != "" {
		t.Errorf("limit 2 (-want +got):\n%s", diff)
	}
	got, err = r.Conversations.List(ctx, owner, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 {
		t.Errorf("limit 0 listed %d conversations, want all 4", len(got))
	}
}

func convIDs(cs []conversation.Conversation) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.ID
	}
	return out
}

func TestConversations_RenameChangesTitleAndUpdatedAt(t *testing.T) {
	store, _ := newConversations(t)
	r := store.Repo()
	created := mustCreate(t, r, "conv_1")
	mustInsertApproval(t, r, approval("mcpr_1", "conv_1", "resp_1"))

	renamed, err := r.Conversations.Rename(t.Context(), owner, "conv_1", "New title")
	if err != nil {
		t.Fatal(err)
	}
	if renamed.Title != "New title" || !renamed.UpdatedAt.After(created.UpdatedAt) ||
		!renamed.CreatedAt.Equal(created.CreatedAt) || renamed.PendingCount != 1 {
		t.Errorf("renamed %+v, created %+v", renamed, created)
	}
	if diff := cmp.Diff(renamed, mustConversation(t, r, "conv_1")); diff != "" {
		t.Errorf("read back (-renamed +read):\n%s", diff)
	}
}

func TestConversations_StreamingAndPendingCount(t *testing.T) {
	store, _ := newConversations(t)
	r := store.Repo()
	ctx := t.Context()
	mustCreate(t, r, "conv_1")
	mustCreate(t, r, "conv_2")

	if c := mustConversation(t, r, "conv_1"); c.Streaming || c.PendingCount != 0 {
		t.Errorf("fresh conversation: %+v", c)
	}
	if err := r.Turns.Start(ctx, "conv_1", "turn_1", "rep_test", time.Minute); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"mcpr_1", "mcpr_2", "mcpr_3"} {
		mustInsertApproval(t, r, approval(id, "conv_1", "resp_1"))
	}
	mustInsertApproval(t, r, approval("mcpr_other", "conv_2", "resp_9"))
	if err := r.Approvals.Decide(ctx, owner, conversation.Approval{ID: "mcpr_2", State: conversation.Denied}); err != nil {
		t.Fatal(err)
	}
	c := mustConversation(t, r, "conv_1")
	if !c.Streaming || c.PendingCount != 2 {
		t.Errorf("got streaming=%v pending=%d, want streaming with 2 pending", c.Streaming, c.PendingCount)
	}
	if c := mustConversation(t, r, "conv_2"); c.Streaming || c.PendingCount != 1 {
		t.Errorf("other conversation: streaming=%v pending=%d, want idle with 1 pending", c.Streaming, c.PendingCount)
	}
}

func TestConversations_EndTurnOnlyClearsItsOwnTurn(t *testing.T) {
	store, _ := newConversations(t)
	r := store.Repo()
	ctx := t.Context()
	mustCreate(t, r, "conv_1")
	if err := r.Turns.Start(ctx, "conv_1", "turn_1", "rep_test", time.Minute); err != nil {
		t.Fatal(err)
	}
	started := mustConversation(t, r, "conv_1")

	// A stale turn ending leaves the running one and its chain alone, but
	// still counts as activity.
	if err := r.Turns.End(ctx, "conv_1", "turn_0", "resp_stale"); err != nil {
		t.Fatal(err)
	}
	c := mustConversation(t, r, "conv_1")
	if !c.Streaming || c.LastResponseID != nil || !c.UpdatedAt.After(started.UpdatedAt) {
		t.Errorf("after a stale EndTurn: %+v (started %v)", c, started.UpdatedAt)
	}

	if err := r.Turns.End(ctx, "conv_1", "turn_1", "resp_1"); err != nil {
		t.Fatal(err)
	}
	c = mustConversation(t, r, "conv_1")
	if c.Streaming || c.LastResponseID == nil || *c.LastResponseID != "resp_1" {
		t.Errorf("after its own EndTurn: streaming=%v last=%v, want idle with resp_1", c.Streaming, c.LastResponseID)
	}

	// A turn that ends without a response keeps the previous one.
	if err := r.Turns.Start(ctx, "conv_1", "turn_2", "rep_test", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := r.Turns.End(ctx, "conv_1", "turn_2", ""); err != nil {
		t.Fatal(err)
	}
	c = mustConversation(t, r, "conv_1")
	if c.Streaming || c.LastResponseID == nil || *c.LastResponseID != "resp_1" {
		t.Errorf("after a failed turn: streaming=%v last=%v, want idle with resp_1", c.Streaming, c.LastResponseID)
	}
}

func TestConversations_AppendKeepsOrder(t *testing.T) {
	store, _ := newConversations(t)
	r := store.Repo()
	mustCreate(t, r, "conv_1")
	mustCreate(t, r, "conv_2")

	var appended []conversation.Item
	for i := 1; i <= 5; i++ {
		it := mustAppend(t, r, "conv_1", conversation.Item{Type: conversation.ItemMessage, ID: fmt.Sprintf("msg_%d", i),
			ResponseID: "resp_1", Text: fmt.Sprintf("part %d", i)})
		if it.Seq != i || it.CreatedAt.IsZero() {
			t.Errorf("item %d: seq %d, created %v", i, it.Seq, it.CreatedAt)
		}
		appended = append(appended, it)
		// The other conversation numbers its own items.
		if other := mustAppend(t, r, "conv_2", conversation.Item{Type: conversation.ItemUserMessage, Text: "x"}); other.Seq != i {
			t.Errorf("conv_2 item %d got seq %d", i, other.Seq)
		}
	}
	got, err := r.Conversations.Items(t.Context(), owner, "conv_1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(appended, got); diff != "" {
		t.Errorf("Items (-appended +read):\n%s", diff)
	}
	for i := 1; i < len(got); i++ {
		if got[i].CreatedAt.Before(got[i-1].CreatedAt) {
			t.Errorf("item %d created before item %d", got[i].Seq, got[i-1].Seq)
		}
	}
}

func TestConversations_ConcurrentAppendsGetDistinctSeqs(t *testing.T) {
	store, _ := newConversations(t)
	r := store.Repo()
	mustCreate(t, r, "conv_1")

	const n = 16
	var wg sync.WaitGroup
	errs := make(chan error, n)
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			_, err := r.Conversations.AppendItem(t.Context(), "conv_1", conversation.Item{Type: conversation.ItemUserMessage,
				Text: fmt.Sprint(i)})
			errs <- err
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("AppendItem: %v", err)
		}
	}
	items, err := r.Conversations.Items(t.Context(), owner, "conv_1")
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != n {
		t.Fatalf("got %d items, want %d", len(items), n)
	}
	for i, it := range items {
		if it.Seq != i+1 {
			t.Errorf("item %d has seq %d", i, it.Seq)
		}
	}
}

func TestConversations_ItemsRoundTripEveryType(t *testing.T) {
	store, _ := newConversations(t)
	r := store.Repo()
	mustCreate(t, r, "conv_1")

	decided := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	items := []conversation.Item{
		// A NUL character is valid JSON text but cannot be stored in jsonb.
		{Type: conversation.ItemUserMessage, ID: "msg_u1", Text: "Delete contact c_1 \u0000 please ✓"},
		{Type: conversation.ItemListTools, ID: "mcpl_1", ResponseID: "resp_1", ServerLabel: "crm", UpstreamLabel: "crm_up",
			Tools: []policy.DiscoveredTool{{
				Name: "delete_contact", Title: "Delete", Description: "Deletes a contact",
				// Key order as the server sent it is kept.
				InputSchema: json.RawMessage(`{"type":"object","properties":{"zeta":{"type":"string"},"id":{"type":"string"}}}`),
				Annotations: policy.Annotations{DestructiveHint: ptr(true)},
			}}},
		{Type: conversation.ItemListTools, ID: "mcpl_2", ResponseID: "resp_1", ServerLabel: "docs", UpstreamLabel: "docs",
			ListError: json.RawMessage(`{"type":"http_error","code":401,"message":"unauthorized"}`)},
		{Type: conversation.ItemApprovalRequest, ID: "mcpr_1", ResponseID: "resp_1", ServerLabel: "crm", UpstreamLabel: "crm_up",
			Name: "delete_contact", Arguments: json.RawMessage(`{"id":"c_1","api_key":"[redacted]"}`), Redacted: []string{"api_key"},
			Approval: &conversation.Approval{ID: "mcpr_1", ConversationID: "conv_1", ResponseID: "resp_1", State: conversation.Approved,
				DecidedAt: &decided, Scope: ptr(conversation.ScopeOnce), Arguments: json.RawMessage(`{"id":"c_1"}`),
				Annotations: json.RawMessage(`{"destructiveHint":true}`),
				Reason:      conversation.AskReason{Policy: policy.Always, Source: policy.FromServer}}},
		{Type: conversation.ItemCall, ID: "mcp_1", ResponseID: "resp_2", ServerLabel: "crm", UpstreamLabel: "crm_up",
			Name: "delete_contact", Arguments: json.RawMessage(`"not json {"`), Output: ptr("deleted\u0000"),
			ApprovalRequestID: "mcpr_1", AllowedBy: &conversation.AllowedBy{Kind: "approval"}},
		{Type: conversation.ItemCall, ID: "mcp_2", ResponseID: "resp_2", ServerLabel: "crm", UpstreamLabel: "crm_up",
			Name: "search", Arguments: json.RawMessage(`{"query":"x","limit":5,"n":1.50}`),
			CallError: json.RawMessage(`{"type":"mcp_protocol_error","code":-32000,"message":"boom"}`),
			AllowedBy: &conversation.AllowedBy{Kind: "policy", Policy: policy.Never, Source: policy.FromGlobal}},
		{Type: conversation.ItemMessage, ID: "msg_2", ResponseID: "resp_2", Text: "Done."},
		{Type: conversation.ItemError, ID: "err_1", Error: &conversation.TurnError{Code: "upstream_timeout",
			Message: "the model did not answer", Retryable: true}},
	}
	var want []conversation.Item
	for _, it := range items {
		it.Seq, it.CreatedAt = 99, time.Unix(1, 0) // ignored: the row decides
		got := mustAppend(t, r, "conv_1", it)
		// The approval's state is not part of the item: the service joins
		// in the current one when the transcript is read.
		it.Seq, it.CreatedAt, it.Approval = got.Seq, got.CreatedAt, nil
		want = append(want, it)
	}
	got, err := r.Conversations.Items(t.Context(), owner, "conv_1")
	if err != nil {
		t.Fatal(err)
	}
	// Raw JSON is compared as bytes: what was sent is what is shown.
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Items (-appended +read):\n%s", diff)
	}
}

func TestConversations_ApprovalsRoundTripOldestFirst(t *testing.T) {
	store, _ := newConversations(t)
	r := store.Repo()
	ctx := t.Context()
	mustCreate(t, r, "conv_1")
	mustCreate(t, r, "conv_2")

	a1 := approval("mcpr_b", "conv_1", "resp_1")
	a2 := approval("mcpr_a", "conv_1", "resp_1")
	a2.Annotations = nil // stored as {}
	a2.Reason.Source = "unknown"
	a3 := approval("mcpr_c", "conv_1", "resp_2")
	for _, a := range []conversation.Approval{a1, a2, a3, approval("mcpr_other", "conv_2", "resp_9")} {
		mustInsertApproval(t, r, a)
	}
	// The same request read twice from upstream is stored once.
	again := a1
	again.ToolName, again.StoredArguments = "other_tool", `{}`
	mustInsertApproval(t, r, again)

	got := mustApprovals(t, r, "conv_1")
	want := []conversation.Approval{a1, a2, a3}
	want[1].Annotations = json.RawMessage(`{}`)
	for i := range want {
		want[i].Reason.Policy = policy.Always
		want[i].State = conversation.Pending
		if i < len(got) {
			want[i].RequestedAt = got[i].RequestedAt
			if got[i].RequestedAt.IsZero() || i > 0 && !got[i].RequestedAt.After(got[i-1].RequestedAt) {
				t.Errorf("requested_at %d: %v", i, got[i].RequestedAt)
			}
		}
	}
	if diff := cmp.Diff(want, got, sameJSON); diff != "" {
		t.Errorf("Approvals (-want +got):\n%s", diff)
	}
	if got, want := ids(mustApprovals(t, r, "conv_1", "mcpr_c", "mcpr_b", "mcpr_other")), []string{"mcpr_b", "mcpr_c"}; !cmp.Equal(got, want) {
		t.Errorf("Approvals by id = %v, want %v (oldest first, this conversation only)", got, want)
	}
	var locked []conversation.Approval
	err := store.Tx(ctx, func(r conversation.Repo) (err error) {
		locked, err = r.Approvals.List(ctx, owner, "conv_1", []string{"mcpr_a"}, true)
		return err
	})
	if err != nil || !cmp.Equal(ids(locked), []string{"mcpr_a"}) {
		t.Errorf("locked Approvals = %v, %v", ids(locked), err)
	}
}

func TestConversations_DecideStoresTheDecision(t *testing.T) {
	store, _ := newConversations(t)
	r := store.Repo()
	ctx := t.Context()
	mustCreate(t, r, "conv_1")
	mustInsertApproval(t, r, approval("mcpr_1", "conv_1", "resp_1"))
	mustInsertApproval(t, r, approval("mcpr_2", "conv_1", "resp_1"))

	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	d := mustApprovals(t, r, "conv_1", "mcpr_1")[0]
	d.State, d.DecidedAt, d.DecidedBy, d.DecidedByID = conversation.Approved, &at, ptr("owner@example.com"), ptr(owner)
	d.DecisionReason, d.Scope, d.Remember = ptr("looks fine"), ptr(conversation.ScopeConversation), true
	if err := r.Approvals.Decide(ctx, owner, d); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(d, mustApprovals(t, r, "conv_1", "mcpr_1")[0]); diff != "" {
		t.Errorf("decided approval (-want +read):\n%s", diff)
	}

	// A decision without a time is decided now; the other request is untouched.
	before := time.Now().Add(-time.Minute)
	if err := r.Approvals.Decide(ctx, owner, conversation.Approval{ID: "mcpr_2", State: conversation.Superseded}); err != nil {
		t.Fatal(err)
	}
	s := mustApprovals(t, r, "conv_1", "mcpr_2")[0]
	if s.State != conversation.Superseded || s.DecidedAt == nil || s.DecidedAt.Before(before) ||
		s.DecidedBy != nil || s.DecidedByID != nil || s.Scope != nil || s.Remember {
		t.Errorf("superseded approval: %+v", s)
	}
	if c := mustConversation(t, r, "conv_1"); c.PendingCount != 0 {
		t.Errorf("pending count %d after deciding both", c.PendingCount)
	}
}

func TestConversations_ResponseApprovalsAndMarkAnswered(t *testing.T) {
	store, _ := newConversations(t)
	r := store.Repo()
	ctx := t.Context()
	mustCreate(t, r, "conv_1")
	mustCreate(t, r, "conv_2")
	for _, a := range []conversation.Approval{
		approval("mcpr_1", "conv_1", "resp_1"), approval("mcpr_2", "conv_1", "resp_1"),
		approval("mcpr_3", "conv_1", "resp_2"), approval("mcpr_4", "conv_2", "resp_1"),
	} {
		mustInsertApproval(t, r, a)
	}
	of := func() []conversation.Approval {
		t.Helper()
		var got []conversation.Approval
		err := store.Tx(ctx, func(r conversation.Repo) (err error) {
			got, err = r.Approvals.OfResponse(ctx, owner, "conv_1", "resp_1")
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := ids(of()); !cmp.Equal(got, []string{"mcpr_1", "mcpr_2"}) {
		t.Errorf("ResponseApprovals = %v, want mcpr_1, mcpr_2", got)
	}
	if err := r.Approvals.MarkAnswered(ctx, []string{"mcpr_1"}, "resp_3"); err != nil {
		t.Fatal(err)
	}
	// The first response that carried an answer stays on record.
	if err := r.Approvals.MarkAnswered(ctx, []string{"mcpr_1", "mcpr_2"}, "resp_4"); err != nil {
		t.Fatal(err)
	}
	if err := r.Approvals.MarkAnswered(ctx, nil, "resp_5"); err != nil {
		t.Fatal(err)
	}
	got := of()
	if len(got) != 2 || *got[0].AnsweredIn != "resp_3" || *got[1].AnsweredIn != "resp_4" {
		t.Errorf("answered in %v, want resp_3 and resp_4", got)
	}
}

// ResponseApprovals locks the requests it returns, so that two attempts to
// answer them cannot both send the answers upstream.
func TestConversations_ResponseApprovalsLocksItsRequests(t *testing.T) {
	store, _ := newConversations(t)
	r := store.Repo()
	ctx := t.Context()
	mustCreate(t, r, "conv_1")
	mustInsertApproval(t, r, approval("mcpr_1", "conv_1", "resp_1"))

	err := store.Tx(ctx, func(tx conversation.Repo) error {
		if _, err := tx.Approvals.OfResponse(ctx, owner, "conv_1", "resp_1"); err != nil {
			return err
		}
		short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		err := r.Approvals.MarkAnswered(short, []string{"mcpr_1"}, "resp_2")
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("MarkAnswered while another transaction holds the request: %v, want it to wait", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestConversations_GrantsPerConversationTimedExpiredAndRevoked(t *testing.T) {
	store, _ := newConversations(t)
	r := store.Repo()
	ctx := t.Context()
	mustCreate(t, r, "conv_1")
	mustCreate(t, r, "conv_2")
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	later, earlier := now.Add(time.Hour), now.Add(-time.Minute)
	timed := func(id, tool string, until time.Time) conversation.Grant {
		return conversation.Grant{ID: id, ServerLabel: "crm", ToolName: tool, ApprovalRequestID: "mcpr_" + tool,
			CreatedAt: now.Add(-time.Hour), ExpiresAt: &until}
	}
	for _, g := range []conversation.Grant{
		convGrant("grant_000000000000000000000001", "conv_1", "crm", "delete_contact"),
		convGrant("grant_000000000000000000000002", "conv_1", "docs", "search"),
		convGrant("grant_000000000000000000000003", "conv_2", "crm", "export"),
		timed("grant_000000000000000000000004", "lookup", later),
		timed("grant_000000000000000000000005", "stale", earlier),
		convGrant("grant_000000000000000000000006", "conv_1", "crm", "revoked"),
	} {
		if err := r.Grants.Add(ctx, owner, g); err != nil {
			t.Fatalf("AddGrant %s: %v", g.ID, err)
		}
	}
	if _, revoked, err := r.Grants.Revoke(ctx, owner, "grant_000000000000000000000006", now); err != nil || !revoked {
		t.Fatalf("RevokeGrant: %v, %v", revoked, err)
	}
	if _, revoked, err := r.Grants.Revoke(ctx, owner, "grant_000000000000000000000006", now); err != nil || revoked {
		t.Errorf("RevokeGrant again: %v, %v; want nothing revoked", revoked, err)
	}
	if _, revoked, err := r.Grants.Revoke(ctx, owner, "grant_000000000000000000000005", now); err != nil || revoked {
		t.Errorf("RevokeGrant of an expired grant: %v, %v; want nothing revoked", revoked, err)
	}
	_, _, err := r.Grants.Revoke(ctx, other, "grant_000000000000000000000001", now)
	wantNotFound(t, "RevokeGrant(other)", err, "grant_not_found")

	tools := func(f conversation.GrantFilter, who string) []string {
		t.Helper()
		gs, err := r.Grants.List(ctx, who, f)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, g := range gs {
			out = append(out, g.ServerLabel+"/"+g.ToolName)
		}
		slices.Sort(out)
		return out
	}
	for _, tc := range []struct {
		name string
		who  string
		f    conversation.GrantFilter
		want []string
	}{
		{"conv_1, live: its own and the timed ones", owner, conversation.GrantFilter{ConversationID: "conv_1", Now: now},
			[]string{"crm/delete_contact", "crm/lookup", "docs/search"}},
		{"conv_2, live", owner, conversation.GrantFilter{ConversationID: "conv_2", Now: now}, []string{"crm/export", "crm/lookup"}},
		{"all, live", owner, conversation.GrantFilter{Now: now},
			[]string{"crm/delete_contact", "crm/export", "crm/lookup", "docs/search"}},
		{"all, ended too", owner, conversation.GrantFilter{Now: now, Ended: true},
			[]string{"crm/delete_contact", "crm/export", "crm/lookup", "crm/revoked", "crm/stale", "docs/search"}},
		{"an hour on, the timed grant has expired", owner, conversation.GrantFilter{ConversationID: "conv_1", Now: later},
			[]string{"crm/delete_contact", "docs/search"}},
		{"another user", other, conversation.GrantFilter{Now: now, Ended: true}, nil},
	} {
		if diff := cmp.Diff(tc.want, tools(tc.f, tc.who)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

func convGrant(id, conv, server, tool string) conversation.Grant {
	return conversation.Grant{ID: id, ConversationID: &conv, ServerLabel: server, ToolName: tool,
		ApprovalRequestID: "mcpr_" + tool, CreatedAt: time.Now()}
}

func TestConversations_DeleteRemovesItsItemsApprovalsAndGrants(t *testing.T) {
	store, pool := newConversations(t)
	r := store.Repo()
	ctx := t.Context()
	for _, id := range []string{"conv_1", "conv_2"} {
		mustCreate(t, r, id)
		mustAppend(t, r, id, conversation.Item{Type: conversation.ItemUserMessage, Text: "hi"})
		mustInsertApproval(t, r, approval("mcpr_"+id, id, "resp_1"))
		if err := r.Grants.Add(ctx, owner, convGrant("grant_00000000000000000000000"+id[len(id)-1:], id, "crm", "t")); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Conversations.Delete(ctx, owner, "conv_1"); err != nil {
		t.Fatal(err)
	}
	wantNotFound(t, "Conversation after delete", func() error { _, err := r.Conversations.Get(ctx, owner, "conv_1", false); return err }(),
		"conversation_not_found")
	wantNotFound(t, "second DeleteConversation", r.Conversations.Delete(ctx, owner, "conv_1"), "conversation_not_found")
	for _, table := range []string{"conversation_items", "approval_requests", "grants"} {
		var left, other int
		err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE conversation_id = 'conv_1'),
			count(*) FILTER (WHERE conversation_id = 'conv_2') FROM `+table).Scan(&left, &other)
		if err != nil {
			t.Fatal(err)
		}
		if left != 0 || other != 1 {
			t.Errorf("%s: %d rows of the deleted conversation left, %d of the other (want 0 and 1)", table, left, other)
		}
	}
}

// A decision, the personal policy it remembers and its audit entries
// (conversation.Policies given the transaction's repository) commit
// together or not at all.
func TestConversations_DecisionPolicyAndAuditCommitTogether(t *testing.T) {
	store, pool := newConversations(t)
	ctx := t.Context()
	r := store.Repo()
	if _, err := postgres.NewStore(pool).Repo().Servers.Insert(ctx, policy.Server{Label: "crm", URL: "https://crm.example/mcp",
		Headers: map[string]string{}, Enabled: true}); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, r, "conv_1")
	mustInsertApproval(t, r, approval("mcpr_1", "conv_1", "resp_1"))
	policies := postgres.NewConversationPolicies(policysvc.New(postgres.NewStore(pool), nil, slog.New(slog.DiscardHandler), policy.Options{}))
	u := auth.User{ID: owner, Email: "owner@example.com", Role: auth.Member}

	decideAndRemember := func(r conversation.Repo) error {
		a := mustApprovals(t, r, "conv_1", "mcpr_1")[0]
		a.State, a.DecidedBy, a.Remember = conversation.Approved, ptr("owner@example.com"), true
		if err := r.Approvals.Decide(ctx, owner, a); err != nil {
			return err
		}
		if err := policies.Decisions.Remember(ctx, r, u, "crm", "delete_contact", policy.Never); err != nil {
			return err
		}
		return policies.Decisions.Audit(ctx, r, policy.AuditEntry{Actor: u.Email, ActorID: u.ID, Action: policy.ActionDecision,
			ServerLabel: ptr("crm"), ToolName: ptr("delete_contact"), Before: json.RawMessage(`{}`), After: json.RawMessage(`{}`)})
	}
	type state struct {
		Approval  string
		Personal  policy.Policy
		Decisions int // audit entries of decisions
		Policies  int // audit entries of policy changes
	}
	read := func() state {
		t.Helper()
		var s state
		s.Approval = mustApprovals(t, r, "conv_1", "mcpr_1")[0].State
		if p, err := policies.Decisions.Effective(ctx, r, owner, "crm", "delete_contact"); err != nil {
			t.Fatal(err)
		} else if p == policy.Never {
			s.Personal = p
		}
		err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE action = 'approval.decide'),
			count(*) FILTER (WHERE action = 'policy.set') FROM audit_log`).Scan(&s.Decisions, &s.Policies)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}

	errRollback := errors.New("roll back")
	err := store.Tx(ctx, func(r conversation.Repo) error {
		if err := decideAndRemember(r); err != nil {
			return err
		}
		return errRollback
	})
	if !errors.Is(err, errRollback) {
		t.Fatalf("Tx = %v, want the error fn returned", err)
	}
	if got, want := read(), (state{Approval: conversation.Pending}); got != want {
		t.Errorf("after rollback: %+v, want %+v", got, want)
	}

	if err := store.Tx(ctx, decideAndRemember); err != nil {
		t.Fatal(err)
	}
	if got, want := read(), (state{Approval: conversation.Approved, Personal: policy.Never, Decisions: 1, Policies: 1}); got != want {
		t.Errorf("after commit: %+v, want %+v", got, want)
	}
}

// The policy work of a decision refuses a repository that cannot share
// the conversation's transaction, rather than work outside it.
func TestConversationPolicies_RefuseAForeignRepository(t *testing.T) {
	store, pool := newConversations(t)
	policies := postgres.NewConversationPolicies(policysvc.New(postgres.NewStore(pool), nil, slog.New(slog.DiscardHandler), policy.Options{}))
	foreign := store.Repo()
	foreign.Approvals = struct{ conversation.Approvals }{foreign.Approvals}
	err := policies.Decisions.Audit(t.Context(), foreign, policy.AuditEntry{Actor: "x", ActorID: owner, Action: policy.ActionDecision})
	if e, ok := apperr.As(err); !ok || e.Kind != apperr.Internal {
		t.Errorf("Audit with a foreign repository = %v, want an internal error", err)
	}
}

// Each of two requests locks the conversation, checks that no turn runs and
// starts one; holding the lock makes the second see the first's turn.
func TestConversations_LockSerialisesTurns(t *testing.T) {
	store, _ := newConversations(t)
	ctx := t.Context()
	mustCreate(t, store.Repo(), "conv_1")

	errBusy := errors.New("a turn is running")
	start := make(chan struct{})
	results := make([]error, 2)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() {
			<-start
			results[i] = store.Tx(ctx, func(r conversation.Repo) error {
				c, err := r.Conversations.Get(ctx, owner, "conv_1", true)
				if err != nil {
					return err
				}
				if c.Streaming {
					return errBusy
				}
				time.Sleep(200 * time.Millisecond) // let the other request read too, if it can
				return r.Turns.Start(ctx, "conv_1", fmt.Sprintf("turn_%d", i), "rep_test", time.Minute)
			})
		})
	}
	close(start)
	wg.Wait()
	var ok, busy int
	for _, err := range results {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, errBusy):
			busy++
		default:
			t.Errorf("unexpected error: %v", err)
		}
	}
	if ok != 1 || busy != 1 {
		t.Errorf("%d turns started and %d refused, want exactly one of each", ok, busy)
	}
}

// While a transaction holds a conversation, a running turn can still append
// to its transcript and record approval requests: the lock stops other
// turns and decisions, not the turn in progress.
func TestConversations_LockDoesNotBlockAppends(t *testing.T) {
	store, _ := newConversations(t)
	ctx := t.Context()
	r := store.Repo()
	mustCreate(t, r, "conv_1")

	err := store.Tx(ctx, func(tx conversation.Repo) error {
		if _, err := tx.Conversations.Get(ctx, owner, "conv_1", true); err != nil {
			return err
		}
		short, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if _, err := r.Conversations.AppendItem(short, "conv_1", conversation.Item{Type: conversation.ItemMessage, Text: "x"}); err != nil {
			t.Errorf("AppendItem while the conversation is locked: %v", err)
		}
		if err := r.Approvals.Insert(short, approval("mcpr_1", "conv_1", "resp_1")); err != nil {
			t.Errorf("InsertApproval while the conversation is locked: %v", err)
		}
		// Another turn must wait.
		shorter, cancel2 := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel2()
		if err := r.Turns.Start(shorter, "conv_1", "turn_2", "rep_test", time.Minute); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("StartTurn while the conversation is locked: %v, want it to wait", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Another user sees nothing of a conversation: it is reported exactly as a
// missing one, on every method that names a conversation, and changes
// nothing.
func TestConversations_AnotherOwnerSeesNothing(t *testing.T) {
	store, _ := newConversations(t)
	r := store.Repo()
	ctx := t.Context()
	mustCreate(t, r, "conv_1")
	mustAppend(t, r, "conv_1", conversation.Item{Type: conversation.ItemUserMessage, ID: "umsg_1", Text: "hi"})
	mustInsertApproval(t, r, approval("mcpr_1", "conv_1", "resp_1"))
	if err := r.Grants.Add(ctx, owner, convGrant("grant_000000000000000000000001", "conv_1", "crm", "lookup")); err != nil {
		t.Fatal(err)
	}
	const code = "conversation_not_found"

	for _, lock := range []bool{false, true} {
		err := store.Tx(ctx, func(r conversation.Repo) error {
			_, err := r.Conversations.Get(ctx, other, "conv_1", lock)
			return err
		})
		wantNotFound(t, fmt.Sprintf("Conversation(lock=%v)", lock), err, code)
	}
	_, err := r.Conversations.Get(ctx, "", "conv_1", false)
	wantNotFound(t, "Conversation with no owner", err, code)
	_, err = r.Conversations.Rename(ctx, other, "conv_1", "mine now")
	wantNotFound(t, "RenameConversation", err, code)
	wantNotFound(t, "DeleteConversation", r.Conversations.Delete(ctx, other, "conv_1"), code)
	wantNotFound(t, "Decide", r.Approvals.Decide(ctx, other, conversation.Approval{ID: "mcpr_1", State: conversation.Approved,
		DecidedBy: ptr("other@example.com"), DecidedByID: ptr(other)}), "approval_not_found")

	if list, err := r.Conversations.List(ctx, other, 0); err != nil || len(list) != 0 {
		t.Errorf("ListConversations(other) = %v, %v; want none", convIDs(list), err)
	}
	if items, err := r.Conversations.Items(ctx, other, "conv_1"); err != nil || len(items) != 0 {
		t.Errorf("Items(other) = %v, %v; want none", items, err)
	}
	if as, err := r.Approvals.List(ctx, other, "conv_1", nil, false); err != nil || len(as) != 0 {
		t.Errorf("Approvals(other) = %v, %v; want none", ids(as), err)
	}
	if as, err := r.Approvals.List(ctx, other, "conv_1", []string{"mcpr_1"}, false); err != nil || len(as) != 0 {
		t.Errorf("Approvals(other, mcpr_1) = %v, %v; want none", ids(as), err)
	}
	err = store.Tx(ctx, func(r conversation.Repo) error {
		as, err := r.Approvals.OfResponse(ctx, other, "conv_1", "resp_1")
		if err == nil && len(as) != 0 {
			t.Errorf("ResponseApprovals(other) = %v; want none", ids(as))
		}
		return err
	})
	if err != nil {
		t.Error(err)
	}
	if g, err := r.Grants.List(ctx, other, conversation.GrantFilter{ConversationID: "conv_1", Now: time.Now()}); err != nil || len(g) != 0 {
		t.Errorf("Grants(other) = %v, %v; want none", g, err)
	}

	// The owner's conversation is as it was.
	c := mustConversation(t, r, "conv_1")
	if c.Title != "title of conv_1" || c.PendingCount != 1 {
		t.Errorf("owner's conversation changed: %+v", c)
	}
	if a := mustApprovals(t, r, "conv_1", "mcpr_1")[0]; a.State != conversation.Pending || a.DecidedBy != nil {
		t.Errorf("owner's approval changed: %+v", a)
	}
	if list, err := r.Conversations.List(ctx, owner, 0); err != nil || !cmp.Equal(convIDs(list), []string{"conv_1"}) {
		t.Errorf("ListConversations(owner) = %v, %v", convIDs(list), err)
	}
	if g, err := r.Grants.List(ctx, owner, conversation.GrantFilter{ConversationID: "conv_1", Now: time.Now()}); err != nil || len(g) != 1 || g[0].ToolName != "lookup" {
		t.Errorf("Grants(owner) = %v, %v", g, err)
	}
}

// The list shows each user only their own conversations.
func TestConversations_ListShowsOnlyTheOwnersConversations(t *testing.T) {
	store, _ := newConversations(t)
	r := store.Repo()
	ctx := t.Context()
	mustCreate(t, r, "conv_mine")
	if _, err := r.Conversations.Create(ctx, other, "conv_theirs", "theirs"); err != nil {
		t.Fatal(err)
	}
	for who, want := range map[string][]string{owner: {"conv_mine"}, other: {"conv_theirs"}, "usr_000000000000000000000000": {}} {
		got, err := r.Conversations.List(ctx, who, 10)
		if err != nil || !cmp.Equal(convIDs(got), want, cmpopts.EquateEmpty()) {
			t.Errorf("ListConversations(%s) = %v, %v; want %v", who, convIDs(got), err, want)
		}
	}
}
