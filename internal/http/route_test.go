package http_test

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolgate/toolgate/internal/demomcp"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/postgres"
	"github.com/toolgate/toolgate/internal/responses"
)

// faceStandIn stands in for Toolgate's MCP face in the route tests (the
// face itself is internal/gateway's, tested there): it checks the
// capability token of every request against the server in its path and
// forwards the request to the real server with the stored URL and headers,
// keeping a log of what arrived. What these tests check is what Toolgate
// sends the provider, and that the provider reaches servers only this way.
type faceStandIn struct {
	t      testing.TB
	srv    *httptest.Server
	tokens *gateway.Tokens

	mu      sync.Mutex
	pool    *pgxpool.Pool
	calls   []faceCall
	refused []string
}

type faceCall struct {
	server, method, tool string
	claims               gateway.Claims
}

func newFaceStandIn(t testing.TB) *faceStandIn {
	t.Helper()
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	f := &faceStandIn{t: t, tokens: gateway.NewTokens(key)}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *faceStandIn) use(pool *pgxpool.Pool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pool = pool
}

func (f *faceStandIn) serve(w http.ResponseWriter, r *http.Request) {
	label, ok := strings.CutPrefix(r.URL.Path, "/mcp/")
	claims, err := f.tokens.Verify(gateway.BearerToken(r.Header.Get("Authorization")))
	if !ok || err != nil || claims.ServerLabel != label {
		f.mu.Lock()
		f.refused = append(f.refused, r.URL.Path)
		f.mu.Unlock()
		http.Error(w, "no valid capability token for this server", http.StatusUnauthorized)
		return
	}
	f.mu.Lock()
	pool := f.pool
	f.mu.Unlock()
	srv, err := postgres.NewStore(pool).Repo().Server(r.Context(), label, false)
	if err != nil {
		http.Error(w, "no such server", http.StatusNotFound)
		return
	}
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var rpc struct {
		Method string `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	_ = json.Unmarshal(body, &rpc)
	f.mu.Lock()
	f.calls = append(f.calls, faceCall{server: label, method: rpc.Method, tool: rpc.Params.Name, claims: claims})
	f.mu.Unlock()
	target, err := url.Parse(srv.URL)
	if err != nil {
		http.Error(w, "bad server URL", http.StatusBadGateway)
		return
	}
	proxy := &httputil.ReverseProxy{FlushInterval: -1, Rewrite: func(pr *httputil.ProxyRequest) {
		pr.Out.URL, pr.Out.Host = target, target.Host
		pr.Out.Header.Del("Authorization")
		for k, v := range srv.Headers {
			pr.Out.Header.Set(k, v)
		}
	}}
	proxy.ServeHTTP(w, r)
}

// toolCalls is the tools/call requests that passed the stand-in.
func (f *faceStandIn) toolCalls() []faceCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []faceCall
	for _, c := range f.calls {
		if c.method == "tools/call" {
			out = append(out, c)
		}
	}
	return out
}

// In gateway mode no request Toolgate sends the provider carries an MCP
// server's real URL or a stored header value: every tool entry names the
// face with a capability token for the request's conversation, turn and
// server, and the server (which only answers its stored token) sees every
// call arrive through the face, the approved one included.
func TestRoute_GatewaySendsTheProviderNoServerSecrets(t *testing.T) {
	face := newFaceStandIn(t)
	e := newAPIWith(t, envOptions{face: &responses.Face{BaseURL: face.srv.URL, Tokens: face.tokens, TTL: 2 * time.Minute}})
	face.use(e.pool)

	const (
		serverToken = "server-token-4c1d9e7a"
		tenant      = "tenant-secret-82b0"
		urlSecret   = "url-secret-5e1a77"
	)
	demo := demomcp.New(demomcp.Options{Token: serverToken})
	demoSrv := httptest.NewServer(demo.Handler())
	t.Cleanup(demoSrv.Close)
	realURL := demoSrv.URL + "/mcp?key=" + urlSecret
	e.must(201, "POST", "/api/mcp/servers", map[string]any{"label": "crm", "url": realURL, "description": "Forecasts",
		"headers": map[string]string{"Authorization": "Bearer " + serverToken, "X-Tenant": tenant}}, nil)
	e.trustHints("crm")
	e.setPolicy("crm", "get_forecast", "never")
	e.setPolicy("crm", "delete_forecast", "always")

	// A tool that runs unasked, then one that asks and runs once approved.
	s := e.send("", `get_forecast {"city": "Berlin"}`).ok(t)
	conv, firstTurn := s.conv(t), one[convEvent](t, s, "conversation").TurnID
	if !strings.Contains(lastMessage(t, s), "Light rain") {
		t.Fatalf("get_forecast did not run through the face: %q (events %v)", lastMessage(t, s), s.names())
	}
	s = e.send(conv, `delete_forecast {"city": "Oslo"}`).ok(t)
	ap := one[approval](t, s, "approval.required")
	if _, ok := demo.State().Forecasts["Oslo"]; !ok {
		t.Fatal("Oslo was deleted before anyone approved")
	}
	e.decide(conv, ap.ID, true, nil).ok(t)
	if _, ok := demo.State().Forecasts["Oslo"]; ok {
		t.Fatal("the approved delete_forecast did not run through the face")
	}

	// What the provider got: no real URL, no stored header value, in any
	// request (the follow-up with the approval included).
	raws := e.up.sentRaw()
	if len(raws) < 3 {
		t.Fatalf("%d requests reached the provider, want at least 3", len(raws))
	}
	u, _ := url.Parse(demoSrv.URL)
	for i, raw := range raws {
		for _, secret := range []string{u.Host, "127.0.0.1:" + u.Port(), urlSecret, serverToken, tenant, "X-Tenant"} {
			if bytes.Contains(raw, []byte(secret)) {
				t.Errorf("request %d to the provider carries %q:\n%s", i, secret, raw)
			}
		}
		var body struct {
			Metadata map[string]string `json:"metadata"`
			Tools    []struct {
				Label   string            `json:"server_label"`
				URL     string            `json:"server_url"`
				Headers map[string]string `json:"headers"`
			} `json:"tools"`
		}
		if err := json.Unmarshal(raw, &body); err != nil {
			t.Fatal(err)
		}
		if len(body.Tools) != 1 {
			t.Fatalf("request %d offers %d tool entries, want 1", i, len(body.Tools))
		}
		entry := body.Tools[0]
		if entry.URL != face.srv.URL+"/mcp/crm" {
			t.Errorf("request %d: server_url %q, want the face %s/mcp/crm", i, entry.URL, face.srv.URL)
		}
		c, err := face.tokens.Verify(gateway.BearerToken(entry.Headers["Authorization"]))
		if err != nil || len(entry.Headers) != 1 {
			t.Fatalf("request %d: headers %v: %v", i, entry.Headers, err)
		}
		if c.ConversationID != conv || c.TurnID != body.Metadata[responses.MetadataTurn] || c.ServerLabel != "crm" {
			t.Errorf("request %d: token bound to %+v, want conversation %s, turn %s, server crm", i, c, conv, body.Metadata[responses.MetadataTurn])
		}
		if i == 0 && c.TurnID != firstTurn {
			t.Errorf("the first request's token is for turn %s, want %s", c.TurnID, firstTurn)
		}
	}

	// What the server saw: both calls, through the face, each with a token
	// of the turn that ran it; nothing was refused.
	calls := face.toolCalls()
	if len(calls) != 2 || calls[0].tool != "get_forecast" || calls[1].tool != "delete_forecast" {
		t.Fatalf("calls through the face: %+v", calls)
	}
	if calls[0].claims.TurnID != firstTurn || calls[1].claims.TurnID == firstTurn {
		t.Errorf("calls ran with tokens of turns %s and %s (the first turn is %s)", calls[0].claims.TurnID, calls[1].claims.TurnID, firstTurn)
	}
	if st := demo.State(); st.Calls["get_forecast"] != 1 || st.Calls["delete_forecast"] != 1 {
		t.Errorf("the server ran %v, want each tool once", st.Calls)
	}
	face.mu.Lock()
	defer face.mu.Unlock()
	if len(face.refused) != 0 {
		t.Errorf("the face refused %v", face.refused)
	}
}

// In direct mode (no face) the entries carry the server's URL and headers,
// as before: the provider calls the server itself.
func TestRoute_DirectSendsTheServer(t *testing.T) {
	e := newAPI(t)
	e.createDemo("demo")
	e.setPolicy("demo", "get_forecast", "never")
	e.send("", `get_forecast {"city": "Berlin"}`).ok(t)
	raws := e.up.sentRaw()
	if len(raws) != 1 || !bytes.Contains(raws[0], []byte(`"server_url":"`+e.demoURL+`"`)) || bytes.Contains(raws[0], []byte("tgc_")) {
		t.Errorf("direct request:\n%s", raws)
	}
}
