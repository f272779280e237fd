package http_test

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/internal/demomcp"
)

// recorder is a demo MCP server that records what each request carried.
type recorder struct {
	url string // the MCP endpoint
	mu  sync.Mutex
	got []http.Request
}

func newRecorder(t *testing.T, token string) *recorder {
	t.Helper()
	r := &recorder{}
	demo := demomcp.New(demomcp.Options{Token: token})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.got = append(r.got, http.Request{Method: req.Method, URL: req.URL, Header: req.Header.Clone()})
		r.mu.Unlock()
		demo.Handler().ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	r.url = srv.URL + "/mcp"
	return r
}

// header returns the values of name over every recorded request.
func (r *recorder) header(name string) (requests int, values []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, req := range r.got {
		if v := req.Header.Get(name); v != "" {
			values = append(values, v)
		}
	}
	return len(r.got), values
}

type serverWithDropped struct {
	server
	HeadersDropped []string `json:"headers_dropped"`
}

func lastAudit(e *apiEnv, action string) auditEntry {
	e.t.Helper()
	for _, a := range e.audit() { // newest first
		if a.Action == action {
			return a
		}
	}
	e.t.Fatalf("no %s audit entry", action)
	return auditEntry{}
}

func TestPatchingTheURLToAnotherHostDropsTheStoredHeaders(t *testing.T) {
	e := newAPI(t)
	const secret = "Bearer old-host-secret-0123456789"
	oldHost := newRecorder(t, strings.TrimPrefix(secret, "Bearer "))
	newHost := newRecorder(t, "")
	var created server
	e.must(201, "POST", "/api/mcp/servers", map[string]any{"label": "crm", "url": oldHost.url,
		"headers": map[string]string{"Authorization": secret, "X-Team": "blue"}}, &created)
	if created.ToolCount != 6 {
		t.Fatalf("the old host did not accept the header: %+v", created)
	}

	var moved serverWithDropped
	e.must(200, "PATCH", "/api/mcp/servers/crm", map[string]any{"url": newHost.url}, &moved)
	n, auth := newHost.header("Authorization")
	_, team := newHost.header("X-Team")
	if n == 0 || len(auth) > 0 || len(team) > 0 {
		t.Errorf("the new host got %d requests with Authorization %q and X-Team %q; want requests without them", n, auth, team)
	}
	if diff := cmp.Diff([]string{"Authorization", "X-Team"}, moved.HeadersDropped); diff != "" {
		t.Errorf("headers_dropped (-want +got):\n%s", diff)
	}
	if len(moved.Headers) != 0 || moved.ToolCount != 6 {
		t.Errorf("after the move: headers %v, %d tools", moved.Headers, moved.ToolCount)
	}
	var after map[string]json.RawMessage
	if err := json.Unmarshal(lastAudit(e, "server.update").After, &after); err != nil || string(after["headers_dropped"]) != `["Authorization","X-Team"]` {
		t.Errorf("audit after = %s, want headers_dropped", lastAudit(e, "server.update").After)
	}
	var again map[string]any
	e.must(200, "GET", "/api/mcp/servers/crm", nil, &again)
	if _, ok := again["headers_dropped"]; ok {
		t.Error("headers_dropped shows beyond the answer of the PATCH that dropped them")
	}

	// Sent again in the same PATCH, a header goes along; on the same host, headers stay.
	third := newRecorder(t, "")
	e.must(200, "PATCH", "/api/mcp/servers/crm", map[string]any{"headers": map[string]string{"X-Team": "green", "X-Keep": "k"}}, nil)
	e.must(200, "PATCH", "/api/mcp/servers/crm", map[string]any{"url": third.url, "headers": map[string]string{"X-Team": "red"}}, &moved)
	if _, team := third.header("X-Team"); len(team) == 0 || slices.ContainsFunc(team, func(v string) bool { return v != "red" }) {
		t.Errorf("the third host got X-Team %q, want red", team)
	}
	if !cmp.Equal(moved.HeadersDropped, []string{"X-Keep"}) {
		t.Errorf("headers_dropped = %v, want [X-Keep]", moved.HeadersDropped)
	}
	var samehost serverWithDropped
	e.must(200, "PATCH", "/api/mcp/servers/crm", map[string]any{"url": strings.TrimSuffix(third.url, "/mcp") + "/mcp/"}, &samehost)
	if len(samehost.HeadersDropped) != 0 || len(samehost.Headers) != 1 {
		t.Errorf("a path change on the same host: dropped %v, headers %v", samehost.HeadersDropped, samehost.Headers)
	}
}

func TestQueryValuesInServerURLsAreMaskedButUsed(t *testing.T) {
	e := newAPI(t)
	const key = "sk-live-query-abcdefghijklmnop"
	rec := newRecorder(t, "")
	realURL := rec.url + "?api_key=" + key + "&region=eu"
	maskedURL := rec.url + "?api_key=********mnop&region=********"

	var s server
	res := e.must(201, "POST", "/api/mcp/servers", map[string]any{"label": "q", "url": realURL}, &s)
	if s.URL != maskedURL || s.ToolCount != 6 {
		t.Errorf("created: url %q, %d tools; want %q", s.URL, s.ToolCount, maskedURL)
	}
	seen := func() []string {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		var keys []string
		for _, r := range rec.got {
			keys = append(keys, r.URL.Query().Get("api_key"))
		}
		return keys
	}
	if k := seen(); len(k) == 0 || slices.ContainsFunc(k, func(v string) bool { return v != key }) {
		t.Errorf("discovery sent api_key %q, want the real key", k)
	}

	// The masked URL sent back keeps the real one.
	e.must(200, "PATCH", "/api/mcp/servers/q", map[string]any{"url": maskedURL, "description": "masked back"}, &s)
	before := len(seen())
	e.must(200, "POST", "/api/mcp/servers/q/refresh", nil, nil)
	if k := seen()[before:]; len(k) == 0 || k[0] != key {
		t.Errorf("after the masked URL came back, discovery sent api_key %q", k)
	}
	var bad apiError
	r := e.call("PATCH", "/api/mcp/servers/q", map[string]any{"url": strings.Replace(maskedURL, "/mcp?", "/v2/mcp?", 1)})
	_ = json.Unmarshal(r.body, &bad)
	if r.status != 400 || bad.Error.Code != "invalid_url" || !strings.Contains(bad.Error.Fields["url"], "masked query value") {
		t.Errorf("another URL with a masked value: %d %s", r.status, r.body)
	}

	// A discovery failure names the URL masked too.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := "http://" + ln.Addr().String() + "/mcp?token=tok-closed-abcdefghijkl"
	ln.Close()
	e.must(201, "POST", "/api/mcp/servers", map[string]any{"label": "gone", "url": closed}, &s)
	if s.ToolsRefreshError == nil || !strings.Contains(*s.ToolsRefreshError, "token=********ijkl") {
		t.Errorf("refresh error = %v, want the URL masked", deref(s.ToolsRefreshError))
	}

	everything := string(res.body) + string(e.call("GET", "/api/mcp/servers", nil).body) + string(e.call("GET", "/api/audit?limit=500", nil).body)
	for _, secret := range []string{key, "tok-closed"} {
		if strings.Contains(everything, secret) {
			t.Errorf("%q shows in API answers or the audit log", secret)
		}
	}
}
