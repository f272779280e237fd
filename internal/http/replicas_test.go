package http_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/client"
)

// replica is a second API process on the same database, emulator and demo
// server: its own services, listener, leases and port.
func (e *apiEnv) replica() *apiEnv {
	e.t.Helper()
	c := *e
	c.start()
	return &c
}

// follow opens GET /api/conversations/{id}/events (lastID < 0: no
// Last-Event-ID) and delivers its events on the returned channel until ctx
// ends or the stream does.
func (e *apiEnv) follow(ctx context.Context, conv string, lastID int) (*http.Response, <-chan sseEvent) {
	e.t.Helper()
	hdr := map[string]string{}
	if lastID >= 0 {
		hdr["Last-Event-ID"] = strconv.Itoa(lastID)
	}
	return e.events(ctx, "/api/conversations/"+conv+"/events", hdr)
}

// events opens the event stream at path (GET, as this env's user, with
// hdr) and delivers its events on the returned channel until ctx ends or
// the stream does.
func (e *apiEnv) events(ctx context.Context, path string, hdr map[string]string) (*http.Response, <-chan sseEvent) {
	e.t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.url+path, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	if e.token != "" {
		req.Header.Set("Authorization", "Bearer "+e.token)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	out := make(chan sseEvent, 1000)
	if res.StatusCode != 200 {
		close(out)
		return res, out
	}
	go func() {
		defer close(out)
		defer res.Body.Close()
		for ev, err := range client.ReadEvents(res.Body) {
			if err != nil {
				return
			}
			out <- sseEvent{ID: ev.ID, Name: ev.Name, Data: json.RawMessage(ev.Data)}
		}
	}()
	return res, out
}

// until collects events from ch until one named name arrives (included).
func until(t testing.TB, ch <-chan sseEvent, name string) []sseEvent {
	t.Helper()
	var got []sseEvent
	timeout := time.After(20 * time.Second)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("the stream ended before %s; got %v", name, names(got))
			}
			got = append(got, ev)
			if ev.Name == name {
				return got
			}
		case <-timeout:
			t.Fatalf("no %s within 20s; got %v", name, names(got))
		}
	}
}

func names(evs []sseEvent) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.Name + "#" + ev.ID
	}
	return out
}

func TestEvents_AnotherReplicaStreamsTheTurnLiveWithTheSameIDs(t *testing.T) {
	e := newAPI(t)
	e.askFor("delete_forecast")
	b := e.replica()
	var conv struct {
		ID          string `json:"id"`
		LastEventID int    `json:"last_event_id"`
	}
	e.must(201, "POST", "/api/conversations", map[string]any{"title": "followed"}, &conv)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, live := b.follow(ctx, conv.ID, conv.LastEventID)

	// The turn runs on replica a; replica b's stream shows it as it happens.
	s := e.send(conv.ID, `delete_forecast {"city": "Oslo"}`).ok(t)
	got := until(t, live, "completed")
	if len(got) != len(s.events) {
		t.Fatalf("replica b streamed %v; the POST stream on a had %v", names(got), s.names())
	}
	for i := range got {
		if got[i].ID != s.events[i].ID || got[i].Name != s.events[i].Name || string(got[i].Data) != string(s.events[i].Data) {
			t.Fatalf("event %d: b sent %s#%s %s, a sent %s#%s %s", i, got[i].Name, got[i].ID, got[i].Data,
				s.events[i].Name, s.events[i].ID, s.events[i].Data)
		}
	}
	if s.events[0].ID != strconv.Itoa(conv.LastEventID+1) {
		t.Errorf("the POST stream's first id is %s, want %d: one numbering per conversation", s.events[0].ID, conv.LastEventID+1)
	}

	// A decision on replica b reaches a stream opened on replica a, saying who decided.
	a := one[approval](t, s, "approval.required")
	_, onA := e.follow(ctx, conv.ID, -1)
	b.decide(conv.ID, a.ID, false, map[string]any{"reason": "keep Oslo"}).ok(t)
	evs := until(t, onA, "decision.recorded")
	var d struct {
		State     string  `json:"state"`
		DecidedBy *string `json:"decided_by"`
	}
	if err := json.Unmarshal(evs[len(evs)-1].Data, &d); err != nil || d.State != "denied" || deref(d.DecidedBy) != e.admin.Email {
		t.Errorf("decision.recorded on a: %s; want denied, decided_by %s", evs[len(evs)-1].Data, e.admin.Email)
	}
	until(t, onA, "completed")

	// Resuming after an id replays exactly what came after it.
	mid, _ := strconv.Atoi(s.events[2].ID)
	rctx, rcancel := context.WithCancel(context.Background())
	defer rcancel()
	_, again := b.follow(rctx, conv.ID, mid)
	first := <-again
	if first.ID != strconv.Itoa(mid+1) {
		t.Errorf("after Last-Event-ID %d the stream starts at %s (%s)", mid, first.ID, first.Name)
	}
}

