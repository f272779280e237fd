package emulator_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/toolgate/toolgate/internal/emulator"
)

// emu is a running emulator and an openai-go client pointed at it.
type emu struct {
	URL    string // base URL without /v1
	Client openai.Client
	Server *emulator.Server
}

// startEmulator serves an emulator on a loopback port for the test.
func startEmulator(t testing.TB, cfg emulator.Config) *emu {
	t.Helper()
	if cfg.MCPTimeout == 0 {
		cfg.MCPTimeout = 5 * time.Second
	}
	s, err := emulator.New(cfg)
	if err != nil {
		t.Fatalf("emulator.New: %v", err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	c := openai.NewClient(option.WithBaseURL(ts.URL+"/v1/"), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
	return &emu{URL: ts.URL, Client: c, Server: s}
}

// testMCP is a small MCP server over streamable HTTP with tools whose
// behaviour tests can rely on.
type testMCP struct {
	URL string
	mu  sync.Mutex
	// Calls counts tools/call per tool name.
	calls map[string]int
	// Headers holds the request headers of the last MCP request.
	headers http.Header
}

func (m *testMCP) Calls(name string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls[name]
}

func (m *testMCP) LastHeaders() http.Header {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.headers.Clone()
}

type echoIn struct {
	Text string `json:"text" jsonschema:"text to echo back"`
}
type addIn struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
}

// startTestMCP serves tools echo (read-only), add (read-only), fail (always
// reports a tool execution error) and wipe (destructive). With token set,
// every request must carry "Authorization: Bearer <token>".
func startTestMCP(t testing.TB, token string) *testMCP {
	t.Helper()
	m := &testMCP{calls: map[string]int{}}
	count := func(name string) {
		m.mu.Lock()
		m.calls[name]++
		m.mu.Unlock()
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "test-mcp", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "Echo the text back.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			count("echo")
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + in.Text}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "add", Description: "Add two numbers.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, any, error) {
			count("add")
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(in.A + in.B)}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "fail", Description: "Always fails."},
		func(_ context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			count("fail")
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "An error occurred invoking 'fail'."}}}, nil, nil
		})
	destructive := true
	mcp.AddTool(srv, &mcp.Tool{Name: "wipe", Description: "Delete everything.", Annotations: &mcp.ToolAnnotations{DestructiveHint: &destructive}},
		func(_ context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			count("wipe")
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "wiped"}}}, nil, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.mu.Lock()
		m.headers = r.Header.Clone()
		m.mu.Unlock()
		if token != "" && r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	m.URL = ts.URL + "/mcp"
	return m
}

var (
	demoOnce sync.Once
	demoBin  string
	demoErr  error
)

// demo is the project's demo MCP server, run as its own process (the
// emulator's tests use it as any MCP server, not as a Go package).
type demo struct {
	URL  string // the /mcp endpoint
	base string
}

// startDemo builds cmd/demo-mcp once per test binary and runs it.
func startDemo(t testing.TB) *demo {
	t.Helper()
	demoOnce.Do(func() {
		dir, err := os.MkdirTemp("", "emulator-demo-*")
		if err != nil {
			demoErr = err
			return
		}
		demoBin = filepath.Join(dir, "demo-mcp")
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(file), "..", "..")
		cmd := exec.Command("go", "build", "-o", demoBin, "./cmd/demo-mcp")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			demoErr = fmt.Errorf("go build ./cmd/demo-mcp: %v\n%s", err, out)
		}
	})
	if demoErr != nil {
		t.Fatal(demoErr)
	}
	cmd := exec.Command(demoBin, "-addr", "127.0.0.1:0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	urlRE := regexp.MustCompile(`url=(http://\S+/mcp)`)
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := urlRE.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case u := <-found:
		return &demo{URL: u, base: strings.TrimSuffix(u, "/mcp")}
	case <-time.After(20 * time.Second):
		t.Fatal("demo-mcp did not report its URL within 20s")
		return nil
	}
}

// demoState is the demo server's GET /state.
type demoState struct {
	Forecasts map[string]json.RawMessage `json:"forecasts"`
	Alerts    []json.RawMessage          `json:"alerts"`
	Calls     map[string]int             `json:"calls"`
}

func (d *demo) State(t testing.TB) demoState {
	t.Helper()
	resp, err := http.Get(d.base + "/state")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s demoState
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// sseEvent is one SSE frame as it came over the wire.
type sseEvent struct {
	Event string
	Data  json.RawMessage
}

// Type is the data's "type" key.
func (e sseEvent) Type() string {
	var v struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(e.Data, &v)
	return v.Type
}

// rawResult is a raw HTTP exchange with the emulator.
type rawResult struct {
	Status  int
	Header  http.Header
	Body    []byte
	Events  []sseEvent // parsed when the answer is text/event-stream
	ReadErr error      // error reading the body (a cut stream)
}

// post sends body (a JSON string or a value to marshal) to /v1/responses
// with optional headers (name, value pairs) and reads the whole answer.
func post(t testing.TB, e *emu, body any, headers ...string) rawResult {
	t.Helper()
	resp, err := http.DefaultClient.Do(newRequest(t, e, body, headers...))
	if err != nil {
		t.Fatalf("POST /v1/responses: %v", err)
	}
	defer resp.Body.Close()
	data, readErr := io.ReadAll(resp.Body)
	r := rawResult{Status: resp.StatusCode, Header: resp.Header, Body: data, ReadErr: readErr}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		r.Events = parseSSE(t, data)
	}
	return r
}

// parseSSE splits an SSE body into frames and checks the framing the real
// API uses: "event: <type>" then "data: <json>" whose type matches.
func parseSSE(t testing.TB, body []byte) []sseEvent {
	t.Helper()
	var out []sseEvent
	for _, frame := range strings.Split(string(body), "\n\n") {
		if strings.TrimSpace(frame) == "" {
			continue
		}
		var ev sseEvent
		for _, line := range strings.Split(frame, "\n") {
			switch {
			case strings.HasPrefix(line, "event: "):
				ev.Event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ev.Data = json.RawMessage(strings.TrimPrefix(line, "data: "))
			}
		}
		if ev.Data == nil {
			continue // a partial frame at a cut
		}
		out = append(out, ev)
	}
	return out
}

// mcpEntry is a tools[] entry for raw JSON requests.
func mcpEntry(label, url string, requireApproval any) map[string]any {
	e := map[string]any{"type": "mcp", "server_label": label, "server_url": url}
	if requireApproval != nil {
		e["require_approval"] = requireApproval
	}
	return e
}

// newRequest builds POST /v1/responses with body (a JSON string or a value
// to marshal) and headers (name, value pairs).
func newRequest(t testing.TB, e *emu, body any, headers ...string) *http.Request {
	t.Helper()
	var b []byte
	switch v := body.(type) {
	case string:
		b = []byte(v)
	default:
		var err error
		if b, err = json.Marshal(v); err != nil {
			t.Fatal(err)
		}
	}
	req, err := http.NewRequest(http.MethodPost, e.URL+"/v1/responses", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return req
}

func decodeJSON(t testing.TB, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("decode %s: %v", data, err)
	}
}

// wireError is OpenAI's error body.
type wireError struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

func errorBody(t testing.TB, body []byte) wireError {
	t.Helper()
	var w wireError
	decodeJSON(t, body, &w)
	if w.Error.Message == "" || w.Error.Type == "" {
		t.Fatalf("not an OpenAI error body: %s", body)
	}
	return w
}
