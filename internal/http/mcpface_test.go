package http_test

import (
	"context"
	"crypto/rand"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/demomcp"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/mcpclient"
	"github.com/toolgate/toolgate/internal/netguard"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/policy/policysvc"
)

// openGate lets every token and call through: these tests are about the
// route, not the gate (internal/gateway tests the face with a real one).
type openGate struct{}

func (openGate) Authorize(context.Context, gateway.Claims) error { return nil }
func (openGate) Listed(_ context.Context, _ gateway.Claims, t []policy.DiscoveredTool) ([]policy.DiscoveredTool, error) {
	return t, nil
}
func (openGate) Admit(context.Context, gateway.Call) (gateway.Verdict, error) {
	return gateway.Verdict{CallID: "c", Run: true}, nil
}
func (openGate) Finish(context.Context, string, gateway.Result) error { return nil }
func (openGate) Await(context.Context, string) (gateway.Result, error) {
	return gateway.Result{}, nil
}

type oneServer struct{ srv policy.Server }

func (o oneServer) Server(_ context.Context, label string) (policy.Server, error) {
	if label != o.srv.Label {
		return policy.Server{}, apperr.NotFoundf("server_not_found", "no server %q", label)
	}
	return o.srv, nil
}

const listTools = `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`

var mcpHeaders = map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}

func TestMCPFace_OffAnswers404SayingSo(t *testing.T) {
	e := newAPI(t)
	res, apiErr := e.raw("POST", "/mcp/demo", listTools, mcpHeaders)
	if res.status != 404 || apiErr.Error.Code != "mcp_face_off" || !strings.Contains(apiErr.Error.Message, "MCP_ROUTE") {
		t.Fatalf("%d %s", res.status, res.body)
	}
}

func TestMCPFace_OnlyTheCapabilityTokenAuthorizes(t *testing.T) {
	demo := demomcp.New(demomcp.Options{Token: "demo-secret"})
	demoSrv := httptest.NewServer(demo.Handler())
	t.Cleanup(demoSrv.Close)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	tokens := gateway.NewTokens(key)
	guard, err := netguard.New(netguard.Config{AllowLoopback: true})
	if err != nil {
		t.Fatal(err)
	}
	caller := &mcpclient.Caller{Guard: guard}
	t.Cleanup(caller.Close)
	face := gateway.NewFace(gateway.FaceOptions{Tokens: tokens, Gate: openGate{}, Upstream: caller,
		Servers: oneServer{policy.Server{Label: "demo", URL: demoSrv.URL + "/mcp", Headers: map[string]string{"Authorization": "Bearer demo-secret"}, Enabled: true}}})
	e := newAPIWith(t, envOptions{mcpFace: func(*policysvc.Service) http.Handler { return face }})
	capTok := tokens.Mint(gateway.Claims{ConversationID: "c", TurnID: "t", ServerLabel: "demo", ExpiresAt: time.Now().Add(time.Hour)})
	with := func(extra map[string]string) map[string]string {
		h := map[string]string{}
		for k, v := range mcpHeaders {
			h[k] = v
		}
		for k, v := range extra {
			h[k] = v
		}
		return h
	}

	// The admin's API token (e.raw sends it) is not a capability token.
	if res, apiErr := e.raw("POST", "/mcp/demo", listTools, mcpHeaders); res.status != 401 || apiErr.Error.Code != "token_invalid" {
		t.Fatalf("API token: %d %s", res.status, res.body)
	}
	// Nor is a signed-in browser's session cookie.
	_, member := e.newUser(auth.Member)
	_, cookie := e.login(member.Email, memberPassword, nil)
	if cookie == nil {
		t.Fatal("no session cookie")
	}
	anon := e.anon()
	if res, apiErr := anon.raw("POST", "/mcp/demo", listTools, with(map[string]string{"Cookie": cookie.Name + "=" + cookie.Value})); res.status != 401 || apiErr.Error.Code != "token_missing" {
		t.Fatalf("session cookie: %d %s", res.status, res.body)
	}
	// The capability token works from anywhere: the provider sends no
	// Origin of ours and reaches Toolgate under PUBLIC_URL's name.
	res, _ := anon.raw("POST", "/mcp/demo", listTools, with(map[string]string{"Authorization": "Bearer " + capTok,
		"Origin": "https://provider.example", "Sec-Fetch-Site": "cross-site", "Host": "toolgate.example.com"}))
	if res.status != 200 || !strings.Contains(string(res.body), "get_forecast") {
		t.Fatalf("capability token: %d %s", res.status, res.body)
	}
	// A body over MAX_BODY_BYTES is refused before it is read whole.
	big := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":"` + strings.Repeat("a", 70<<10) + `"}}}`
	if res, _ := anon.raw("POST", "/mcp/demo", big, with(map[string]string{"Authorization": "Bearer " + capTok})); res.status != http.StatusRequestEntityTooLarge {
		t.Fatalf("big body: %d %s", res.status, res.body)
	}
	// The stateless face has no GET stream (after the token check).
	if res, _ := anon.raw("GET", "/mcp/demo", "", map[string]string{"Authorization": "Bearer " + capTok, "Accept": "text/event-stream"}); res.status != 405 {
		t.Fatalf("GET: %d %s", res.status, res.body)
	}
	if res, _ := anon.raw("GET", "/mcp/demo", "", map[string]string{"Accept": "text/event-stream"}); res.status != 401 {
		t.Fatalf("GET without a token: %d %s", res.status, res.body)
	}
	if calls := demo.Calls(); len(calls) != 0 {
		t.Fatalf("calls reached the demo server: %+v", calls)
	}
}

