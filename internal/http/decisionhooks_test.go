package http_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/hooks"
	"github.com/toolgate/toolgate/internal/netguard"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/policy/policysvc"
	"github.com/toolgate/toolgate/internal/postgres"
)

type decisionHookJSON struct {
	Scope     string  `json:"scope"`
	ServerID  *string `json:"server_id"`
	URL       string  `json:"url"`
	TimeoutMS int     `json:"timeout_ms"`
	Enabled   bool    `json:"enabled"`
	Secret    *string `json:"secret"`
	UpdatedBy string  `json:"updated_by"`
}

// decisionReceiver is a local decision hook: it verifies every request with
// the secret it was given (401 when it does not verify) and answers with
// reply; it keeps what it received.
type decisionReceiver struct {
	*httptest.Server
	mu     sync.Mutex
	secret string
	reply  func(w http.ResponseWriter, req hooks.Request)
	got    []hooks.Request
}

func newDecisionReceiver(t *testing.T, reply string) *decisionReceiver {
	t.Helper()
	h := &decisionReceiver{}
	h.setReply(reply)
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		secret, reply := h.secret, h.reply
		h.mu.Unlock()
		if err := hooks.Verify(secret, r.Header.Get(hooks.SignatureHeader), body, time.Now(), 5*time.Minute); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		var req hooks.Request
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		h.mu.Lock()
		h.got = append(h.got, req)
		h.mu.Unlock()
		reply(w, req)
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *decisionReceiver) setSecret(s string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.secret = s
}

// setReply makes the receiver answer 200 with body.
func (h *decisionReceiver) setReply(body string) {
	h.setReplyFunc(func(w http.ResponseWriter, _ hooks.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, body)
	})
}

func (h *decisionReceiver) setReplyFunc(f func(http.ResponseWriter, hooks.Request)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.reply = f
}

func (h *decisionReceiver) requests() []hooks.Request {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]hooks.Request(nil), h.got...)
}

var hookPaths = []string{"/api/mcp/servers/weather/decision-hook", "/api/decision-hook"}

func TestDecisionHooks_AdminsOnlyAndSignedIn(t *testing.T) {
	e := newAPI(t)
	e.createDemo("weather")
	member, _ := e.newUser(auth.Member)
	body := map[string]any{"url": "https://hooks.example.com/x"}
	for _, path := range hookPaths {
		for _, c := range []struct {
			method, path string
			body         any
		}{{"GET", path, nil}, {"PUT", path, body}, {"DELETE", path, nil}, {"POST", path + "/test", nil}} {
			e.anon().must(401, c.method, c.path, c.body, nil)
			var got apiError
			member.must(403, c.method, c.path, c.body, &got)
			if got.Error.Code != "admin_only" {
				t.Errorf("%s %s as a member: %s", c.method, c.path, got.Error.Code)
			}
		}
		var got apiError
		e.must(404, "GET", path, nil, &got) // the refused PUTs saved nothing
		if got.Error.Code != "decision_hook_not_set" {
			t.Errorf("GET %s: %s", path, got.Error.Code)
		}
	}
	for _, c := range [][2]string{{"GET", ""}, {"PUT", ""}, {"DELETE", ""}, {"POST", "/test"}} {
		var b any
		if c[0] == "PUT" {
			b = body
		}
		var got apiError
		e.must(404, c[0], "/api/mcp/servers/nope/decision-hook"+c[1], b, &got)
		if got.Error.Code != "server_not_found" {
			t.Errorf("%s on an unknown server: %s", c[0], got.Error.Code)
		}
	}
}

