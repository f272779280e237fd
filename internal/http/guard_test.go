package http_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// raw sends body exactly as given with exactly the headers given (Host is
// set through the request, not the header map), carrying the test's
// credentials like e.call does, so that a refusal here is the guard's and
// not sign-in's.
func (e *apiEnv) raw(method, path, body string, hdr map[string]string) (response, apiError) {
	e.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, e.url+path, r)
	if err != nil {
		e.t.Fatal(err)
	}
	guardCredentials(e, req)
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	var apiErr apiError
	_ = json.Unmarshal(out, &apiErr)
	return response{status: res.StatusCode, header: res.Header, body: out}, apiErr
}

// guardCredentials adds the credentials e.call sends (the admin's token).
func guardCredentials(e *apiEnv, req *http.Request) {
	if e.token != "" {
		req.Header.Set("Authorization", "Bearer "+e.token)
	}
}

// demoState is what the demo MCP server has been asked to do.
func (e *apiEnv) demoCalls() map[string]int {
	e.t.Helper()
	return e.demo.State().Calls
}

// conversationCount is how many conversations the API shows.
func (e *apiEnv) conversationCount() int {
	e.t.Helper()
	var out struct{ Conversations []json.RawMessage }
	e.must(200, "GET", "/api/conversations", nil, &out)
	return len(out.Conversations)
}

// attackState is what an attack through the browser would try to change:
// servers, policies, settings, audit, conversations and the demo's tools.
func (e *apiEnv) attackState() map[string]any {
	e.t.Helper()
	return map[string]any{"api": e.snapshot(), "conversations": e.conversationCount(), "demo_calls": e.demoCalls()}
}

const createBody = `{"label": "evil", "url": "http://evil.example/mcp"}`

func TestGuard_ForeignHostIsMisdirectedEvenWithValidCredentials(t *testing.T) {
	e := newAPI(t)
	e.createDemo("weather")
	host := strings.TrimPrefix(e.url, "http://")

	// DNS rebinding: the browser believes it talks to attacker.example, so
	// it sends that Host, same-origin headers, and (in the worst case) our
	// credentials.
	for _, tc := range []struct {
		name, method, path, body, host string
	}{
		{"create a server", "POST", "/api/mcp/servers", createBody, "attacker.example"},
		{"with the port", "POST", "/api/mcp/servers", createBody, "attacker.example:" + host[strings.LastIndex(host, ":")+1:]},
		{"chat", "POST", "/api/responses", `{"input": "reset_forecasts {}"}`, "attacker.example"},
		{"set a policy", "PUT", "/api/mcp/servers/weather/tools/reset_forecasts/approval-policy", `{"policy": "never"}`, "attacker.example"},
		{"delete a server", "DELETE", "/api/mcp/servers/weather", "", "attacker.example"},
		{"read the servers", "GET", "/api/mcp/servers", "", "attacker.example"},
		{"read the audit log", "GET", "/api/audit", "", "attacker.example"},
		{"an unknown API path", "GET", "/api/nothing", "", "attacker.example"},
		{"the web app", "GET", "/settings", "", "attacker.example"},
		{"a private address", "GET", "/api/mcp/servers", "", "192.168.1.20:8080"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := e.attackState()
			hdr := map[string]string{"Host": tc.host, "Sec-Fetch-Site": "same-origin", "Origin": "http://" + tc.host}
			if tc.body != "" {
				hdr["Content-Type"] = "application/json"
			}
			res, got := e.raw(tc.method, tc.path, tc.body, hdr)
			if res.status != http.StatusMisdirectedRequest || got.Error.Code != "misdirected_host" {
				t.Fatalf("status %d, body %s; want 421 misdirected_host", res.status, res.body)
			}
			if !strings.Contains(got.Error.Message, "ALLOWED_HOSTS") || !strings.Contains(got.Error.Message, tc.host) {
				t.Errorf("message %q does not name ALLOWED_HOSTS and the host %q", got.Error.Message, tc.host)
			}
			if diff := cmp.Diff(before, e.attackState()); diff != "" {
				t.Errorf("a misdirected request changed state (-before +after):\n%s", diff)
			}
		})
	}

	// The control: the same credentials and body under our own name work,
	// so it was the Host that was refused, not the caller.
	if res, _ := e.raw("POST", "/api/mcp/servers", createBody, map[string]string{"Content-Type": "application/json"}); res.status != http.StatusCreated {
		t.Fatalf("control request: status %d, body %s", res.status, res.body)
	}
}

