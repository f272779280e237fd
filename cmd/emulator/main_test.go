package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// logWatch is the stdout run logs to: it keeps the log and reports the
// base_url run logs once it listens.
type logWatch struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	once  sync.Once
	found chan string
}

var baseURLRE = regexp.MustCompile(`base_url=(http://\S+/v1/)`)

func newLogWatch() *logWatch { return &logWatch{found: make(chan string, 1)} }

func (w *logWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.buf.Write(p)
	if m := baseURLRE.FindStringSubmatch(w.buf.String()); m != nil {
		w.once.Do(func() { w.found <- m[1] })
	}
	return n, err
}

func (w *logWatch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func noEnv(string) string { return "" }

// startRun runs the emulator binary's run on a free loopback port and
// returns its base URL (ending in /v1/), a stop function that returns run's
// error, and its log.
func startRun(t *testing.T, getenv func(string) string, args ...string) (string, func() error, *logWatch) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	out := newLogWatch()
	done := make(chan error, 1)
	go func() { done <- run(ctx, append([]string{"-addr", "127.0.0.1:0"}, args...), getenv, out) }()
	stop := func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(5 * time.Second):
			t.Fatal("run did not return within 5s of cancellation")
			return nil
		}
	}
	select {
	case u := <-out.found:
		return u, stop, out
	case err := <-done:
		t.Fatalf("run returned before serving: %v\nlog:\n%s", err, out.String())
	case <-time.After(10 * time.Second):
		t.Fatalf("run logged no base_url within 10s; log:\n%s", out.String())
	}
	return "", nil, nil
}

// runDemo builds ./cmd/demo-mcp and runs it as its own process, as a user
// would; it returns the /mcp URL and the server's base URL.
func runDemo(t *testing.T) (mcpURL, base string) {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "demo-mcp")
	build := exec.Command("go", "build", "-o", bin, "./cmd/demo-mcp")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/demo-mcp: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "-addr", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "DEMO_MCP_TOKEN=")
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
		return u, strings.TrimSuffix(u, "/mcp")
	case <-time.After(20 * time.Second):
		t.Fatal("demo-mcp did not report its URL within 20s")
		return "", ""
	}
}

type demoState struct {
	Forecasts map[string]json.RawMessage `json:"forecasts"`
	Calls     map[string]int             `json:"calls"`
}

