package http_test

// Attacks tried as an attacker would, through the real API: each test names
// the behaviour that holds. See also guard_test.go, auth_test.go and
// ownership_test.go for the attacks they already cover.

import (
	"bufio"
	"context"
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
			// OPTIONS outside /api answers an empty 204 (Echo's preflight
			// answer, no data); everything else is an error page.
			if strings.Contains(body, "secretlabel") || (status < 400 && (method != "OPTIONS" || body != "")) {
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

func TestRedTeam_MemberCannotReachAdminPowersThroughAnyField(t *testing.T) {
	e := newAPI(t)
	e.createDemo("demo")
	m, member := e.newUser(auth.Member)
	before := e.attackState()
	for _, tc := range []struct {
		method, path string
		body         any
	}{
		{"PATCH", "/api/users/" + member.ID, map[string]any{"role": "admin"}},
		{"PATCH", "/api/users/" + e.admin.ID, map[string]any{"disabled": true}},
		{"PATCH", "/api/users/" + e.admin.ID, map[string]any{"password": "new password 123"}},
		{"PUT", "/api/settings", map[string]any{"default_policy": "never", "default_policy_locked": false}},
		{"PATCH", "/api/mcp/servers/demo", map[string]any{"default_policy_locked": false}},
		{"PUT", "/api/mcp/servers/demo/tools/delete_forecast/approval-policy?layer=workspace", map[string]any{"policy": "never"}},
		{"PUT", "/api/mcp/servers/demo/tools/delete_forecast/approval-policy?layer=WORKSPACE", map[string]any{"policy": "never"}},
		{"PUT", "/api/mcp/servers/demo/tools/delete_forecast/approval-policy", map[string]any{"policy": "always", "locked": true}},
		{"DELETE", "/api/mcp/servers/demo/tools/delete_forecast/approval-policy?layer=workspace", nil},
		{"PUT", "/api/mcp/servers/demo/tools/approval-policies?layer=workspace", map[string]any{"policies": map[string]any{"delete_forecast": "never"}}},
		{"POST", "/api/users", map[string]any{"email": "x@toolgate.test", "password": "long enough pw", "role": "admin"}},
		{"POST", "/api/mcp/servers/demo/refresh", nil},
	} {
		res := m.call(tc.method, tc.path, tc.body)
		if res.status != 403 && res.status != 400 {
			t.Errorf("member %s %s: %d %s", tc.method, tc.path, res.status, res.body)
		}
	}
	var users struct{ Users []auth.User }
	e.must(200, "GET", "/api/users", nil, &users)
	for _, u := range users.Users {
		if u.ID == member.ID && u.Role != auth.Member {
			t.Errorf("the member became %s", u.Role)
		}
	}
	if after := e.attackState(); !jsonEqual(t, before, after) {
		t.Errorf("a member's refused requests changed the workspace:\n%v\n%v", before, after)
	}
	// A repeated ?layer= is read as its first value: the member's own layer.
	m.must(200, "PUT", "/api/mcp/servers/demo/tools/delete_forecast/approval-policy?layer=user&layer=workspace", map[string]any{"policy": "never"}, nil)
	if p := e.tools("demo")["delete_forecast"].Policy; p != nil {
		t.Errorf("?layer=user&layer=workspace wrote the workspace policy %q", *p)
	}
}

func jsonEqual(t *testing.T, a, b any) bool {
	t.Helper()
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

func TestRedTeam_AnotherUsersApprovalCannotBeDecidedFromOwnConversation(t *testing.T) {
	e := newAPI(t)
	e.askFor("delete_forecast")
	victim, _ := e.newUser(auth.Member)
	attacker, _ := e.newUser(auth.Member)
	_, victimConv, victimAp := victim.askToDeleteOslo()
	_, ownConv, ownAp := attacker.askToDeleteOslo()

	for name, body := range map[string]map[string]any{
		"single in own conversation": {"conversation_id": ownConv, "approval_request_id": victimAp.ID, "approve": true},
		"array with only theirs":     {"conversation_id": ownConv, "decisions": []any{map[string]any{"approval_request_id": victimAp.ID, "approve": true}}},
		"array with mine and theirs": {"conversation_id": ownConv, "decisions": []any{
			map[string]any{"approval_request_id": ownAp.ID, "approve": true},
			map[string]any{"approval_request_id": victimAp.ID, "approve": true}}},
		"their conversation": {"conversation_id": victimConv, "approval_request_id": victimAp.ID, "approve": true},
	} {
		s := attacker.stream("/api/responses/approval-response", body)
		if s.status != 404 {
			t.Errorf("%s: %d %s", name, s.status, s.body)
		}
	}
	if c := e.demoCalls()["delete_forecast"]; c != 0 {
		t.Fatalf("delete_forecast ran %d times", c)
	}
	// The victim's approval is still theirs to decide.
	victim.decide(victimConv, victimAp.ID, false, nil).ok(t)
}

func TestRedTeam_DuplicateJSONKeysAreRefused(t *testing.T) {
	e := newAPI(t)
	e.askFor("delete_forecast")
	_, conv, ap := e.askToDeleteOslo()
	for _, body := range []string{
		fmt.Sprintf(`{"conversation_id":%q,"approval_request_id":%q,"approve":false,"approve":true}`, conv, ap.ID),
		fmt.Sprintf(`{"conversation_id":%q,"approval_request_id":%q,"approve":false,"APPROVE":true}`, conv, ap.ID),
		fmt.Sprintf(`{"conversation_id":%q,"decisions":[{"approval_request_id":%q,"approve":false,"approve":true}]}`, conv, ap.ID),
	} {
		res, apiErr := e.raw("POST", "/api/responses/approval-response", body, map[string]string{"Content-Type": "application/json"})
		if res.status != 400 || apiErr.Error.Code != "duplicate_field" {
			t.Errorf("%s: %d %s", body, res.status, res.body)
		}
	}
	if c := e.demoCalls()["delete_forecast"]; c != 0 {
		t.Fatalf("delete_forecast ran %d times", c)
	}
	// Keys of a map are data: tool names that differ by case alone are
	// two tools, but the same name twice is refused.
	res, apiErr := e.raw("PUT", "/api/mcp/servers/demo/tools/approval-policies",
		`{"policies":{"Search":"always","search":"always"}}`, map[string]string{"Content-Type": "application/json"})
	if apiErr.Error.Code == "duplicate_field" {
		t.Errorf("tool names differing by case were refused: %d %s", res.status, res.body)
	}
	res, apiErr = e.raw("PUT", "/api/mcp/servers/demo/tools/approval-policies",
		`{"policies":{"delete_forecast":"always","delete_forecast":"never"}}`, map[string]string{"Content-Type": "application/json"})
	if res.status != 400 || apiErr.Error.Code != "duplicate_field" {
		t.Errorf("the same tool twice: %d %s", res.status, res.body)
	}
}

func TestRedTeam_ContentTypeTricksAreRefused(t *testing.T) {
	e := newAPI(t)
	before := e.attackState()
	for _, ct := range []string{
		"application/json;charset=utf-16",
		"application/json; charset=iso-8859-1",
		"application/json-patch+json",
		"application/x-www-form-urlencoded",
		"text/plain;application/json",
		"text/plain, application/json",
		"multipart/form-data; boundary=x",
		"application/jsonx",
		"",
	} {
		res, apiErr := e.raw("POST", "/api/mcp/servers", `{"label":"evil","url":"http://127.0.0.1:1/mcp"}`, map[string]string{"Content-Type": ct})
		if res.status != 415 || apiErr.Error.Code != "unsupported_media_type" {
			t.Errorf("Content-Type %q: %d %s", ct, res.status, res.body)
		}
	}
	// Chunked (no Content-Length) bodies are checked the same way.
	req, _ := http.NewRequest("POST", e.url+"/api/mcp/servers", io.MultiReader(strings.NewReader(`{"label":"evil",`), strings.NewReader(`"url":"http://127.0.0.1:1/mcp"}`)))
	req.Header.Set("Content-Type", "text/plain")
	req.Header.Set("Authorization", "Bearer "+e.token)
	req.ContentLength = -1
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 415 {
		t.Errorf("chunked text/plain: %d", res.StatusCode)
	}
	if after := e.attackState(); !jsonEqual(t, before, after) {
		t.Error("a refused body changed something")
	}
}

func TestRedTeam_HostAndOriginSpellings(t *testing.T) {
	e := newAPI(t)
	port := e.url[strings.LastIndex(e.url, ":")+1:]
	for _, tc := range []struct {
		host   string
		status int
	}{
		{"localhost.", 200},
		{"LOCALHOST:" + port, 200},
		{"[::1]:" + port, 200},
		{"127.0.0.1.nip.io", 421},
		{"localhost.evil.example", 421},
		{"evil.example:" + port, 421},
		{"127.1", 421},
		{"2130706433", 421},
		{"[::ffff:127.0.0.1]", 421},
		{"localhost:80@evil.example", 421},
	} {
		res, _ := e.raw("GET", "/api/auth/me", "", map[string]string{"Host": tc.host})
		if res.status != tc.status {
			t.Errorf("Host %q: %d, want %d", tc.host, res.status, tc.status)
		}
	}
	// Absolute-form request target: the URL's host is the Host.
	host := strings.TrimPrefix(e.url, "http://")
	if status, _ := e.rawRequest("GET http://evil.example/api/auth/status HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n"); status != 421 {
		t.Errorf("absolute-form to evil.example with an allowed Host: %d", status)
	}
	for _, origin := range []string{"http://localhost.evil.example", "http://evil.example", "null", "http://localhost:1", "file://", "http://127.0.0.1.nip.io"} {
		res, _ := e.raw("POST", "/api/conversations", `{}`, map[string]string{"Origin": origin, "Content-Type": "application/json"})
		if res.status != 403 {
			t.Errorf("Origin %q: %d %s", origin, res.status, res.body)
		}
	}
}

// TestRedTeam_OIDCEmailNotVerifiedGrantsNoAdminAndLinksNoAccount: a
// provider that does not say it verified an email (no email_verified
// claim; some providers let people type any address) must not make its
// holder an admin by OIDC_ADMIN_EMAILS, nor take over the account an admin
// created for that email.
func TestRedTeam_OIDCEmailNotVerifiedGrantsNoAdminAndLinksNoAccount(t *testing.T) {
	e := newOIDCEnv(t)
	e.users.mu.Lock()
	e.users.unverified["id2"] = true // test-user2@zitadel.ch
	e.users.mu.Unlock()
	e.configure(auth.OIDCConfig{AdminEmails: []string{"test-user@zitadel.ch", "test-user2@zitadel.ch"}})
	_, me := e.mustSignIn(e.adminUser()) // verified: admin
	if !strings.Contains(me, `"role":"admin"`) {
		t.Fatalf("verified admin email: %s", me)
	}
	if _, me := e.mustSignIn(e.memberUser()); !strings.Contains(me, `"role":"member"`) {
		t.Errorf("an unverified email in OIDC_ADMIN_EMAILS made an admin: %s", me)
	}

	// An account an admin created for an email is not linked to an
	// identity whose email is unverified.
	e2 := newOIDCEnv(t)
	e2.users.mu.Lock()
	e2.users.unverified["id2"] = true
	e2.users.mu.Unlock()
	e2.configure(auth.OIDCConfig{AdminEmails: []string{"test-user@zitadel.ch"}})
	_, _ = e2.mustSignIn(e2.adminUser())
	admin, err := e2.auth.Accounts.OldestActiveAdmin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	u, err := e2.auth.Accounts.CreateUser(auth.WithUser(t.Context(), admin), auth.NewUser{Email: "test-user2@zitadel.ch", Role: auth.Member})
	if err != nil {
		t.Fatal(err)
	}
	browser, status, body := e2.signIn(e2.memberUser())
	if status == 303 || !strings.Contains(body, "email_not_verified") {
		t.Errorf("an unverified email signed into the account made for it: %d %s", status, body)
	}
	if st, _ := e2.get(browser, "/api/auth/me"); st != 401 {
		t.Errorf("a session was opened (me: %d)", st)
	}
	var subject string
	if err := e2.pool.QueryRow(t.Context(), `SELECT coalesce(oidc_subject, '') FROM users WHERE id = $1`, u.ID).Scan(&subject); err != nil || subject != "" {
		t.Errorf("the account was linked to %q (%v)", subject, err)
	}
}

// TestRedTeam_PasswordResetRevokesTokensMadeWithTheOldPassword: someone who
// learned a member's password and made a personal token loses it when an
// admin resets the password, as they lose the session.
func TestRedTeam_PasswordResetRevokesTokensMadeWithTheOldPassword(t *testing.T) {
	e := newAPI(t)
	m, mu := e.newUser(auth.Member)
	if res := m.call("GET", "/api/auth/me", nil); res.status != 200 {
		t.Fatalf("member's token before the reset: %d %s", res.status, res.body)
	}
	e.must(200, "PATCH", "/api/users/"+mu.ID, map[string]string{"password": "a brand new passphrase"}, nil)
	if res := m.call("GET", "/api/auth/me", nil); res.status != 401 {
		t.Errorf("member's token after an admin reset the password: %d %s, want 401", res.status, res.body)
	}
}

// TestRedTeam_DisablingAnAccountStopsItsRunningTurn: a member's turn is
// streaming when an admin disables the account; the turn stops at once
// (error account_disabled, what arrived is kept) instead of running on
// for someone who may no longer sign in, and another user's turn goes on.
func TestRedTeam_DisablingAnAccountStopsItsRunningTurn(t *testing.T) {
	e := newAPI(t)
	e.createDemo("demo")
	e.up.setBehavior("event-delay=60ms")
	m, mu := e.newUser(auth.Member)
	other, _ := e.newUser(auth.Member)
	ctx := context.Background()
	open := func(env *apiEnv) (*http.Response, convEvent) {
		res := env.open(ctx, "/api/responses", map[string]any{"input": "tell me a long story"})
		evs, _ := parseSSE(t, res.Body, func(ev sseEvent) bool { return ev.Name == "conversation" })
		var conv convEvent
		_ = json.Unmarshal(evs[len(evs)-1].Data, &conv)
		return res, conv
	}
	res, _ := open(m)
	defer res.Body.Close()
	otherRes, otherConv := open(other)
	defer otherRes.Body.Close()

	e.must(200, "PATCH", "/api/users/"+mu.ID, map[string]any{"disabled": true}, nil)
	rest, _ := parseSSE(t, res.Body, nil)
	if len(rest) == 0 || rest[len(rest)-1].Name != "error" || !strings.Contains(string(rest[len(rest)-1].Data), `"account_disabled"`) {
		t.Fatalf("the disabled member's stream after the PATCH ended with %v, want error account_disabled", lastEvent(rest))
	}
	// The other member's turn was not touched.
	e.up.setBehavior("")
	otherRest, _ := parseSSE(t, otherRes.Body, nil)
	if len(otherRest) == 0 || otherRest[len(otherRest)-1].Name != "completed" {
		t.Errorf("another member's turn in %s ended with %v, want it to complete", otherConv.ConversationID, lastEvent(otherRest))
	}
}

// lastEvent is the name and data of a stream's last event, for messages.
func lastEvent(evs []sseEvent) string {
	if len(evs) == 0 {
		return "(no events)"
	}
	return evs[len(evs)-1].Name + " " + string(evs[len(evs)-1].Data)
}