func TestGuard_AllowedHostsAndProbesAnswer(t *testing.T) {
	e := newAPI(t)
	port := e.url[strings.LastIndex(e.url, ":")+1:]
	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port, "LOCALHOST:" + port, "[::1]:" + port, "localhost", "localhost.:" + port} {
		if res, _ := e.raw("GET", "/api/mcp/servers", "", map[string]string{"Host": host}); res.status != http.StatusOK {
			t.Errorf("Host %s: status %d, body %s", host, res.status, res.body)
		}
	}
	// Probes come from the cluster under the pod's IP.
	for _, path := range []string{"/healthz", "/readyz"} {
		if res, _ := e.raw("GET", path, "", map[string]string{"Host": "10.1.2.3:8080"}); res.status != http.StatusOK {
			t.Errorf("GET %s with a pod IP Host: status %d, body %s", path, res.status, res.body)
		}
	}
}

func TestGuard_CrossSiteStateChangesAreRefused(t *testing.T) {
	e := newAPI(t)
	e.createDemo("weather")
	// What a page on another site can make a browser send. Each still
	// carries valid credentials, as a browser's cookie would.
	attacks := []struct {
		name string
		hdr  map[string]string
	}{
		{"Sec-Fetch-Site cross-site", map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "http://evil.example"}},
		{"Sec-Fetch-Site same-site (another port)", map[string]string{"Sec-Fetch-Site": "same-site", "Origin": "http://127.0.0.1:1"}},
		{"Origin only (older browser)", map[string]string{"Origin": "http://evil.example"}},
		{"Origin of another local port, no Sec-Fetch-Site", map[string]string{"Origin": "http://127.0.0.1:1"}},
		{"Origin null (sandboxed frame)", map[string]string{"Origin": "null"}},
		{"same-origin claim from a foreign Origin", map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "http://evil.example"}},
		{"same-origin claim from Origin null", map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "null"}},
	}
	requests := []struct {
		name, method, path, body string
	}{
		{"create a server", "POST", "/api/mcp/servers", createBody},
		{"chat that runs reset_forecasts", "POST", "/api/responses", `{"input": "reset_forecasts {}"}`},
		{"set a policy", "PUT", "/api/mcp/servers/weather/tools/reset_forecasts/approval-policy", `{"policy": "never"}`},
		{"change the global default", "PUT", "/api/settings", `{"default_policy": "never"}`},
		{"delete a server", "DELETE", "/api/mcp/servers/weather", ""},
		{"refresh a server", "POST", "/api/mcp/servers/weather/refresh", ""},
	}
	for _, a := range attacks {
		for _, r := range requests {
			t.Run(a.name+"/"+r.name, func(t *testing.T) {
				before := e.attackState()
				hdr := map[string]string{"Content-Type": "application/json"}
				for k, v := range a.hdr {
					hdr[k] = v
				}
				res, got := e.raw(r.method, r.path, r.body, hdr)
				if res.status != http.StatusForbidden || got.Error.Code != "cross_origin" {
					t.Fatalf("status %d, body %s; want 403 cross_origin", res.status, res.body)
				}
				if len(got.Error.Message) < 30 {
					t.Errorf("message %q does not say what to do", got.Error.Message)
				}
				if diff := cmp.Diff(before, e.attackState()); diff != "" {
					t.Errorf("a cross-site request changed state (-before +after):\n%s", diff)
				}
			})
		}
	}
	// Reading from a foreign Origin is refused too (the browser would not
	// show the answer, but there is no reason to compute it).
	if res, got := e.raw("GET", "/api/mcp/servers", "", map[string]string{"Origin": "http://evil.example"}); res.status != 403 || got.Error.Code != "cross_origin" {
		t.Errorf("GET with a foreign Origin: status %d, body %s", res.status, res.body)
	}
	if n := e.demoCalls()["reset_forecasts"]; n != 0 {
		t.Errorf("reset_forecasts ran %d times", n)
	}
}