func TestDecisionHooks_SecretShownOnceTestSignedAudited(t *testing.T) {
	e := newAPI(t)
	e.createDemo("weather")
	rcv := newDecisionReceiver(t, `{"decision":"deny","reason":"not today"}`)
	for _, path := range hookPaths {
		var h decisionHookJSON
		e.must(200, "PUT", path, map[string]any{"url": rcv.URL + "/hook", "timeout_ms": 2000}, &h)
		if h.Secret == nil || !strings.HasPrefix(*h.Secret, hooks.SecretPrefix) || h.TimeoutMS != 2000 || !h.Enabled || h.UpdatedBy != "admin@toolgate.test" {
			t.Fatalf("PUT %s = %+v", path, h)
		}
		secret := *h.Secret
		rcv.setSecret(secret)
		var got decisionHookJSON
		e.must(200, "GET", path, nil, &got)
		if got.Secret != nil || got.URL != rcv.URL+"/hook" {
			t.Fatalf("GET %s shows %+v (the secret is shown once)", path, got)
		}
		wantScope := map[bool]string{true: "server", false: "workspace"}[strings.Contains(path, "servers")]
		if got.Scope != wantScope || (got.ServerID != nil) != (wantScope == "server") {
			t.Errorf("GET %s scope = %s %v", path, got.Scope, got.ServerID)
		}
		// Changing the URL or timeout keeps the secret; enabled is kept.
		e.must(200, "PUT", path, map[string]any{"url": rcv.URL + "/hook", "enabled": false}, &got)
		if got.Secret != nil || got.Enabled || got.TimeoutMS != 2000 {
			t.Fatalf("second PUT = %+v", got)
		}
		var a hooks.Answer
		e.must(200, "POST", path+"/test", nil, &a)
		if a.Decision != hooks.Deny || a.Reason != "not today" || a.Status != 200 || a.Error != "" {
			t.Fatalf("test of a hook signed with the shown secret = %+v", a)
		}
		reqs := rcv.requests()
		last := reqs[len(reqs)-1]
		if !last.Test || last.User.Email != "admin@toolgate.test" || last.Hook != wantScope {
			t.Errorf("the sample request = %+v", last)
		}
		// A rotated secret: the receiver still holding the old one refuses.
		e.must(200, "PUT", path, map[string]any{"url": rcv.URL + "/hook", "rotate_secret": true}, &got)
		if got.Secret == nil || *got.Secret == secret {
			t.Fatalf("rotate_secret gave %v", got.Secret)
		}
		e.must(200, "POST", path+"/test", nil, &a)
		if a.Decision != hooks.Ask || a.Status != 401 || !strings.Contains(a.Error, "401") {
			t.Fatalf("test after rotating = %+v", a)
		}
		e.must(204, "DELETE", path, nil, nil)
		e.must(404, "GET", path, nil, nil)
		e.must(404, "DELETE", path, nil, nil)
	}
	var sets, deletes int
	for _, a := range e.audit() {
		if strings.Contains(string(a.Before)+string(a.After), hooks.SecretPrefix) {
			t.Errorf("audit entry %s holds a secret: %s %s", a.Action, a.Before, a.After)
		}
		switch a.Action {
		case "decision_hook.set":
			sets++
		case "decision_hook.delete":
			deletes++
		}
	}
	if sets != 6 || deletes != 2 {
		t.Errorf("audit: %d decision_hook.set, %d decision_hook.delete; want 6 and 2", sets, deletes)
	}
}

func TestDecisionHooks_BadInputIs400AndSavesNothing(t *testing.T) {
	e := newAPI(t)
	e.createDemo("weather")
	for _, tc := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"url": ""}, "url"},
		{map[string]any{"url": "ftp://hooks.example.com/x"}, "url"},
		{map[string]any{"url": "https://user:pw@hooks.example.com/x"}, "url"},
		{map[string]any{"url": "https://hooks.example.com/x", "timeout_ms": 50}, "timeout_ms"},
		{map[string]any{"url": "https://hooks.example.com/x", "timeout_ms": 10001}, "timeout_ms"},
	} {
		for _, path := range hookPaths {
			var got apiError
			e.must(400, "PUT", path, tc.body, &got)
			if got.Error.Code != "invalid_decision_hook" || got.Error.Fields[tc.field] == "" {
				t.Errorf("PUT %s %v: %+v", path, tc.body, got.Error)
			}
		}
	}
	var got apiError
	e.must(400, "PUT", hookPaths[0], map[string]any{"url": "https://hooks.example.com/x", "secret": "mine"}, &got)
	if got.Error.Code != "unknown_field" {
		t.Errorf("a client-chosen secret: %s", got.Error.Code)
	}
	for _, path := range hookPaths {
		e.must(404, "GET", path, nil, nil)
	}
}