func TestEvents_OnlyTheOwnerFollowsAConversation(t *testing.T) {
	e := newAPI(t)
	var conv struct {
		ID string `json:"id"`
	}
	e.must(201, "POST", "/api/conversations", map[string]any{}, &conv)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	other, _ := e.newUser(auth.Admin)
	if res, _ := other.follow(ctx, conv.ID, -1); res.StatusCode != 404 {
		t.Errorf("another user (an admin) following: %d, want 404", res.StatusCode)
	}
	if res, _ := e.anon().follow(ctx, conv.ID, -1); res.StatusCode != 401 {
		t.Errorf("no credentials: %d, want 401", res.StatusCode)
	}
	req, _ := http.NewRequestWithContext(ctx, "GET", e.url+"/api/conversations/"+conv.ID+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+e.token)
	req.Header.Set("Last-Event-ID", "soon")
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != 400 {
		t.Fatalf("Last-Event-ID: soon → %v %v, want 400", res.StatusCode, err)
	}
	res.Body.Close()
}

func TestReplicas_CancelReachesTheReplicaRunningTheTurn(t *testing.T) {
	e := newAPI(t)
	e.createDemo("demo")
	b := e.replica()
	e.up.setBehavior("deltas=4; stall=1m; at=8")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res := e.open(ctx, "/api/responses", map[string]any{"input": "hello"})
	defer res.Body.Close()
	conv := res.Header.Get("X-Conversation-Id")
	events := make(chan sseEvent, 100)
	go func() {
		evs, _ := parseSSE(t, res.Body, nil)
		for _, ev := range evs {
			events <- ev
		}
		close(events)
	}()
	// Starting another replica leaves a's running turn alone.
	c := e.replica()
	if tr := c.transcript(conv); !tr.Conversation.Streaming {
		t.Fatal("starting a replica ended a live turn of another")
	}
	time.Sleep(300 * time.Millisecond)
	b.must(202, "POST", "/api/conversations/"+conv+"/cancel", nil, nil)
	var last sseEvent
	for ev := range events {
		last = ev
	}
	if last.Name != "error" || !strings.Contains(string(last.Data), `"cancelled"`) {
		t.Fatalf("a's stream ended with %s %s; want error cancelled", last.Name, last.Data)
	}
	if tr := b.transcript(conv); tr.Conversation.Streaming {
		t.Error("the conversation is still streaming after the cancel")
	}
}

func TestReplicas_DeletingEndsTheStreamsOfEveryReplica(t *testing.T) {
	e := newAPI(t)
	b := e.replica()
	var conv struct {
		ID string `json:"id"`
	}
	e.must(201, "POST", "/api/conversations", map[string]any{}, &conv)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, onB := b.follow(ctx, conv.ID, -1)
	time.Sleep(200 * time.Millisecond) // the stream is open before the delete
	e.must(204, "DELETE", "/api/conversations/"+conv.ID, nil, nil)
	evs := until(t, onB, "conversation.deleted")
	if !strings.Contains(string(evs[len(evs)-1].Data), conv.ID) {
		t.Errorf("conversation.deleted says %s", evs[len(evs)-1].Data)
	}
	select {
	case ev, ok := <-onB:
		if ok {
			t.Errorf("the stream went on after conversation.deleted: %s", ev.Name)
		}
	case <-time.After(5 * time.Second):
		t.Error("the stream stayed open after conversation.deleted")
	}
}

