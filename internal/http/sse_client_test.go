package http_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/client"
)

// sseEvent is one server-sent event as a browser would parse it.
type sseEvent struct {
	ID   string
	Name string
	Data json.RawMessage
}

// stream is a whole SSE response, or the JSON error that came instead.
type stream struct {
	status int
	header http.Header
	body   []byte // the body when it was not a stream
	events []sseEvent
	pings  int
}

// parseSSE reads events with the API client's reader until the body ends
// or stop returns true; pings counts the comment lines (heartbeats).
func parseSSE(t testing.TB, r io.Reader, stop func(sseEvent) bool) (events []sseEvent, pings int) {
	t.Helper()
	rd := client.NewReader(r)
	for ev, err := range rd.All() {
		if err != nil {
			break
		}
		cur := sseEvent{ID: ev.ID, Name: ev.Name, Data: json.RawMessage(ev.Data)}
		events = append(events, cur)
		if stop != nil && stop(cur) {
			break
		}
	}
	return events, rd.Comments
}

// open posts body to path and returns the live response. An error answer
// is checked against docs/openapi.yaml, a stream by status and content type
// (spec_test.go).
func (e *apiEnv) open(ctx context.Context, path string, body any) *http.Response {
	e.t.Helper()
	specWatch(e.t, e.url)
	raw, err := json.Marshal(body)
	if err != nil {
		e.t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url+path, bytes.NewReader(raw))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	if e.token != "" {
		req.Header.Set("Authorization", "Bearer "+e.token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("POST %s: %v", path, err)
	}
	return res
}

// stream posts body to path and reads the whole answer.
func (e *apiEnv) stream(path string, body any) stream {
	e.t.Helper()
	res := e.open(context.Background(), path, body)
	defer res.Body.Close()
	s := stream{status: res.StatusCode, header: res.Header}
	if !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		s.body, _ = io.ReadAll(res.Body)
		return s
	}
	s.events, s.pings = parseSSE(e.t, res.Body, nil)
	return s
}

// send posts a message; conv "" starts a new conversation.
func (e *apiEnv) send(conv, input string) stream {
	e.t.Helper()
	body := map[string]any{"input": input}
	if conv != "" {
		body["conversation_id"] = conv
	}
	return e.stream("/api/responses", body)
}

// decide posts one decision; extra adds reason, remember, scope.
func (e *apiEnv) decide(conv, approvalID string, approve bool, extra map[string]any) stream {
	e.t.Helper()
	body := map[string]any{"conversation_id": conv, "approval_request_id": approvalID, "approve": approve}
	for k, v := range extra {
		body[k] = v
	}
	return e.stream("/api/responses/approval-response", body)
}

// ok fails the test unless s is a stream ending in a completed event.
func (s stream) ok(t testing.TB) stream {
	t.Helper()
	if s.status != 200 || len(s.events) == 0 {
		t.Fatalf("status %d, body %s, events %v", s.status, s.body, s.names())
	}
	if last := s.events[len(s.events)-1]; last.Name != "completed" {
		t.Fatalf("stream ended with %s %s; events %v", last.Name, last.Data, s.names())
	}
	return s
}

func (s stream) names() []string {
	out := make([]string, len(s.events))
	for i, ev := range s.events {
		out[i] = ev.Name
	}
	return out
}

// all decodes the data of every event named name.
func all[T any](t testing.TB, s stream, name string) []T {
	t.Helper()
	var out []T
	for _, ev := range s.events {
		if ev.Name == name {
			var v T
			if err := json.Unmarshal(ev.Data, &v); err != nil {
				t.Fatalf("decode %s %s: %v", name, ev.Data, err)
			}
			out = append(out, v)
		}
	}
	return out
}

// one decodes the only event named name.
func one[T any](t testing.TB, s stream, name string) T {
	t.Helper()
	got := all[T](t, s, name)
	if len(got) != 1 {
		t.Fatalf("%d %s events, want 1; events %v", len(got), name, s.names())
	}
	return got[0]
}