// TestDecisionHooks_URLPolicy: with the MCP URL policy in force (as in the
// binary), a hook must be https, or http to a host on the operator's own
// network that the policy allows; addresses the policy refuses are refused
// for https too. The service checks roles itself, whatever the route.
func TestDecisionHooks_URLPolicy(t *testing.T) {
	e := newAPI(t)
	e.createDemo("weather")
	g, err := netguard.New(netguard.Config{AllowedHosts: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	svc := policysvc.New(postgres.NewStore(e.pool), nil, e.log, policy.Options{URLs: g})
	ctx := auth.WithUser(context.Background(), e.admin)
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{"http://127.0.0.1:9/hook", true},         // loopback listed in MCP_ALLOWED_HOSTS
		{"https://93.184.216.34/hook", true},      // public over https
		{"http://93.184.216.34/hook", false},      // public over plain http
		{"https://127.0.0.2/hook", false},         // loopback not listed
		{"https://10.0.0.1/hook", false},          // private, not allowed
		{"https://169.254.169.254/latest", false}, // metadata, never
	} {
		_, _, err := svc.Hooks.SetDecisionHook(ctx, "weather", policy.DecisionHookInput{URL: tc.url})
		if tc.ok && err != nil {
			t.Errorf("%s refused: %v", tc.url, err)
		}
		if !tc.ok && !strings.HasPrefix(fmt.Sprint(err), "url_not_allowed: ") {
			t.Errorf("%s: err = %v, want url_not_allowed", tc.url, err)
		}
	}
	_, member := e.newUser(auth.Member)
	if _, _, err := svc.Hooks.SetDecisionHook(auth.WithUser(context.Background(), member), "", policy.DecisionHookInput{URL: "https://93.184.216.34/"}); err == nil {
		t.Error("a member set the workspace hook through the service")
	}
}

// TestDecisionHooks_SecretFromAnotherKeyAsksUntilSavedAgain: a secret
// sealed under another SECRETS_KEY does not open; the hook still shows, is
// not asked (its test says why), and saving it again makes a new secret.
func TestDecisionHooks_SecretFromAnotherKeyAsksUntilSavedAgain(t *testing.T) {
	e := newAPI(t)
	rcv := newDecisionReceiver(t, `{"decision":"approve"}`)
	e.must(200, "PUT", "/api/decision-hook", map[string]any{"url": rcv.URL}, nil)
	if _, err := e.pool.Exec(context.Background(), `UPDATE decision_hooks SET secret_enc = $1`, []byte(strings.Repeat("x", 40))); err != nil {
		t.Fatal(err)
	}
	e.must(200, "GET", "/api/decision-hook", nil, nil)
	var a hooks.Answer
	e.must(200, "POST", "/api/decision-hook/test", nil, &a)
	if a.Decision != hooks.Ask || !strings.Contains(a.Error, "rotate_secret") || len(rcv.requests()) != 0 {
		t.Fatalf("test with an unreadable secret = %+v (%d sent)", a, len(rcv.requests()))
	}
	var h decisionHookJSON
	e.must(200, "PUT", "/api/decision-hook", map[string]any{"url": rcv.URL}, &h)
	if h.Secret == nil {
		t.Fatal("saving a hook whose secret no longer opens did not make a new one")
	}
	rcv.setSecret(*h.Secret)
	e.must(200, "POST", "/api/decision-hook/test", nil, &a)
	if a.Decision != hooks.Approve {
		t.Fatalf("test after saving again = %+v", a)
	}
}