func getDemoState(t *testing.T, base string) demoState {
	t.Helper()
	resp, err := http.Get(base + "/state")
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

func TestRunRejectsBadBehaviorAtStart(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		getenv func(string) string
		want   string
	}{
		{"unknown key in -behavior", []string{"-behavior", "stauts=503"}, noEnv, `unknown behavior "stauts"`},
		{"bad value in -behavior", []string{"-behavior", "event-delay=20ms; status=200"}, noEnv, "400-599"},
		{"bad $EMULATOR_BEHAVIOR", nil, func(k string) string {
			if k == "EMULATOR_BEHAVIOR" {
				return "deltas=0"
			}
			return ""
		}, `"deltas=0"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := newLogWatch()
			done := make(chan error, 1)
			go func() {
				done <- run(t.Context(), append([]string{"-addr", "127.0.0.1:0"}, tc.args...), tc.getenv, out)
			}()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "behavior") {
					t.Errorf("run: err = %v, want a behavior error mentioning %s", err, tc.want)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("run with a bad behavior did not fail at start; it is serving")
			}
			if strings.Contains(out.String(), "base_url=") {
				t.Errorf("run logged a base_url although its behavior is invalid:\n%s", out.String())
			}
		})
	}
}

func TestRunRequiresTheAPIKey(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		getenv func(string) string
	}{
		{"-api-key", []string{"-api-key", "sk-emulator"}, noEnv},
		{"$EMULATOR_API_KEY", nil, func(k string) string {
			if k == "EMULATOR_API_KEY" {
				return "sk-emulator"
			}
			return ""
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, stop, _ := startRun(t, tc.getenv, tc.args...)
			params := responses.ResponseNewParams{Model: "gpt-4.1", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hello")}}

			wrong := openai.NewClient(option.WithBaseURL(base), option.WithAPIKey("sk-wrong"), option.WithMaxRetries(0))
			_, err := wrong.Responses.New(t.Context(), params)
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusUnauthorized {
				t.Errorf("wrong key: err = %v, want *openai.Error 401", err)
			}

			right := openai.NewClient(option.WithBaseURL(base), option.WithAPIKey("sk-emulator"), option.WithMaxRetries(0))
			resp, err := right.Responses.New(t.Context(), params)
			if err != nil || resp.Status != responses.ResponseStatusCompleted {
				t.Errorf("right key: err = %v, resp %+v", err, resp)
			}
			if err := stop(); err != nil {
				t.Errorf("run after cancellation: %v", err)
			}
		})
	}
}

// TestRunServesApprovalFlowStreamingWithOpenAIGo is the "done when":
// the binary, the demo MCP server as its own process and the official client,
// streaming: list tools → approval request → approve → call → text.
func TestRunServesApprovalFlowStreamingWithOpenAIGo(t *testing.T) {
	mcpURL, demoBase := runDemo(t)
	// -behavior reaches every request: the answer comes in exactly 3 deltas.
	base, stop, log := startRun(t, noEnv, "-behavior", "deltas=3; event-delay=1ms")
	c := openai.NewClient(option.WithBaseURL(base), option.WithAPIKey("sk-any"), option.WithMaxRetries(0))
	ctx := t.Context()
	tools := []responses.ToolUnionParam{{OfMcp: &responses.ToolMcpParam{
		ServerLabel:     "weather",
		ServerURL:       openai.String(mcpURL),
		RequireApproval: responses.ToolMcpRequireApprovalUnionParam{OfMcpToolApprovalSetting: openai.String("always")},
	}}}

	// Turn 1: the tools are listed and the call waits for approval.
	st := c.Responses.NewStreaming(ctx, responses.ResponseNewParams{
		Model: "gpt-5",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(`get_forecast {"city": "Berlin"}`)},
		Tools: tools,
	})
	var listed []string
	var approval *responses.ResponseOutputItemMcpApprovalRequest
	var turn1 *responses.Response
	for st.Next() {
		switch ev := st.Current().AsAny().(type) {
		case responses.ResponseOutputItemDoneEvent:
			switch it := ev.Item.AsAny().(type) {
			case responses.ResponseOutputItemMcpListTools:
				for _, tool := range it.Tools {
					listed = append(listed, tool.Name)
				}
			case responses.ResponseOutputItemMcpApprovalRequest:
				approval = &it
			case responses.ResponseOutputItemMcpCall:
				t.Errorf("turn 1 called %s before approval", it.Name)
			}
		case responses.ResponseCompletedEvent:
			turn1 = &ev.Response
		}
	}
	if err := st.Err(); err != nil {
		t.Fatalf("turn 1 stream: %v", err)
	}
	st.Close()
	if !strings.Contains(strings.Join(listed, ","), "get_forecast") || !strings.Contains(strings.Join(listed, ","), "delete_forecast") {
		t.Errorf("listed tools %v, want the demo's tools", listed)
	}
	if turn1 == nil || approval == nil || approval.Name != "get_forecast" || !strings.Contains(approval.Arguments, "Berlin") {
		t.Fatalf("turn 1: completed %v, approval request %+v", turn1 != nil, approval)
	}
	if n := getDemoState(t, demoBase).Calls["get_forecast"]; n != 0 {
		t.Fatalf("get_forecast ran %d times before approval", n)
	}

	// Turn 2: approve; the tool runs and the answer quotes it.
	st = c.Responses.NewStreaming(ctx, responses.ResponseNewParams{
		Model:              "gpt-5",
		PreviousResponseID: openai.String(turn1.ID),
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
			responses.ResponseInputItemParamOfMcpApprovalResponse(approval.ID, true),
		}},
		Tools: tools,
	})
	var call *responses.ResponseOutputItemMcpCall
	var deltas []string
	var turn2 *responses.Response
	for st.Next() {
		switch ev := st.Current().AsAny().(type) {
		case responses.ResponseOutputItemDoneEvent:
			if it, ok := ev.Item.AsAny().(responses.ResponseOutputItemMcpCall); ok {
				call = &it
			}
		case responses.ResponseTextDeltaEvent:
			deltas = append(deltas, ev.Delta)
		case responses.ResponseCompletedEvent:
			turn2 = &ev.Response
		}
	}
	if err := st.Err(); err != nil {
		t.Fatalf("turn 2 stream: %v", err)
	}
	st.Close()
	if call == nil || call.Status != "completed" || call.ApprovalRequestID != approval.ID || !strings.Contains(call.Output, "Forecast for Berlin") {
		t.Fatalf("turn 2 mcp_call %+v", call)
	}
	if turn2 == nil {
		t.Fatal("turn 2 did not complete")
	}
	text := turn2.OutputText()
	if !strings.Contains(text, "Forecast for Berlin") || strings.Join(deltas, "") != text {
		t.Errorf("answer %q (deltas %q): want the tool's output, streamed", text, deltas)
	}
	if len(deltas) != 3 {
		t.Errorf("%d text deltas, want 3 from -behavior deltas=3", len(deltas))
	}
	if n := getDemoState(t, demoBase).Calls["get_forecast"]; n != 1 {
		t.Errorf("get_forecast ran %d times, want 1", n)
	}

	// The stored response is there for GET, and each request was logged.
	got, err := c.Responses.Get(ctx, turn2.ID, responses.ResponseGetParams{})
	if err != nil || got.Status != responses.ResponseStatusCompleted || got.OutputText() != text {
		t.Errorf("GET %s: err %v, resp %+v", turn2.ID, err, got)
	}
	if err := stop(); err != nil {
		t.Errorf("run after cancellation: %v", err)
	}
	if n := strings.Count(log.String(), "POST /v1/responses"); n != 2 {
		t.Errorf("%d request lines in the log, want 2:\n%s", n, log.String())
	}
}

// TestRunKeepsStoredResponsesInTheStateFile: with -state (or
// EMULATOR_STATE_FILE) a response stored before a restart can be fetched
// and continued after it.
func TestRunKeepsStoredResponsesInTheStateFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "state.json")
	for _, tc := range []struct {
		name   string
		getenv func(string) string
		args   []string
	}{
		{"flag", noEnv, []string{"-state", file}},
		{"env", func(k string) string { return map[string]string{"EMULATOR_STATE_FILE": file}[k] }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, stop, _ := startRun(t, tc.getenv, tc.args...)
			c := openai.NewClient(option.WithBaseURL(base), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
			first, err := c.Responses.New(t.Context(), responses.ResponseNewParams{Model: "gpt-4.1",
				Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hello")}})
			if err != nil {
				t.Fatal(err)
			}
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			base, stop, log := startRun(t, tc.getenv, tc.args...)
			defer func() { _ = stop() }()
			c = openai.NewClient(option.WithBaseURL(base), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
			if _, err := c.Responses.Get(t.Context(), first.ID, responses.ResponseGetParams{}); err != nil {
				t.Errorf("GET %s after the restart: %v\nlog:\n%s", first.ID, err, log)
			}
			if _, err := c.Responses.New(t.Context(), responses.ResponseNewParams{Model: "gpt-4.1", PreviousResponseID: openai.String(first.ID),
				Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("again")}}); err != nil {
				t.Errorf("previous_response_id after the restart: %v", err)
			}
		})
	}
}