func TestEvents_AnOlderTurnReplaysWithoutItsDeltas(t *testing.T) {
	e := newAPI(t)
	e.createDemo("demo")
	s := e.send("", "hello").ok(t)
	if len(all[map[string]any](t, s, "text.delta")) == 0 {
		t.Fatal("the answer streamed no deltas: the test needs some")
	}
	e.send(s.conv(t), "hello again").ok(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, replay := e.follow(ctx, s.conv(t), 0)
	got := until(t, replay, "completed")
	for _, ev := range got {
		if ev.Name == "text.delta" {
			t.Fatalf("a finished turn replays its deltas: %v", names(got))
		}
	}
	if text := lastMessageOf(t, got); text == "" || text != lastMessage(t, s) {
		t.Errorf("the replayed message is %q, the streamed one %q", text, lastMessage(t, s))
	}
}

func lastMessageOf(t testing.TB, evs []sseEvent) string {
	var text string
	for _, ev := range evs {
		if ev.Name != "item.done" {
			continue
		}
		var it itemEvent
		if err := json.Unmarshal(ev.Data, &it); err == nil && it.Item.Type == "message" {
			text = it.Item.Text
		}
	}
	return text
}

// A client that stops reading is dropped once a write to it stalls past
// the limit: the server closes the stream rather than holding it (and its
// handler) forever; the client resumes with Last-Event-ID.
func TestEvents_AClientThatStopsReadingIsDropped(t *testing.T) {
	e := newAPIWith(t, envOptions{writeLimit: 300 * time.Millisecond})
	var conv struct {
		ID string `json:"id"`
	}
	e.must(201, "POST", "/api/conversations", map[string]any{}, &conv)
	// A long history to replay: far more than the sockets buffer.
	pad := strings.Repeat("x", 4000)
	if _, err := e.pool.Exec(context.Background(), `INSERT INTO conversation_events (conversation_id, id, event, data)
		SELECT $1, n, 'notice', json_build_object('pad', $2::text) FROM generate_series(1, 20000) n`, conv.ID, pad); err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /api/conversations/%s/events HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nLast-Event-ID: 0\r\n\r\n",
		conv.ID, strings.TrimPrefix(e.url, "http://"), e.token)
	time.Sleep(3 * time.Second) // not reading: the server's writes stall
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	n, err := io.Copy(io.Discard, conn)
	if err != nil {
		t.Fatalf("after %d bytes: %v; want the server to have closed the stream of a client that stopped reading", n, err)
	}
	if n >= 20000*4000 {
		t.Errorf("read %d bytes: the whole replay arrived, so the client was never dropped", n)
	}
}

// A turn writes the streams open on its replica itself
// (Subscription.Direct), so a client that stops reading could hold the
// turn up: it may do so only until the write times out. Here the POST's own
// client never reads (a tiny receive buffer) while the turn streams several
// megabytes of deltas; the client is dropped, and the turn runs to its end,
// which another stream of the conversation sees.
func TestStream_AClientThatStopsReadingHoldsUpTheTurnOnlyUntilDropped(t *testing.T) {
	e := newAPIWith(t, envOptions{writeLimit: 300 * time.Millisecond})
	var conv struct {
		ID string `json:"id"`
	}
	e.must(201, "POST", "/api/conversations", map[string]any{}, &conv)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, follow := e.events(ctx, "/api/conversations/"+conv.ID+"/events", nil)

	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		return errors.Join(err, serr)
	}}
	conn, err := d.Dial("tcp", strings.TrimPrefix(e.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	input := "[emulator: delta-size=1] " + strings.Repeat("ab ", 10000)
	body, _ := json.Marshal(map[string]any{"conversation_id": conv.ID, "input": input})
	fmt.Fprintf(conn, "POST /api/responses HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		strings.TrimPrefix(e.url, "http://"), e.token, len(body), body)

	began, deltas := time.Now(), 0
	for ev := range follow {
		if ev.Name == "text.delta" {
			deltas++
		}
		if ev.Name == "completed" {
			break
		}
		if ev.Name == "error" || ev.Name == "failed" {
			t.Fatalf("the turn ended with %s: %s", ev.Name, ev.Data)
		}
	}
	if ctx.Err() != nil {
		t.Fatalf("after %d deltas in %v the turn had not ended: a client that stopped reading held it up", deltas, time.Since(began))
	}
	if deltas < 29000 {
		t.Fatalf("the other stream saw %d deltas, want the whole answer (over 29,000)", deltas)
	}
	// The client that never read was dropped: the server closed its stream
	// before writing it the whole answer.
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	n, err := io.Copy(io.Discard, conn)
	if err != nil {
		t.Fatalf("after %d bytes: %v; want the server to have closed the stream of a client that stopped reading", n, err)
	}
	if n >= int64(deltas)*100 {
		t.Errorf("read %d bytes: the whole answer arrived, so the client was never dropped (the test did not make it stop reading)", n)
	}
}
