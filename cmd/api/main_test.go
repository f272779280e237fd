package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/client"
	"github.com/toolgate/toolgate/internal/demomcp"
	"github.com/toolgate/toolgate/internal/emulator"
	"github.com/toolgate/toolgate/internal/testdb"
)

// syncBuffer collects the server's log safely while it runs.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// start runs the whole program as main would and waits until it is healthy.
// stop sends the equivalent of SIGTERM and waits for a clean exit.
func start(t testing.TB, env map[string]string) (base string, logs *syncBuffer, stop func()) {
	t.Helper()
	if env["SECRETS_KEY"] == "" && env["SECRETS_KEY_FILE"] == "" {
		env["SECRETS_KEY_FILE"] = filepath.Join(t.TempDir(), "secrets.key") // not in the source tree
	}
	if env["TOOLGATE_ADMIN_EMAIL"] == "" && env["AUTH_MODE"] == "" {
		env["TOOLGATE_ADMIN_EMAIL"], env["TOOLGATE_ADMIN_PASSWORD"] = testAdminEmail, testAdminPassword
	}
	for _, k := range []string{"EMULATOR_ADDR", "DEMO_MCP_ADDR"} {
		if env[k] == "" {
			env[k] = "127.0.0.1:0" // offline helpers on free ports
		}
	}
	// The port freeAddr found free can be taken again before the server
	// listens on it (by its own emulator, listening on any free port):
	// then it starts again on another.
	for attempt := 1; ; attempt++ {
		addr := freeAddr(t)
		env["LISTEN_ADDR"] = addr
		var done <-chan struct{}
		var runErr func() error
		var forget func()
		logs, done, runErr, stop, forget = launchRun(t, env)
		base = "http://" + addr
		if up(t, base, logs, done, runErr, attempt < 3) {
			break
		}
		forget()
	}
	if env["TOOLGATE_ADMIN_EMAIL"] == testAdminEmail {
		signIn(t, base)
	}
	return base, logs, stop
}

// up waits until Toolgate at base answers /healthz (itself: its answers
// carry a request id) and says true; false when it exited because its
// address was taken and retry is allowed.
func up(t testing.TB, base string, logs *syncBuffer, done <-chan struct{}, runErr func() error, retry bool) bool {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		res, err := http.Get(base + "/healthz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == 200 && res.Header.Get("X-Request-Id") != "" {
				return true
			}
		}
		select {
		case <-done:
			if err := runErr(); retry && err != nil && strings.Contains(err.Error(), "address already in use") {
				return false
			}
			t.Fatalf("run exited early: %v\nlogs:\n%s", runErr(), logs)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("server not healthy in time; logs:\n%s", logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// launch runs the whole program with env in the background, as main would,
// until t ends or stop is called. done is closed when run returns, and
// runErr then says what it returned; stop sends the equivalent of SIGTERM
// and waits for a clean exit.
func launch(t testing.TB, env map[string]string) (logs *syncBuffer, done <-chan struct{}, runErr func() error, stop func()) {
	logs, done, runErr, stop, _ = launchRun(t, env)
	return logs, done, runErr, stop
}

// launchRun is launch that also returns forget: a run that ended on its
// own is then not an error at cleanup.
func launchRun(t testing.TB, env map[string]string) (logs *syncBuffer, done <-chan struct{}, runErr func() error, stop, forget func()) {
	ctx, cancel := context.WithCancel(context.Background())
	logs = &syncBuffer{}
	exited := make(chan struct{})
	var err error
	go func() {
		defer close(exited)
		err = run(ctx, nil, func(k string) string { return env[k] }, logs)
	}()
	runErr = func() error { <-exited; return err }
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case <-exited:
			if err != nil {
				t.Errorf("run returned %v after shutdown", err)
			}
		case <-time.After(15 * time.Second):
			t.Errorf("run did not stop after cancel")
		}
	}
	t.Cleanup(stop)
	return logs, exited, runErr, stop, func() { stopped = true; cancel() }
}

