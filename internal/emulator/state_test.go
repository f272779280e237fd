package emulator_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/toolgate/toolgate/internal/emulator"
)

// lockedBuffer is a log sink safe for the emulator's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// restartable is an emulator the test stops itself, to start another one on
// the same state file.
type restartable struct {
	*emu
	ts   *httptest.Server
	logs *lockedBuffer
}

func startStateful(t *testing.T, cfg emulator.Config) *restartable {
	t.Helper()
	logs := &lockedBuffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	cfg.MCPTimeout = 5 * time.Second
	s, err := emulator.New(cfg)
	if err != nil {
		t.Fatalf("emulator.New: %v", err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	c := openai.NewClient(option.WithBaseURL(ts.URL+"/v1/"), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
	return &restartable{emu: &emu{URL: ts.URL, Client: c, Server: s}, ts: ts, logs: logs}
}

func (r *restartable) stop() { r.ts.Close() }

// TestState_PendingApprovalSurvivesRestart: turn 1 ends with an approval
// request; the emulator restarts on the same state file; the approval with
// previous_response_id runs the tool on the demo MCP server, and the
// conversation goes on.
func TestState_PendingApprovalSurvivesRestart(t *testing.T) {
	t.Parallel()
	d := startDemo(t)
	file := filepath.Join(t.TempDir(), "data", "emulator-state.json") // the directory does not exist yet
	tools := []responses.ToolUnionParam{sdkMCP("weather", d.URL, "always")}

	first := startStateful(t, emulator.Config{StateFile: file})
	turn1, err := first.Client.Responses.New(t.Context(), sdkParams(`delete_forecast {"city": "Oslo"}`, tools...))
	if err != nil {
		t.Fatal(err)
	}
	o1 := clItems(t, turn1)
	if len(o1.Approvals) != 1 || o1.Approvals[0].Name != "delete_forecast" {
		t.Fatalf("turn 1 output %v, want one approval request for delete_forecast", o1.Kinds)
	}
	req := o1.Approvals[0]
	first.stop()
	if entries, _ := os.ReadDir(filepath.Dir(file)); len(entries) != 1 {
		t.Errorf("state directory holds %d files, want only the state file (no temporary files left)", len(entries))
	}

	second := startStateful(t, emulator.Config{StateFile: file})
	if !strings.Contains(second.logs.String(), "loaded the emulator state file") {
		t.Errorf("no load line in the log:\n%s", second.logs)
	}
	if n := d.State(t).Calls["delete_forecast"]; n != 0 {
		t.Fatalf("delete_forecast ran %d times before the approval", n)
	}
	turn2, err := second.Client.Responses.New(t.Context(), responses.ResponseNewParams{
		Model: faultModel, PreviousResponseID: openai.String(turn1.ID), Tools: tools,
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{clApprove(req.ID)}},
	})
	if err != nil {
		t.Fatalf("approval after the restart: %v", err)
	}
	o2 := clItems(t, turn2)
	if !slices.Equal(o2.Kinds, []string{"mcp_call", "message"}) || o2.Calls[0].ApprovalRequestID != req.ID ||
		!strings.Contains(o2.Calls[0].Output, "Deleted the forecast for Oslo") {
		t.Fatalf("approval after the restart: output %v %+v, want the approved call (the tool list still in context) and an answer", o2.Kinds, o2.Calls)
	}
	st := d.State(t)
	if _, ok := st.Forecasts["Oslo"]; ok || st.Calls["delete_forecast"] != 1 {
		t.Errorf("demo state after the approval: Oslo there %v, delete_forecast called %d times; want deleted, once", ok, st.Calls["delete_forecast"])
	}

	// Another restart: the conversation goes on from the approved turn, and
	// both responses can be fetched.
	second.stop()
	third := startStateful(t, emulator.Config{StateFile: file})
	turn3, err := third.Client.Responses.New(t.Context(), responses.ResponseNewParams{
		Model: faultModel, PreviousResponseID: openai.String(turn2.ID), Tools: tools,
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("thanks")},
	})
	if err != nil {
		t.Fatalf("a message after the second restart: %v", err)
	}
	if o3 := clItems(t, turn3); !slices.Equal(o3.Kinds, []string{"message"}) {
		t.Errorf("turn 3 output %v, want only a message (the tools are still listed in context)", o3.Kinds)
	}
	for _, id := range []string{turn1.ID, turn2.ID, turn3.ID} {
		if got, err := third.Client.Responses.Get(t.Context(), id, responses.ResponseGetParams{}); err != nil || got.ID != id {
			t.Errorf("GET %s after the restart: %v", id, err)
		}
	}
	if n := d.State(t).Calls["delete_forecast"]; n != 1 {
		t.Errorf("delete_forecast ran %d times in all, want 1", n)
	}
}

// TestState_KeepsTheNewestResponses: the state file keeps StateKeep
// responses; the older ones are gone after a restart.
func TestState_KeepsTheNewestResponses(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "state.json")
	first := startStateful(t, emulator.Config{StateFile: file, StateKeep: 2})
	var ids []string
	for _, text := range []string{"one", "two", "three"} {
		r, err := first.Client.Responses.New(t.Context(), sdkParams(text))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	first.stop()
	var f struct {
		Version   int
		Responses []struct{ ID string }
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	if f.Version != 1 || len(f.Responses) != 2 || f.Responses[0].ID != ids[1] || f.Responses[1].ID != ids[2] {
		t.Errorf("state file: version %d, responses %+v; want version 1 with %v", f.Version, f.Responses, ids[1:])
	}

	second := startStateful(t, emulator.Config{StateFile: file, StateKeep: 2})
	for i, id := range ids {
		code, _ := getStored(t, second.emu, id)
		if want := map[bool]int{true: 404, false: 200}[i == 0]; code != want {
			t.Errorf("GET %s (response %d) after the restart: %d, want %d", id, i+1, code, want)
		}
	}
}

// TestState_DamagedFileIsIgnoredWithAWarning: a state file that is not valid
// JSON, or has another version, does not stop the emulator: it says so in
// the log, starts empty, and replaces the file on the next stored response.
// A state file that cannot be read at all is an error.
func TestState_DamagedFileIsIgnoredWithAWarning(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, content, logPart string }{
		{"not JSON", `{"version": 1, "responses": [`, "it is not valid JSON"},
		{"unknown version", `{"version": 99, "responses": [{"id": "resp_old", "response": {}}]}`, "its version is 99, this emulator reads version 1"},
		{"response without a body", `{"version": 1, "responses": [{"id": "resp_old", "response": "{"}]}`, "no valid body"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			file := filepath.Join(t.TempDir(), "state.json")
			if err := os.WriteFile(file, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			e := startStateful(t, emulator.Config{StateFile: file})
			logs := e.logs.String()
			if !strings.Contains(logs, "level=WARN") || !strings.Contains(logs, "ignoring the emulator state file") ||
				!strings.Contains(logs, tc.logPart) || !strings.Contains(logs, file) {
				t.Errorf("log does not explain the ignored file (want %q and the path):\n%s", tc.logPart, logs)
			}
			if code, _ := getStored(t, e.emu, "resp_old"); code != http.StatusNotFound {
				t.Errorf("GET resp_old: %d, want 404", code)
			}
			r, err := e.Client.Responses.New(t.Context(), sdkParams("hello"))
			if err != nil {
				t.Fatal(err)
			}
			data, _ := os.ReadFile(file)
			var f struct{ Version int }
			if json.Unmarshal(data, &f) != nil || f.Version != 1 || !strings.Contains(string(data), r.ID) {
				t.Errorf("state file after a stored response: %.200s; want version 1 with %s", data, r.ID)
			}
		})
	}

	t.Run("unreadable", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir() // a directory is no state file
		_, err := emulator.New(emulator.Config{StateFile: dir})
		if err == nil || !strings.Contains(err.Error(), "read the emulator state file") {
			t.Errorf("New with a directory as state file: %v, want a read error", err)
		}
	})
}

// TestState_WriteFailureIsLoggedNotFatal: when the state file cannot be
// written, responses still work and the log says they will not survive a
// restart.
func TestState_WriteFailureIsLoggedNotFatal(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	e := startStateful(t, emulator.Config{StateFile: filepath.Join(dir, "state.json")})
	// After the start its directory becomes a file: no state file can be
	// written there.
	if err := os.WriteFile(dir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := e.Client.Responses.New(t.Context(), sdkParams("hello"))
	if err != nil {
		t.Fatal(err)
	}
	if code, _ := getStored(t, e.emu, r.ID); code != 200 {
		t.Errorf("GET %s: %d", r.ID, code)
	}
	if logs := e.logs.String(); !strings.Contains(logs, "could not write the emulator state file") {
		t.Errorf("no write warning in the log:\n%s", logs)
	}
}
