package http_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/client"
)

// TestClient_SpeaksTheAPI: internal/client against the real API: who am I,
// a message that asks for approval, the decision's follow-up, and error
// answers as *client.Error with their status, code and fields.
func TestClient_SpeaksTheAPI(t *testing.T) {
	e := newAPI(t)
	e.askFor("delete_forecast")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := client.New(e.url, e.token)
	if err != nil {
		t.Fatal(err)
	}
	if me, err := c.Me(ctx); err != nil || me.Email != e.admin.Email {
		t.Fatalf("Me: %+v, %v; want %s", me, err, e.admin.Email)
	}

	var apiErr *client.Error
	if _, err := c.Send(ctx, client.MessageRequest{Input: ""}); !errors.As(err, &apiErr) || apiErr.Status != 400 || apiErr.Code == "" || apiErr.Message == "" {
		t.Errorf("an empty message: %v; want a 400 *client.Error with code and message", err)
	}
	if _, err := c.Conversation(ctx, "no-such-conversation"); !errors.As(err, &apiErr) || apiErr.Status != 404 {
		t.Errorf("an unknown conversation: %v; want a 404 *client.Error", err)
	}

	names, conv, approval := turn(t, mustOpen(t)(c.Send(ctx, client.MessageRequest{Input: `delete_forecast {"city": "Oslo"}`})))
	if conv == "" || approval == "" || names[len(names)-1] != "completed" {
		t.Fatalf("the message's stream: %v (conversation %q, approval %q)", names, conv, approval)
	}
	if st, err := c.Conversation(ctx, conv); err != nil || len(st.PendingApprovals) != 1 {
		t.Fatalf("the conversation: %+v, %v; want one pending approval", st, err)
	}
	names, _, _ = turn(t, mustOpen(t)(c.Decide(ctx, client.DecisionsRequest{ConversationID: conv,
		Decisions: []client.Decision{{ApprovalRequestID: approval, Reason: "keep Oslo"}}})))
	if !slices.Contains(names, "decision.recorded") || names[len(names)-1] != "completed" {
		t.Errorf("the decision's stream: %v; want decision.recorded … completed", names)
	}
	if err := c.Cancel(ctx, conv); !errors.As(err, &apiErr) || apiErr.Code != "no_turn_running" {
		t.Errorf("cancel with no turn running: %v; want no_turn_running", err)
	}
	if _, err := c.Decide(ctx, client.DecisionsRequest{ConversationID: conv}); !errors.As(err, &apiErr) || apiErr.Status != 400 {
		t.Errorf("no decisions: %v; want a 400 *client.Error", err)
	}
}

// TestClient_FollowResumesAfterADroppedConnection: a proxy cuts the first
// connection of GET /api/conversations/{id}/events in the middle of its
// third event; Follow reconnects with Last-Event-ID and yields the same
// events, in order, none twice and none lost, as a follow that was never
// cut.
func TestClient_FollowResumesAfterADroppedConnection(t *testing.T) {
	e := newAPI(t)
	e.askFor("delete_forecast")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := e.send("", `delete_forecast {"city": "Oslo"}`).ok(t)
	conv := one[struct {
		ID string `json:"conversation_id"`
	}](t, s, "conversation").ID
	last := s.events[len(s.events)-1].ID

	direct, _ := client.New(e.url, e.token)
	want := followUntil(t, direct.Follow(ctx, conv, "0"), last)
	if len(want) < 4 {
		t.Fatalf("the follow replayed %d events; the test needs at least 4", len(want))
	}

	var mu sync.Mutex
	var lastIDs []string
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		lastIDs = append(lastIDs, r.Header.Get("Last-Event-ID"))
		first := len(lastIDs) == 1
		mu.Unlock()
		cutProxy(t, w, r, e.url, first)
	}))
	defer proxy.Close()
	cut, _ := client.New(proxy.URL, e.token)
	got := followUntil(t, cut.Follow(ctx, conv, "0"), last)

	if fmt.Sprint(eventKeys(got)) != fmt.Sprint(eventKeys(want)) {
		t.Errorf("through the cut:\n%v\nnever cut:\n%v", eventKeys(got), eventKeys(want))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(lastIDs) != 2 || lastIDs[0] != "0" || lastIDs[1] != want[1].ID {
		t.Errorf("Last-Event-ID of the connections: %q; want [0 %s]", lastIDs, want[1].ID)
	}

	// A refused follow is an error, not a reconnect.
	for _, err := range direct.Follow(ctx, "no-such-conversation", "") {
		var apiErr *client.Error
		if !errors.As(err, &apiErr) || apiErr.Status != 404 {
			t.Errorf("following an unknown conversation: %v; want a 404 *client.Error", err)
		}
	}
}

// cutProxy passes one follow request to the API and its events back,
// re-written, after a retry of 20 ms; on the first connection it stops in
// the middle of the third event.
func cutProxy(t *testing.T, w http.ResponseWriter, r *http.Request, api string, first bool) {
	req, _ := http.NewRequestWithContext(r.Context(), r.Method, api+r.URL.RequestURI(), nil)
	req.Header = r.Header.Clone()
	res, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Errorf("proxy: %v", err)
		return
	}
	defer res.Body.Close()
	for k, vs := range res.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(res.StatusCode)
	fmt.Fprint(w, "retry: 20\n\n")
	passed := 0
	for ev, err := range client.ReadEvents(res.Body) {
		if err != nil {
			return
		}
		if first && passed == 2 {
			fmt.Fprintf(w, "id: %s\nevent: %s\ndata: %s", ev.ID, ev.Name, ev.Data[:len(ev.Data)/2])
			return
		}
		fmt.Fprintf(w, "id: %s\nevent: %s\ndata: %s\n\n", ev.ID, ev.Name, ev.Data)
		w.(http.Flusher).Flush()
		passed++
	}
}

// followUntil collects a follow's events up to the one with id last.
func followUntil(t *testing.T, seq iter.Seq2[client.Event, error], last string) []client.Event {
	t.Helper()
	var out []client.Event
	for ev, err := range seq {
		if err != nil {
			t.Fatalf("follow after %v: %v", eventKeys(out), err)
		}
		out = append(out, ev)
		if ev.ID == last {
			return out
		}
	}
	t.Fatalf("the follow ended before id %s: %v", last, eventKeys(out))
	return nil
}

func eventKeys(evs []client.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.ID + ":" + ev.Name + ":" + string(ev.Data)
	}
	return out
}

func mustOpen(t *testing.T) func(*client.Stream, error) *client.Stream {
	return func(s *client.Stream, err error) *client.Stream {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

// turn reads a turn's stream: its event names, the conversation and the
// approval request it asked for ("" for none).
func turn(t *testing.T, s *client.Stream) (names []string, conv, approval string) {
	t.Helper()
	defer s.Close()
	for ev, err := range s.All() {
		if err != nil {
			t.Fatalf("the stream after %v: %v", names, err)
		}
		names = append(names, ev.Name)
		if ev.Name == "approval.required" {
			var a struct {
				ID string `json:"approval_request_id"`
			}
			_ = json.Unmarshal(ev.Data, &a)
			approval = a.ID
		}
	}
	return names, s.ConversationID, approval
}