func freeAddr(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

const testAdminEmail, testAdminPassword = "admin@toolgate.test", "correct horse battery"

// sessions holds the session cookie of each started server (by base URL),
// sent by do and sse.
var sessions sync.Map

// signIn signs the test admin in to the server at base.
func signIn(t testing.TB, base string) {
	t.Helper()
	res, err := http.Post(base+"/api/auth/login", "application/json",
		strings.NewReader(fmt.Sprintf(`{"email":%q,"password":%q}`, testAdminEmail, testAdminPassword)))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	for _, c := range res.Cookies() {
		if c.Name == "toolgate_session" && res.StatusCode == 200 {
			sessions.Store(base, c)
			return
		}
	}
	b, _ := io.ReadAll(res.Body)
	t.Fatalf("sign in: %d %s", res.StatusCode, b)
}

func withSession(req *http.Request) {
	base := req.URL.Scheme + "://" + req.URL.Host
	if c, ok := sessions.Load(base); ok {
		req.AddCookie(c.(*http.Cookie))
	}
}

func do(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	withSession(req)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// TestRun_PoliciesSurviveRestart is the "done when": register the
// demo MCP server, see its tools, set policies, restart, read them back.
func TestRun_PoliciesSurviveRestart(t *testing.T) {
	demo := httptest.NewServer(demomcp.New(demomcp.Options{}).Handler())
	defer demo.Close()
	env := map[string]string{"DATABASE_URL": testdb.MissingURL(t), "LOG_LEVEL": "debug",
		"DATABASE_CREATE": "true"}

	base, logs, stop := start(t, env)
	if !strings.Contains(logs.String(), "created database") {
		t.Errorf("the missing database was not reported as created; logs:\n%s", logs)
	}
	if st, body := do(t, "POST", base+"/api/mcp/servers", fmt.Sprintf(`{"label":"weather","url":%q,"headers":{"X-Api-Key":"abcdefghijklmnop-secret"}}`, demo.URL+"/mcp")); st != 201 {
		t.Fatalf("create: %d %s", st, body)
	}
	if st, body := do(t, "PUT", base+"/api/mcp/servers/weather/tools/delete_forecast/approval-policy", `{"policy":"always"}`); st != 200 {
		t.Fatalf("set policy: %d %s", st, body)
	}
	stop()
	if strings.Contains(logs.String(), "abcdefghijklmnop-secret") {
		t.Errorf("a header secret reached the log")
	}

	base, _, _ = start(t, env)
	st, body := do(t, "GET", base+"/api/mcp/servers/weather/tools", "")
	if st != 200 {
		t.Fatalf("tools after restart: %d %s", st, body)
	}
	var out struct {
		Tools []struct {
			Name            string         `json:"name"`
			EffectivePolicy string         `json:"effective_policy"`
			PolicySource    string         `json:"policy_source"`
			Annotations     map[string]any `json:"annotations"`
		}
	}
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, tl := range out.Tools {
		if tl.Name == "delete_forecast" {
			found = true
			if tl.EffectivePolicy != "always" || tl.PolicySource != "tool" || tl.Annotations["destructiveHint"] != true {
				t.Errorf("delete_forecast after restart = %+v", tl)
			}
		}
	}
	if !found || len(out.Tools) != 6 {
		t.Errorf("tools after restart = %+v", out.Tools)
	}
}

func TestRun_MigrateSubcommand(t *testing.T) {
	env := map[string]string{"DATABASE_URL": testdb.MissingURL(t)}
	getenv := func(k string) string { return env[k] }
	runOut := func(args ...string) string {
		t.Helper()
		var out syncBuffer
		if err := run(context.Background(), args, getenv, &out); err != nil {
			t.Fatalf("toolgate %v: %v\n%s", args, err, out.String())
		}
		return out.String()
	}
	if out := runOut("migrate", "status"); !strings.Contains(out, "00001_policy_service.sql") || !strings.Contains(out, "pending") {
		t.Errorf("status before up:\n%s", out)
	}
	if out := runOut("migrate", "up"); !strings.Contains(out, "applied ") || !strings.Contains(out, "00003_accounts.sql") {
		t.Errorf("up:\n%s", out)
	}
	if out := runOut("migrate", "status"); !strings.Contains(out, "applied 20") {
		t.Errorf("status after up:\n%s", out)
	}
	if out := runOut("migrate", "down"); !strings.Contains(out, "rolled back") {
		t.Errorf("down:\n%s", out)
	}
	if out := runOut("migrate", "status"); !strings.Contains(out, "pending") {
		t.Errorf("status after down:\n%s", out)
	}
	if err := run(context.Background(), []string{"migrate", "sideways"}, getenv, io.Discard); err == nil {
		t.Error("migrate sideways succeeded")
	}
}

func TestRun_BadConfigSaysWhatToFix(t *testing.T) {
	env := map[string]string{"LISTEN_ADDR": "8080", "LOG_LEVEL": "loud", "DISCOVERY_TIMEOUT": "soon"}
	err := run(context.Background(), nil, func(k string) string { return env[k] }, io.Discard)
	if err == nil {
		t.Fatal("run accepted a bad configuration")
	}
	for _, want := range []string{"LISTEN_ADDR", "LOG_LEVEL", "DISCOVERY_TIMEOUT"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
}

// TestRun_OfflineChatWithApprovals is the chat issue's "done when": with no
// API key, the run command talks to the built-in emulator with the demo MCP
// server registered, and a person can chat, get asked, approve or deny, and
// see the tool's result, all over plain HTTP.
func TestRun_OfflineChatWithApprovals(t *testing.T) {
	env := map[string]string{"DATABASE_URL": testdb.MissingURL(t)}
	base, logs, _ := start(t, env)
	if !strings.Contains(logs.String(), "OFFLINE") {
		t.Errorf("the log does not say it is offline:\n%s", logs)
	}
	if st, body := do(t, "GET", base+"/api/info", ""); st != 200 || !strings.Contains(body, `"offline":true`) {
		t.Errorf("info: %d %s", st, body)
	}
	if st, body := do(t, "PUT", base+"/api/mcp/servers/demo/tools/delete_forecast/approval-policy", `{"policy":"always"}`); st != 200 {
		t.Fatalf("the demo server is not registered: %d %s", st, body)
	}
	// The offline demo is Toolgate's own code: its read-only hints are
	// accepted at start, so get_forecast runs without asking.
	if st, body := do(t, "GET", base+"/api/mcp/servers/demo", ""); st != 200 || !strings.Contains(body, `"read_only_hints":"trusted"`) {
		t.Errorf("the offline demo's read-only hints are not trusted at start: %d %s", st, body)
	}
	if st, body := do(t, "GET", base+"/api/mcp/servers/demo/tools", ""); st != 200 ||
		!strings.Contains(body, `"name":"get_forecast"`) || strings.Contains(body, "read_only_claimed") {
		t.Errorf("the offline demo's tools: %d %s; want no tool asking for a claimed hint", st, body)
	}

	_, events := sse(t, base+"/api/responses", `{"input":"delete_forecast {\"city\": \"Oslo\"}"}`)
	conv, approval := asked(t, events)
	if conv == "" || approval == "" || events[len(events)-1].name != "completed" {
		t.Fatalf("first turn: %v", events)
	}
	_, events = sse(t, base+"/api/responses/approval-response",
		fmt.Sprintf(`{"conversation_id":%q,"approval_request_id":%q,"approve":true}`, conv, approval))
	var output string
	for _, ev := range events {
		if ev.name == "item.done" && strings.Contains(ev.data, `"type":"mcp_call"`) {
			output = ev.data
		}
	}
	if !strings.Contains(output, "Oslo") || events[len(events)-1].name != "completed" {
		t.Fatalf("follow-up: %v", events)
	}

	// A denial: the tool does not run, and the model says why.
	_, events = sse(t, base+"/api/responses", fmt.Sprintf(`{"conversation_id":%q,"input":"delete_forecast {\"city\": \"Berlin\"}"}`, conv))
	for _, ev := range events {
		if ev.name == "approval.required" {
			approval = field(t, ev.data, "approval_request_id")
		}
	}
	_, events = sse(t, base+"/api/responses/approval-response",
		fmt.Sprintf(`{"conversation_id":%q,"approval_request_id":%q,"approve":false,"reason":"keep Berlin"}`, conv, approval))
	last := events[len(events)-2]
	if last.name != "item.done" || !strings.Contains(last.data, "keep Berlin") {
		t.Errorf("denial answer: %v", events)
	}
}

type event struct{ name, data string }

// sse posts body and reads the whole event stream.
func sse(t *testing.T, url, body string) (int, []event) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	withSession(req)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		t.Fatalf("POST %s: %d %s", url, res.StatusCode, raw)
	}
	return res.StatusCode, readEvents(bytes.NewReader(raw))
}

// readEvents reads an event stream with the API client's reader, up to
// its end or a read error.
func readEvents(r io.Reader) []event {
	var out []event
	for ev, err := range client.ReadEvents(r) {
		if err != nil {
			break
		}
		out = append(out, event{name: ev.Name, data: string(ev.Data)})
	}
	return out
}

// asked returns the conversation a stream announced and the approval
// request it made ("" for either it lacks).
func asked(t *testing.T, events []event) (conv, approval string) {
	t.Helper()
	for _, ev := range events {
		switch ev.name {
		case "conversation":
			conv = field(t, ev.data, "conversation_id")
		case "approval.required":
			approval = field(t, ev.data, "approval_request_id")
		}
	}
	return conv, approval
}

func field(t *testing.T, data, key string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(data), &m); err != nil {
		t.Fatal(err)
	}
	s, _ := m[key].(string)
	return s
}

