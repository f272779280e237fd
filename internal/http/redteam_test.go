package http_test

// Attacks tried as an attacker would, through the real API: each test names
// the behaviour that holds. See also guard_test.go, auth_test.go and
// ownership_test.go for the attacks they already cover.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/toolgate/toolgate/internal/auth"
)

// rawRequest writes request bytes as they are to the API's port and returns
// the status and body: for request lines Go's client never sends.
func (e *apiEnv) rawRequest(reqText string) (int, string) {
	e.t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.url, "http://"))
	if err != nil {
		e.t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, reqText); err != nil {
		e.t.Fatal(err)
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		e.t.Fatalf("%q: %v", reqText, err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(body)
}

func TestRedTeam_PathTricksNeverServeAPIDataWithoutSignIn(t *testing.T) {
	e := newAPI(t)
	e.createDemo("secretlabel")
	host := strings.TrimPrefix(e.url, "http://")
	for _, target := range []string{
		"//api/mcp/servers",
		"/api/../api/mcp/servers",
		"/api/./mcp/servers",
		"/api%2Fmcp%2Fservers",
		"/api/mcp%2Fservers",
		"/%61pi/mcp/servers",
		"/API/mcp/servers",
		"/api/mcp/servers/",
		"/api/mcp/servers/secretlabel",
		"/api/mcp/servers/secretlabel/",
		"/api/mcp/servers;x=1",
		"/api/mcp/servers?x=/healthz",
		"/healthz/../api/mcp/servers",
		"/api",
		"/api/",
		"http://" + host + "/api/mcp/servers",
		"*",
	} {
		for _, method := range []string{"GET", "HEAD", "OPTIONS"} {
			status, body := e.rawRequest(method + " " + target + " HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n")
			if status < 400 || strings.Contains(body, "secretlabel") {
				t.Errorf("anonymous %s %s: %d %s", method, target, status, body)
			}
		}
	}
}

func TestRedTeam_BearerVariantsAndCookieMixesNeverMixUsers(t *testing.T) {
	e := newAPI(t)
	_, member := e.newUser(auth.Member)
	_, cookie := e.login(member.Email, memberPassword, nil)
	if cookie == nil {
		t.Fatal("no cookie")
	}
	whoAmI := func(hdr http.Header) (int, string) {
		req, _ := http.NewRequest("GET", e.url+"/api/auth/me", nil)
		req.Header = hdr
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var m struct{ ID string }
		_ = json.NewDecoder(res.Body).Decode(&m)
		return res.StatusCode, m.ID
	}
	ck := cookie.Name + "=" + cookie.Value
	for _, tc := range []struct {
		name   string
		hdr    http.Header
		status int
		id     string
	}{
		{"lower-case scheme", http.Header{"Authorization": {"bearer " + e.token}}, 200, e.admin.ID},
		{"extra spaces", http.Header{"Authorization": {"Bearer    " + e.token}}, 200, e.admin.ID},
		{"token in the cookie", http.Header{"Cookie": {"toolgate_session=" + e.token}}, 401, ""},
		{"token as basic", http.Header{"Authorization": {"Basic " + e.token}}, 401, ""},
		{"bad token first, good second", http.Header{"Authorization": {"Bearer tg_nope", "Bearer " + e.token}}, 401, ""},
		// A bearer token wins over a cookie: the admin's token with the
		// member's cookie is the admin, and a bad token with a good
		// cookie is refused, never the cookie's user.
		{"admin token, member cookie", http.Header{"Authorization": {"Bearer " + e.token}, "Cookie": {ck}}, 200, e.admin.ID},
		{"bad token, member cookie", http.Header{"Authorization": {"Bearer tg_nope"}, "Cookie": {ck}}, 401, ""},
		{"empty bearer, member cookie", http.Header{"Authorization": {"Bearer "}, "Cookie": {ck}}, 401, ""},
		{"two cookies, bad first", http.Header{"Cookie": {"toolgate_session=nope; " + ck}}, 401, ""},
	} {
		status, id := whoAmI(tc.hdr)
		if status != tc.status || id != tc.id {
			t.Errorf("%s: %d %q, want %d %q", tc.name, status, id, tc.status, tc.id)
		}
	}
}

func TestRedTeam_LoginIgnoresAPlantedSessionCookie(t *testing.T) {
	e := newAPI(t)
	_, member := e.newUser(auth.Member)
	planted := "attacker-chosen-session-value"
	res, c := e.login(member.Email, memberPassword, map[string]string{"Cookie": "toolgate_session=" + planted})
	if res.status != 200 || c == nil || c.Value == planted {
		t.Fatalf("login with a planted cookie: %d %v", res.status, c)
	}
	if r := e.withCookie(&http.Cookie{Name: "toolgate_session", Value: planted}, "GET", "/api/auth/me"); r.status != 401 {
		t.Errorf("the planted cookie signs in: %d %s", r.status, r.body)
	}
}

func TestRedTeam_CrossSiteLoginLogoutAndSetupAreRefused(t *testing.T) {
	e := newAPI(t)
	_, member := e.newUser(auth.Member)
	for _, h := range []map[string]string{
		{"Origin": "http://evil.example"},
		{"Sec-Fetch-Site": "cross-site"},
		{"Sec-Fetch-Site": "same-site", "Origin": "http://localhost:1"},
		{"Origin": "null"},
	} {
		res, c := e.login(member.Email, memberPassword, h)
		if res.status != 403 || c != nil {
			t.Errorf("cross-site login %v: %d %s", h, res.status, res.body)
		}
		anon := e.anon()
		for _, path := range []string{"/api/auth/logout", "/api/auth/setup"} {
			h["Content-Type"] = "application/json"
			if r, _ := anon.raw("POST", path, `{}`, h); r.status != 403 {
				t.Errorf("cross-site %s %v: %d %s", path, h, r.status, r.body)
			}
		}
	}
}

func TestRedTeam_RateLimitHoldsAcrossEmailSpellingsAndForwardedFor(t *testing.T) {
	e := newAPI(t)
	_, member := e.newUser(auth.Member)
	spellings := []string{member.Email, strings.ToUpper(member.Email), "  " + member.Email + " ", "\t" + member.Email}
	for i := range 5 {
		h := map[string]string{"X-Forwarded-For": fmt.Sprintf("203.0.113.%d", i), "X-Real-IP": fmt.Sprintf("198.51.100.%d", i)}
		if res, _ := e.login(spellings[i%len(spellings)], "wrong password", h); res.status != 401 {
			t.Fatalf("failure %d: %d %s", i+1, res.status, res.body)
		}
	}
	res, c := e.login(strings.ToUpper(member.Email)+" ", memberPassword, map[string]string{"X-Forwarded-For": "192.0.2.99"})
	if res.status != 429 || c != nil {
		t.Errorf("sixth try under another spelling and a forged X-Forwarded-For: %d %s", res.status, res.body)
	}
}

func TestRedTeam_ConcurrentWrongPasswordsGetNoMoreTriesThanTheLimit(t *testing.T) {
	e := newAPI(t)
	_, member := e.newUser(auth.Member)
	const n = 20
	var wg sync.WaitGroup
	statuses := make([]int, n)
	for i := range n {
		wg.Go(func() {
			res, _ := e.login(member.Email, fmt.Sprintf("guess number %d", i), nil)
			statuses[i] = res.status
		})
	}
	wg.Wait()
	tried := 0
	for _, s := range statuses {
		switch s {
		case 401:
			tried++
		case 429:
		default:
			t.Errorf("status %d", s)
		}
	}
	if tried > 5 {
		t.Errorf("%d password guesses were checked at once, the limit is 5 (statuses %v)", tried, statuses)
	}
}