func TestMCPFace_ForwardsWithTheRegisteredServersStoredHeaders(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	demo := demomcp.New(demomcp.Options{Token: "stored-secret-4411"})
	demoSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization")+" "+r.URL.RawQuery)
		mu.Unlock()
		demo.Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(demoSrv.Close)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	tokens := gateway.NewTokens(key)
	guard, err := netguard.New(netguard.Config{AllowLoopback: true})
	if err != nil {
		t.Fatal(err)
	}
	caller := &mcpclient.Caller{Guard: guard}
	t.Cleanup(caller.Close)
	e := newAPIWith(t, envOptions{mcpFace: func(svc *policysvc.Service) http.Handler {
		// policy.Service is the face's registry, as cmd/api wires it.
		return gateway.NewFace(gateway.FaceOptions{Tokens: tokens, Gate: openGate{}, Servers: svc.Servers, Upstream: caller})
	}})
	e.must(201, "POST", "/api/mcp/servers", map[string]any{"label": "weather", "url": demoSrv.URL + "/mcp?key=q-secret-5",
		"headers": map[string]string{"Authorization": "Bearer stored-secret-4411"}}, nil)
	mu.Lock()
	seen = nil
	mu.Unlock()
	capTok := tokens.Mint(gateway.Claims{ConversationID: "c", TurnID: "t", ServerLabel: "weather", ExpiresAt: time.Now().Add(time.Hour)})
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_forecast","arguments":{"city":"Berlin"}}}`
	h := map[string]string{"Authorization": "Bearer " + capTok}
	for k, v := range mcpHeaders {
		h[k] = v
	}
	res, _ := e.anon().raw("POST", "/mcp/weather", call, h)
	if res.status != 200 || !strings.Contains(string(res.body), "Forecast for Berlin") {
		t.Fatalf("%d %s", res.status, res.body)
	}
	for _, secret := range []string{"stored-secret-4411", "q-secret-5", demoSrv.URL} {
		if strings.Contains(string(res.body), secret) {
			t.Errorf("the face's answer shows %q", secret)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) == 0 {
		t.Fatal("nothing reached the server")
	}
	for _, s := range seen {
		if s != "Bearer stored-secret-4411 key=q-secret-5" {
			t.Fatalf("the server got %q, want the stored header and URL", s)
		}
	}
	if calls := demo.Calls(); len(calls) != 1 {
		t.Fatalf("calls: %+v", calls)
	}
}