// TestRun_WithAKeyTalksToTheConfiguredProvider: with OPENAI_API_KEY set,
// nothing offline starts, the key is sent as the bearer token, and
// OPENAI_BASE_URL and OPENAI_MODEL choose the endpoint and model.
func TestRun_WithAKeyTalksToTheConfiguredProvider(t *testing.T) {
	emu, err := emulator.New(emulator.Config{APIKey: "sk-test-0123456789"})
	if err != nil {
		t.Fatal(err)
	}
	var models []string
	var mu sync.Mutex
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body struct{ Model string }
		_ = json.Unmarshal(raw, &body)
		mu.Lock()
		models = append(models, body.Model)
		mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(raw))
		emu.Handler().ServeHTTP(w, r)
	}))
	defer provider.Close()
	demo := httptest.NewServer(demomcp.New(demomcp.Options{}).Handler())
	defer demo.Close()
	env := map[string]string{"DATABASE_URL": testdb.MissingURL(t), "OPENAI_API_KEY": "sk-test-0123456789",
		"OPENAI_BASE_URL": provider.URL + "/v1/", "OPENAI_MODEL": "gpt-4o-mini",
		"SECRETS_KEY": testSecretsKey, "MCP_ALLOWED_HOSTS": "127.0.0.1"} // the demo MCP server is on loopback
	base, logs, _ := start(t, env)
	if st, body := do(t, "GET", base+"/api/info", ""); !strings.Contains(body, `"offline":false`) || !strings.Contains(body, "gpt-4o-mini") {
		t.Errorf("info: %d %s", st, body)
	}
	if st, _ := do(t, "GET", base+"/api/mcp/servers/demo", ""); st != 404 {
		t.Error("the offline demo server was registered although a key is set")
	}
	if st, body := do(t, "POST", base+"/api/mcp/servers", fmt.Sprintf(`{"label":"weather","url":%q}`, demo.URL+"/mcp")); st != 201 {
		t.Fatalf("create: %d %s", st, body)
	}
	_, events := sse(t, base+"/api/responses", `{"input":"get_forecast {\"city\": \"Lisbon\"}"}`)
	if events[len(events)-1].name != "completed" {
		t.Fatalf("turn with a key: %v", events)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(models) != 1 || models[0] != "gpt-4o-mini" {
		t.Errorf("models sent %v", models)
	}
	if strings.Contains(logs.String(), "0123456789") {
		t.Error("the API key reached the log")
	}
}
