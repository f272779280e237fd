package responses_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/responses"
)

// fixtureDir holds the recorded OpenAI traffic (a copy of
// ../shared/openai-fixtures kept with the emulator's tests).
const fixtureDir = "../emulator/testdata/openai-fixtures"

// readFixture returns a fixture without its leading "# " header lines.
func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(fixtureDir, name))
	if err != nil {
		t.Fatal(err)
	}
	for bytes.HasPrefix(data, []byte("# ")) {
		_, data, _ = bytes.Cut(data, []byte("\n"))
	}
	return data
}

// fixtureSSE is a recorded stream as it comes over the wire: the .sse file
// as is, a .chunks.jsonl file framed line by line.
func fixtureSSE(t testing.TB, name string) []byte {
	t.Helper()
	data := readFixture(t, name)
	if strings.HasSuffix(name, ".sse") {
		return data
	}
	var b bytes.Buffer
	for line := range strings.Lines(string(data)) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		b.WriteString(frame(t, line))
	}
	return b.Bytes()
}

// frame is one SSE frame for an event's JSON.
func frame(t testing.TB, event string) string {
	t.Helper()
	var v struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal([]byte(event), &v); err != nil || v.Type == "" {
		t.Fatalf("not an event: %.200s (%v)", event, err)
	}
	return "event: " + v.Type + "\ndata: " + event + "\n\n"
}

// fakeAPI is an httptest server at POST /v1/responses that answers with a
// fixed status and body and records the requests.
type fakeAPI struct {
	URL    string // base URL for Config.BaseURL, ending in /v1/
	mu     sync.Mutex
	bodies [][]byte
}

func (f *fakeAPI) Requests() [][]byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]byte(nil), f.bodies...)
}

// LastRequest is the last request body, decoded.
func (f *fakeAPI) LastRequest(t testing.TB) map[string]any {
	t.Helper()
	reqs := f.Requests()
	if len(reqs) == 0 {
		t.Fatal("no request reached the server")
	}
	var m map[string]any
	if err := json.Unmarshal(reqs[len(reqs)-1], &m); err != nil {
		t.Fatalf("request body %s: %v", reqs[len(reqs)-1], err)
	}
	return m
}

func startFakeAPI(t testing.TB, status int, contentType string, body []byte) *fakeAPI {
	t.Helper()
	f := &fakeAPI{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.bodies = append(f.bodies, b)
		f.mu.Unlock()
		if r.Method != http.MethodPost || r.URL.Path != "/v1/responses" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	f.URL = srv.URL + "/v1/"
	return f
}

// serveSSE serves body as the stream of every request.
func serveSSE(t testing.TB, body []byte) *fakeAPI {
	return startFakeAPI(t, http.StatusOK, "text/event-stream; charset=utf-8", body)
}

// streamed is everything a stream yielded.
type streamed struct {
	Events []conversation.Event
	Err    error
}

// readAll reads es to its end and closes it.
func readAll(t testing.TB, es conversation.EventStream) streamed {
	t.Helper()
	var s streamed
	for es.Next() {
		s.Events = append(s.Events, es.Event())
	}
	s.Err = es.Err()
	if err := es.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	return s
}

// stream sends req and reads the whole answer; the request must succeed.
func stream(t testing.TB, c *responses.Client, req conversation.UpstreamRequest) streamed {
	t.Helper()
	es, err := c.Stream(t.Context(), req)
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	return readAll(t, es)
}

// Items are the finished items of the given types (all when none given).
func (s streamed) Items(types ...string) []*conversation.UpstreamItem {
	var out []*conversation.UpstreamItem
	for _, ev := range s.Events {
		if ev.Kind == conversation.EventItemDone && (len(types) == 0 || slices.Contains(types, ev.Item.Type)) {
			out = append(out, ev.Item)
		}
	}
	return out
}

// Deltas is the text of all text deltas.
func (s streamed) Deltas() string {
	var b strings.Builder
	for _, ev := range s.Events {
		if ev.Kind == conversation.EventTextDelta {
			b.WriteString(ev.Delta)
		}
	}
	return b.String()
}

// Text is the text of the finished messages.
func (s streamed) Text() string {
	var b strings.Builder
	for _, it := range s.Items("message") {
		b.WriteString(it.Text)
	}
	return b.String()
}

// Last is the last event (zero when there was none).
func (s streamed) Last() conversation.Event {
	if len(s.Events) == 0 {
		return conversation.Event{}
	}
	return s.Events[len(s.Events)-1]
}

// ResponseID is the id of response.created.
func (s streamed) ResponseID() string {
	for _, ev := range s.Events {
		if ev.Kind == conversation.EventCreated {
			return ev.ResponseID
		}
	}
	return ""
}

// mustComplete checks that the stream ended cleanly with response.completed
// for the response it created.
func (s streamed) mustComplete(t testing.TB) {
	t.Helper()
	if s.Err != nil {
		t.Fatalf("stream error: %v", s.Err)
	}
	if last := s.Last(); last.Kind != conversation.EventCompleted || last.ResponseID == "" || last.ResponseID != s.ResponseID() {
		t.Fatalf("last event %+v, want EventCompleted for %q (events: %s)", last, s.ResponseID(), s.describe())
	}
}

// describe lists the events briefly, for failure messages.
func (s streamed) describe() string {
	var parts []string
	for _, ev := range s.Events {
		switch ev.Kind {
		case conversation.EventItemDone:
			parts = append(parts, "item:"+ev.Item.Type)
		case conversation.EventTextDelta:
			if len(parts) == 0 || parts[len(parts)-1] != "delta" {
				parts = append(parts, "delta")
			}
		case conversation.EventError, conversation.EventFailed, conversation.EventIncomplete:
			parts = append(parts, kindName(ev.Kind)+":"+ev.Error.Code+":"+ev.Error.Message)
		default:
			parts = append(parts, kindName(ev.Kind))
		}
	}
	return strings.Join(parts, " ")
}

func kindName(k conversation.EventKind) string {
	return map[conversation.EventKind]string{
		conversation.EventCreated: "created", conversation.EventTextDelta: "delta",
		conversation.EventItemDone: "item", conversation.EventCompleted: "completed",
		conversation.EventFailed: "failed", conversation.EventIncomplete: "incomplete",
		conversation.EventError: "error", conversation.EventItemStarted: "started",
	}[k]
}

// jsonDiff compares two JSON texts by value.
func jsonDiff(t testing.TB, got, want []byte) string {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("got is not JSON: %s", got)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("want is not JSON: %s", want)
	}
	return cmp.Diff(w, g)
}