// Event payloads as a client reads them.
type (
	convEvent struct {
		ConversationID string `json:"conversation_id"`
		TurnID         string `json:"turn_id"`
		Kind           string `json:"kind"`
		Offline        bool   `json:"offline"`
	}
	itemEvent struct {
		Item item `json:"item"`
	}
	item struct {
		Seq               int             `json:"seq"`
		Type              string          `json:"type"`
		ID                string          `json:"id"`
		ResponseID        string          `json:"response_id"`
		Text              string          `json:"text"`
		Partial           bool            `json:"partial"`
		ServerLabel       string          `json:"server_label"`
		Name              string          `json:"name"`
		Arguments         json.RawMessage `json:"arguments"`
		Output            *string         `json:"output"`
		Error             json.RawMessage `json:"error"`
		ApprovalRequestID string          `json:"approval_request_id"`
		AllowedBy         *struct {
			Kind      string     `json:"kind"`
			Policy    string     `json:"policy"`
			Source    string     `json:"source"`
			GrantID   string     `json:"grant_id"`
			ExpiresAt *time.Time `json:"expires_at"`
		} `json:"allowed_by"`
		Tools    []struct{ Name string } `json:"tools"`
		Approval *approval               `json:"approval"`
		TurnErr  *turnError              `json:"turn_error"`
		// Through the MCP face (gateway mode): what the face saw.
		Via     string       `json:"via"`
		Refusal *refusal     `json:"refusal"`
		Call    *gatewayCall `json:"call"`
	}
	refusal struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	gatewayCall struct {
		ID                string          `json:"id"`
		TurnID            string          `json:"turn_id"`
		State             string          `json:"state"`
		DefinitionDigest  string          `json:"definition_digest"`
		Arguments         json.RawMessage `json:"arguments"`
		Result            json.RawMessage `json:"result"`
		IsError           bool            `json:"is_error"`
		Refusal           *refusal        `json:"refusal"`
		ApprovalRequestID *string         `json:"approval_request_id"`
		AllowedBy         *struct {
			Kind string `json:"kind"`
		} `json:"allowed_by"`
	}
	approval struct {
		ID          string          `json:"approval_request_id"`
		ServerLabel string          `json:"server_label"`
		ToolName    string          `json:"tool_name"`
		Arguments   json.RawMessage `json:"arguments"`
		Redacted    []string        `json:"redacted"`
		Annotations map[string]any  `json:"annotations"`
		AsksBecause struct {
			Policy string   `json:"policy"`
			Source string   `json:"source"`
			Reason string   `json:"reason"`
			Fields []string `json:"fields"`
		} `json:"asks_because"`
		State    string  `json:"state"`
		Reason   *string `json:"reason"`
		Scope    *string `json:"scope"`
		Remember bool    `json:"remember"`
		AskLock  *string `json:"ask_lock"`
		// Words and choices per tool (approvalcards_test.go).
		ApprovalText *string  `json:"approval_text"`
		Choices      []string `json:"choices"`
		// Gateway mode: the definition approved and the face's record of the call.
		DefinitionDigest string       `json:"definition_digest"`
		Call             *gatewayCall `json:"call"`
	}
	decisionEvent struct {
		ApprovalRequestID string   `json:"approval_request_id"`
		State             string   `json:"state"`
		Reason            *string  `json:"reason"`
		Pending           []string `json:"pending_approval_ids"`
		PolicyChanged     *struct {
			Policy string `json:"policy"`
		} `json:"policy_changed"`
	}
	completedEvent struct {
		ResponseID *string  `json:"response_id"`
		Pending    int      `json:"pending_approvals"`
		PendingIDs []string `json:"pending_approval_ids"`
		Sent       bool     `json:"sent"`
	}
	turnError struct {
		Code      string `json:"code"`
		Message   string `json:"message"`
		Retryable bool   `json:"retryable"`
	}
	transcript struct {
		Conversation struct {
			ID             string  `json:"id"`
			Title          string  `json:"title"`
			LastResponseID *string `json:"last_response_id"`
			Streaming      bool    `json:"streaming"`
			Pending        int     `json:"pending_approvals"`
		} `json:"conversation"`
		Items   []item     `json:"items"`
		Pending []approval `json:"pending_approvals"`
	}
)

// items returns the finished items of a stream.
func (s stream) items(t testing.TB) []item {
	var out []item
	for _, ev := range all[itemEvent](t, s, "item.done") {
		out = append(out, ev.Item)
	}
	return out
}

// conv returns the conversation id a stream announced.
func (s stream) conv(t testing.TB) string {
	t.Helper()
	return one[convEvent](t, s, "conversation").ConversationID
}

func (e *apiEnv) transcript(conv string) transcript {
	e.t.Helper()
	var tr transcript
	e.must(200, "GET", "/api/conversations/"+conv, nil, &tr)
	return tr
}