func TestGuard_SameOriginAndScriptsPass(t *testing.T) {
	e := newAPI(t)
	for i, hdr := range []map[string]string{
		{}, // curl, scripts
		{"Sec-Fetch-Site": "same-origin", "Origin": e.url}, // the web app
		{"Origin": e.url},          // an older browser on our own page
		{"Sec-Fetch-Site": "none"}, // typed by the person
		{"Origin": strings.Replace(e.url, "127.0.0.1", "localhost", 1), "Host": strings.Replace(strings.TrimPrefix(e.url, "http://"), "127.0.0.1", "localhost", 1)},
	} {
		hdr["Content-Type"] = "application/json"
		body := `{"label": "s` + string(rune('a'+i)) + `", "url": "http://x.example/mcp"}`
		if res, _ := e.raw("POST", "/api/mcp/servers", body, hdr); res.status != http.StatusCreated {
			t.Errorf("headers %v: status %d, body %s", hdr, res.status, res.body)
		}
	}
}

func TestGuard_BodyMustBeJSON(t *testing.T) {
	e := newAPI(t)
	e.createDemo("weather")
	for _, tc := range []struct {
		name, contentType, path, body string
	}{
		{"text/plain JSON (no-cors fetch)", "text/plain", "/api/mcp/servers", createBody},
		{"text/plain with charset", "text/plain;charset=UTF-8", "/api/mcp/servers", createBody},
		{"HTML form", "application/x-www-form-urlencoded", "/api/mcp/servers", "label=evil&url=http%3A%2F%2Fevil.example%2Fmcp"},
		{"multipart form", "multipart/form-data; boundary=x", "/api/mcp/servers", "--x\r\nContent-Disposition: form-data; name=\"label\"\r\n\r\nevil\r\n--x--\r\n"},
		{"no Content-Type", "", "/api/mcp/servers", createBody},
		{"JSON in another charset", "application/json; charset=latin1", "/api/mcp/servers", createBody},
		{"chat as text/plain", "text/plain", "/api/responses", `{"input": "reset_forecasts {}"}`},
		{"policy as text/plain", "text/plain", "/api/mcp/servers/weather/tools/reset_forecasts/approval-policy", `{"policy": "never"}`},
		{"settings as a form", "application/x-www-form-urlencoded", "/api/settings", `default_policy=never`},
		{"body on a route that takes none", "text/plain", "/api/mcp/servers/weather/refresh", `x`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := e.attackState()
			method := "POST"
			if strings.Contains(tc.path, "approval-policy") || tc.path == "/api/settings" {
				method = "PUT"
			}
			hdr := map[string]string{}
			if tc.contentType != "" {
				hdr["Content-Type"] = tc.contentType
			}
			res, got := e.raw(method, tc.path, tc.body, hdr)
			if res.status != http.StatusUnsupportedMediaType || got.Error.Code != "unsupported_media_type" {
				t.Fatalf("status %d, body %s; want 415 unsupported_media_type", res.status, res.body)
			}
			if !strings.Contains(got.Error.Message, "Content-Type: application/json") {
				t.Errorf("message %q does not say what to send", got.Error.Message)
			}
			if diff := cmp.Diff(before, e.attackState()); diff != "" {
				t.Errorf("a non-JSON body changed state (-before +after):\n%s", diff)
			}
		})
	}
	for _, ct := range []string{"application/json", "application/json; charset=utf-8", "Application/JSON;charset=UTF-8"} {
		if res, _ := e.raw("PUT", "/api/mcp/servers/weather/tools/get_forecast/approval-policy", `{"policy": "always"}`,
			map[string]string{"Content-Type": ct}); res.status != http.StatusOK {
			t.Errorf("Content-Type %q: status %d, body %s", ct, res.status, res.body)
		}
	}
	// No body needs no Content-Type.
	if res, _ := e.raw("POST", "/api/conversations", "", nil); res.status != http.StatusCreated {
		t.Errorf("POST without a body: status %d, body %s", res.status, res.body)
	}
}

func TestGuard_NULAndInvalidUTF8Are400NeverServerErrors(t *testing.T) {
	e := newAPI(t)
	e.createDemo("weather")
	var conv struct{ ID string }
	e.must(201, "POST", "/api/conversations", map[string]string{"title": "t"}, &conv)
	c := "/api/conversations/" + conv.ID

	cases := []struct {
		name, method, path, body string
		code, field              string
	}{
		// ids in the path
		{"NUL in a server id", "GET", "/api/mcp/servers/we%00ather", "", "invalid_text", "path"},
		{"invalid UTF-8 in a server id", "GET", "/api/mcp/servers/%ff%fe", "", "invalid_text", "path"},
		{"NUL in a server id (tools)", "GET", "/api/mcp/servers/%00/tools", "", "invalid_text", "path"},
		{"NUL in a server id (PATCH)", "PATCH", "/api/mcp/servers/%00", `{"description": "x"}`, "invalid_text", "path"},
		{"NUL in a server id (DELETE)", "DELETE", "/api/mcp/servers/weather%00", "", "invalid_text", "path"},
		{"NUL in a server id (refresh)", "POST", "/api/mcp/servers/weather%00/refresh", "", "invalid_text", "path"},
		{"NUL in a tool name", "PUT", "/api/mcp/servers/weather/tools/get%00forecast/approval-policy", `{"policy": "always"}`, "invalid_text", "path"},
		{"invalid UTF-8 in a tool name", "DELETE", "/api/mcp/servers/weather/tools/%c3%28/approval-policy", "", "invalid_text", "path"},
		{"NUL in a conversation id", "GET", "/api/conversations/conv_%00", "", "invalid_text", "path"},
		{"invalid UTF-8 in a conversation id", "DELETE", "/api/conversations/%80", "", "invalid_text", "path"},
		{"NUL in a conversation id (cancel)", "POST", "/api/conversations/%00/cancel", "", "invalid_text", "path"},
		{"NUL in a conversation id (retry)", "POST", "/api/conversations/%00/retry", "", "invalid_text", "path"},
		{"NUL in a web app path", "GET", "/c/%00", "", "invalid_text", "path"},
		{"NUL in an unknown API path", "GET", "/api/%00", "", "invalid_text", "path"},
		// filters in the query
		{"NUL in the audit server filter", "GET", "/api/audit?server_id=weather%00", "", "invalid_text", "server_id"},
		{"invalid UTF-8 in the audit action filter", "GET", "/api/audit?action=%ff", "", "invalid_text", "action"},
		{"NUL in the audit cursor", "GET", "/api/audit?cursor=%00", "", "invalid_text", "cursor"},
		{"NUL in a query parameter name", "GET", "/api/audit?a%00=1", "", "invalid_text", "query"},
		{"NUL in the conversations limit", "GET", "/api/conversations?limit=1%00", "", "invalid_text", "limit"},
		{"NUL in a layer", "PUT", "/api/mcp/servers/weather/tools/get_forecast/approval-policy?layer=%00", `{"policy": "always"}`, "invalid_text", "layer"},
		// text in JSON bodies
		{"NUL in a server description", "POST", "/api/mcp/servers", `{"label": "x", "url": "http://x.example/mcp", "description": "a\u0000b"}`, "invalid_text", "description"},
		{"invalid UTF-8 in a server description", "POST", "/api/mcp/servers", "{\"label\": \"x\", \"url\": \"http://x.example/mcp\", \"description\": \"caf\xe9\"}", "invalid_text", "description"},
		{"NUL in a label", "POST", "/api/mcp/servers", `{"label": "x\u0000", "url": "http://x.example/mcp"}`, "invalid_text", "label"},
		{"NUL in a URL", "POST", "/api/mcp/servers", `{"label": "x", "url": "http://x.example/mcp\u0000"}`, "invalid_text", "url"},
		{"NUL in a header value", "POST", "/api/mcp/servers", `{"label": "x", "url": "http://x.example/mcp", "headers": {"X-Key": "a\u0000"}}`, "invalid_text", "headers.X-Key"},
		{"NUL in a header name", "POST", "/api/mcp/servers", `{"label": "x", "url": "http://x.example/mcp", "headers": {"X-\u0000": "a"}}`, "invalid_text", "headers"},
		{"NUL in a field name", "POST", "/api/mcp/servers", `{"la\u0000bel": "x"}`, "invalid_text", "body"},
		{"NUL in a PATCHed description", "PATCH", "/api/mcp/servers/weather", `{"description": "\u0000"}`, "invalid_text", "description"},
		{"NUL in a policy", "PUT", "/api/mcp/servers/weather/tools/get_forecast/approval-policy", `{"policy": "always\u0000"}`, "invalid_text", "policy"},
		{"NUL in a bulk tool name", "PUT", "/api/mcp/servers/weather/tools/approval-policies", `{"policies": {"get_forecast\u0000": "never"}}`, "invalid_text", "policies"},
		{"NUL in the global default", "PUT", "/api/settings", `{"default_policy": "never\u0000"}`, "invalid_text", "default_policy"},
		{"NUL in a chat message", "POST", "/api/responses", `{"input": "reset_forecasts\u0000 {}"}`, "invalid_text", "input"},
		{"invalid UTF-8 in a chat message", "POST", "/api/responses", "{\"input\": \"hi \xc0\xaf\"}", "invalid_text", "input"},
		{"NUL in a conversation id in the body", "POST", "/api/responses", `{"conversation_id": "\u0000", "input": "hi"}`, "invalid_text", "conversation_id"},
		{"NUL in a denial reason", "POST", "/api/responses/approval-response", `{"conversation_id": "` + conv.ID + `", "decisions": [{"approval_request_id": "mcpr_1", "approve": false, "reason": "no\u0000"}]}`, "invalid_text", "decisions[0].reason"},
		{"NUL in an approval id", "POST", "/api/responses/approval-response", `{"conversation_id": "` + conv.ID + `", "approval_request_id": "\u0000", "approve": true}`, "invalid_text", "approval_request_id"},
		{"NUL in a new conversation title", "POST", "/api/conversations", `{"title": "\u0000"}`, "invalid_text", "title"},
		{"invalid UTF-8 in a new title", "PATCH", c, "{\"title\": \"\xff\"}", "invalid_text", "title"},
		{"NUL as a top-level string", "PUT", "/api/settings", `"\u0000"`, "invalid_text", "body"},
		{"NUL deep in an array", "PUT", "/api/settings", `{"x": [1, {"y": ["a", "b\u0000"]}]}`, "invalid_text", "x[1].y[1]"},
		// a raw NUL byte is not JSON at all
		{"raw NUL byte in a string", "POST", "/api/mcp/servers", "{\"label\": \"x\x00\", \"url\": \"http://x.example/mcp\"}", "malformed_json", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := e.attackState()
			hdr := map[string]string{}
			if tc.body != "" {
				hdr["Content-Type"] = "application/json"
			}
			res, got := e.raw(tc.method, tc.path, tc.body, hdr)
			if res.status != http.StatusBadRequest || got.Error.Code != tc.code {
				t.Fatalf("status %d, body %s; want 400 %s", res.status, res.body, tc.code)
			}
			if tc.field != "" && got.Error.Fields[tc.field] == "" {
				t.Errorf("fields = %v, want an entry for %q", got.Error.Fields, tc.field)
			}
			if tc.code == "invalid_text" && !strings.Contains(got.Error.Message, "fix or remove it") {
				t.Errorf("message %q does not say what to fix", got.Error.Message)
			}
			if diff := cmp.Diff(before, e.attackState()); diff != "" {
				t.Errorf("a rejected request changed state (-before +after):\n%s", diff)
			}
		})
	}
	// Text without NUL, in every script, still goes through.
	e.must(200, "PATCH", "/api/mcp/servers/weather", map[string]string{"description": "Wetter ☀ 天気 \u00e9 \\u0000 literal"}, nil)
}
