package http_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/auth"
)

// openRoutes need no credentials.
var openRoutes = map[string]bool{
	"POST /api/auth/login": true, "GET /api/auth/status": true, "POST /api/auth/setup": true,
	"GET /api/auth/link": true, "GET /api/auth/oidc/login": true, "GET /api/auth/oidc/callback": true,
	// A signed approval link's token is its credential (approvallinks.go);
	// their own tests prove every other caller is refused.
	"POST /api/approval-links/view": true, "POST /api/approval-links/decision": true,
}

// adminRoutes are for admins only: a member gets 403.
var adminRoutes = map[string]bool{
	"POST /api/mcp/servers": true, "PATCH /api/mcp/servers/:serverId": true, "DELETE /api/mcp/servers/:serverId": true,
	"POST /api/mcp/servers/:serverId/refresh": true, "PUT /api/settings": true,
	"PUT /api/mcp/servers/:serverId/tools/:toolName/rules": true, "PUT /api/mcp/servers/:serverId/rules": true, "PUT /api/rules": true,
	"GET /api/users": true, "POST /api/users": true, "PATCH /api/users/:userId": true, "DELETE /api/users/:userId": true,
}

// TestAuth_EveryRouteSaysWhoMayCallIt walks every /api route: without
// credentials each one but the sign-in routes is 401 unauthenticated, and
// a member calling an admin's route is 403 admin_only, with nothing changed.
func TestAuth_EveryRouteSaysWhoMayCallIt(t *testing.T) {
	e := newAPI(t)
	e.createDemo("demo")
	member, _ := e.newUser(auth.Member)
	anon := e.anon()
	before := e.snapshot()
	seenAdmin := map[string]bool{}
	for _, r := range e.api.Routes() {
		if !strings.HasPrefix(r.Path, "/api/") {
			continue
		}
		key := r.Method + " " + r.Path
		path := strings.NewReplacer(":serverId", "demo", ":toolName", "get_forecast", ":userId", e.admin.ID,
			":tokenId", "tok_x", ":conversationId", "conv_x").Replace(r.Path)
		var body any
		if r.Method != "GET" && r.Method != "DELETE" && r.Method != "HEAD" {
			body = map[string]any{}
		}
		res := anon.call(r.Method, path, body)
		if openRoutes[key] {
			if res.status == 401 && strings.Contains(string(res.body), `"unauthenticated"`) {
				t.Errorf("%s is open but answered 401 unauthenticated", key)
			}
		} else {
			var got apiError
			_ = json.Unmarshal(res.body, &got)
			if res.status != 401 || got.Error.Code != "unauthenticated" || !strings.Contains(got.Error.Message, "Bearer") {
				t.Errorf("%s without credentials: %d %s, want 401 unauthenticated", key, res.status, res.body)
			}
		}
		if adminRoutes[key] {
			seenAdmin[key] = true
			var got apiError
			res := member.call(r.Method, path, body)
			_ = json.Unmarshal(res.body, &got)
			if res.status != 403 || got.Error.Code != "admin_only" {
				t.Errorf("%s as a member: %d %s, want 403 admin_only", key, res.status, res.body)
			}
		}
	}
	for k := range adminRoutes {
		if !seenAdmin[k] {
			t.Errorf("admin route %s is not served", k)
		}
	}
	if after := e.snapshot(); !bytes.Equal(mustJSON(t, before), mustJSON(t, after)) {
		t.Errorf("refused requests changed the state:\nbefore %s\nafter  %s", mustJSON(t, before), mustJSON(t, after))
	}
	// What stays open: health and the web app.
	for _, p := range []string{"/healthz", "/readyz", "/", "/setup"} {
		if res := anon.call("GET", p, nil); res.status == 401 {
			t.Errorf("GET %s without credentials: 401", p)
		}
	}
	// A member reads servers, tools, settings, audit and info.
	for _, p := range []string{"/api/mcp/servers", "/api/mcp/servers/demo/tools", "/api/settings", "/api/info", "/api/auth/me", "/api/tokens"} {
		if res := member.call("GET", p, nil); res.status != 200 {
			t.Errorf("GET %s as a member: %d %s", p, res.status, res.body)
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// login posts credentials and returns the response and the session cookie.
func (e *apiEnv) login(email, password string, header map[string]string) (response, *http.Cookie) {
	e.t.Helper()
	raw, _ := json.Marshal(map[string]string{"email": email, "password": password})
	req, _ := http.NewRequest("POST", e.url+"/api/auth/login", bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	for _, c := range res.Cookies() {
		if c.Name == "toolgate_session" {
			return response{res.StatusCode, res.Header, body}, c
		}
	}
	return response{res.StatusCode, res.Header, body}, nil
}

// withCookie sends a request with a session cookie only.
func (e *apiEnv) withCookie(c *http.Cookie, method, path string) response {
	e.t.Helper()
	req, _ := http.NewRequest(method, e.url+path, nil)
	req.AddCookie(c)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return response{res.StatusCode, res.Header, body}
}

const memberPassword = "correct horse battery"

func TestAuth_LoginSetsASafeCookieAndLogoutRevokesIt(t *testing.T) {
	e := newAPI(t)
	_, u := e.newUser(auth.Member)
	res, c := e.login(strings.ToUpper(u.Email), memberPassword, nil)
	if res.status != 200 || c == nil {
		t.Fatalf("login: %d %s", res.status, res.body)
	}
	var got map[string]any
	_ = json.Unmarshal(res.body, &got)
	if got["id"] != u.ID || got["email"] != u.Email || got["role"] != "member" {
		t.Errorf("login answer %s", res.body)
	}
	if !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Secure || c.Path != "/" {
		t.Errorf("cookie %+v: want HttpOnly, SameSite=Lax, not Secure over plain http", c)
	}
	if res := e.withCookie(c, "GET", "/api/auth/me"); res.status != 200 || !strings.Contains(string(res.body), u.ID) {
		t.Fatalf("me: %d %s", res.status, res.body)
	}
	var hashes int
	if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM sessions WHERE token_hash = $1`,
		auth.HashSecret(c.Value)).Scan(&hashes); err != nil || hashes != 1 {
		t.Errorf("the session is not stored under the cookie's SHA-256: %d %v", hashes, err)
	}
	if res := e.withCookie(c, "POST", "/api/auth/logout"); res.status != 204 {
		t.Fatalf("logout: %d %s", res.status, res.body)
	}
	if res := e.withCookie(c, "GET", "/api/auth/me"); res.status != 401 {
		t.Errorf("me after logout: %d %s", res.status, res.body)
	}
	// X-Forwarded-Proto counts only behind a trusted proxy.
	if _, c := e.login(u.Email, memberPassword, map[string]string{"X-Forwarded-Proto": "https"}); c == nil || c.Secure {
		t.Errorf("untrusted X-Forwarded-Proto made the cookie Secure: %+v", c)
	}
	p := newAPIWith(t, envOptions{trustProxy: true})
	_, pu := p.newUser(auth.Member)
	if _, c := p.login(pu.Email, memberPassword, map[string]string{"X-Forwarded-Proto": "https"}); c == nil || !c.Secure {
		t.Errorf("behind a trusted https proxy the cookie is not Secure: %+v", c)
	}
}

func TestAuth_WrongPasswordAndUnknownEmailLookTheSame(t *testing.T) {
	e := newAPI(t)
	_, u := e.newUser(auth.Member)
	wrong, c1 := e.login(u.Email, "not the password", nil)
	unknown, c2 := e.login("nobody@toolgate.test", "not the password", nil)
	if wrong.status != 401 || unknown.status != 401 || c1 != nil || c2 != nil {
		t.Fatalf("wrong %d, unknown %d", wrong.status, unknown.status)
	}
	if string(wrong.body) != string(unknown.body) || !strings.Contains(string(wrong.body), "invalid_credentials") {
		t.Errorf("answers differ:\n%s\n%s", wrong.body, unknown.body)
	}
}

func TestAuth_FailedLoginsAreRateLimited(t *testing.T) {
	e := newAPI(t)
	_, u := e.newUser(auth.Member)
	for i := range 5 {
		if res, _ := e.login(u.Email, "wrong password", nil); res.status != 401 {
			t.Fatalf("failure %d: %d %s", i+1, res.status, res.body)
		}
	}
	res, c := e.login(u.Email, memberPassword, nil)
	if res.status != 429 || c != nil || !strings.Contains(string(res.body), "too_many_attempts") {
		t.Fatalf("sixth try: %d %s", res.status, res.body)
	}
	if s, err := strconv.Atoi(res.header.Get("Retry-After")); err != nil || s < 1 || s > 900 {
		t.Errorf("Retry-After %q", res.header.Get("Retry-After"))
	}
	// Once the window has passed, the right password works again.
	if _, err := e.pool.Exec(context.Background(), `UPDATE login_failures SET at = at - interval '16 minutes'`); err != nil {
		t.Fatal(err)
	}
	if res, c := e.login(u.Email, memberPassword, nil); res.status != 200 || c == nil {
		t.Errorf("after the window: %d %s", res.status, res.body)
	}
}

func TestAuth_IdleExpiredRevokedAndDisabledAre401(t *testing.T) {
	e := newAPI(t)
	member, u := e.newUser(auth.Member)
	session := func() *http.Cookie {
		_, c := e.login(u.Email, memberPassword, nil)
		if c == nil {
			t.Fatal("no cookie")
		}
		return c
	}
	for name, q := range map[string]string{
		"idle":    `UPDATE sessions SET last_seen_at = now() - interval '13 hours' WHERE token_hash = $1`,
		"expired": `UPDATE sessions SET expires_at = now() - interval '1 second' WHERE token_hash = $1`,
		"revoked": `DELETE FROM sessions WHERE token_hash = $1`,
	} {
		c := session()
		if _, err := e.pool.Exec(context.Background(), q, auth.HashSecret(c.Value)); err != nil {
			t.Fatal(err)
		}
		if res := e.withCookie(c, "GET", "/api/auth/me"); res.status != 401 {
			t.Errorf("%s session: %d %s", name, res.status, res.body)
		}
	}
	// last_seen_at moves when a minute has passed, so the session stays alive.
	c := session()
	if _, err := e.pool.Exec(context.Background(), `UPDATE sessions SET last_seen_at = now() - interval '11 hours' WHERE token_hash = $1`, auth.HashSecret(c.Value)); err != nil {
		t.Fatal(err)
	}
	e.withCookie(c, "GET", "/api/auth/me")
	var idle float64
	_ = e.pool.QueryRow(context.Background(), `SELECT extract(epoch FROM now() - last_seen_at) FROM sessions WHERE token_hash = $1`, auth.HashSecret(c.Value)).Scan(&idle)
	if idle > 60 {
		t.Errorf("last_seen_at did not move: idle %.0fs", idle)
	}
	// Disabling the user ends its session and its tokens.
	e.must(204, "DELETE", "/api/users/"+u.ID, nil, nil)
	if res := e.withCookie(c, "GET", "/api/auth/me"); res.status != 401 {
		t.Errorf("disabled user's session: %d", res.status)
	}
	if res := member.call("GET", "/api/auth/me", nil); res.status != 401 {
		t.Errorf("disabled user's token: %d", res.status)
	}
	if res, _ := e.login(u.Email, memberPassword, nil); res.status != 401 {
		t.Errorf("disabled user's login: %d %s", res.status, res.body)
	}
	// A bearer that is not a token is 401, not a cookie fallback.
	bad := *e
	bad.token = "tg_nonsense"
	if res := bad.call("GET", "/api/auth/me", nil); res.status != 401 {
		t.Errorf("unknown token: %d", res.status)
	}
}

func TestTokens_ShownOnceStoredHashedAndOwnOnly(t *testing.T) {
	e := newAPI(t)
	member, _ := e.newUser(auth.Member)
	var created struct{ ID, Name, Token string }
	member.must(201, "POST", "/api/tokens", map[string]any{"name": "laptop curl"}, &created)
	if !strings.HasPrefix(created.Token, "tg_") || len(created.Token) < 40 || created.Name != "laptop curl" {
		t.Fatalf("created %+v", created)
	}
	var list struct{ Tokens []map[string]any }
	res := member.must(200, "GET", "/api/tokens", nil, &list)
	if strings.Contains(string(res.body), created.Token) || len(list.Tokens) != 2 {
		t.Errorf("list shows the secret or misses tokens: %s", res.body)
	}
	var stored []byte
	if err := e.pool.QueryRow(context.Background(), `SELECT token_hash FROM api_tokens WHERE id = $1`, created.ID).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(created.Token))
	if !bytes.Equal(stored, sum[:]) {
		t.Errorf("stored %x, want the SHA-256 of the token", stored)
	}
	var leaks int
	_ = e.pool.QueryRow(context.Background(), `SELECT count(*) FROM api_tokens t WHERE t::text LIKE '%' || $1 || '%'`, created.Token[3:20]).Scan(&leaks)
	if leaks != 0 {
		t.Error("the token's secret is stored")
	}
	with := *member
	with.token = created.Token
	with.must(200, "GET", "/api/auth/me", nil, nil)
	// Another user cannot see or delete it.
	var adminList struct{ Tokens []map[string]any }
	e.must(200, "GET", "/api/tokens", nil, &adminList)
	for _, tk := range adminList.Tokens {
		if tk["id"] == created.ID {
			t.Error("the admin's list shows the member's token")
		}
	}
	e.must(404, "DELETE", "/api/tokens/"+created.ID, nil, nil)
	member.must(204, "DELETE", "/api/tokens/"+created.ID, nil, nil)
	if res := with.call("GET", "/api/auth/me", nil); res.status != 401 {
		t.Errorf("deleted token: %d", res.status)
	}
	member.must(400, "POST", "/api/tokens", map[string]any{"name": " "}, nil)
}

func TestUsers_AdminManagesAccountsButNeverTheLastAdmin(t *testing.T) {
	e := newAPI(t)
	var u struct{ ID, Email, Role string }
	e.must(201, "POST", "/api/users", map[string]any{"email": "Ada@Example.com", "password": "long enough pw", "role": "member"}, &u)
	if u.Email != "ada@example.com" || u.Role != "member" {
		t.Errorf("created %+v", u)
	}
	e.must(409, "POST", "/api/users", map[string]any{"email": "ada@example.com", "password": "long enough pw"}, nil)
	for name, body := range map[string]map[string]any{
		"short password": {"email": "b@example.com", "password": "short"},
		"long password":  {"email": "b@example.com", "password": strings.Repeat("x", 1025)},
		"bad email":      {"email": "not an email", "password": "long enough pw"},
		"bad role":       {"email": "b@example.com", "password": "long enough pw", "role": "owner"},
	} {
		var got apiError
		e.must(400, "POST", "/api/users", body, &got)
		if got.Error.Message == "" || len(got.Error.Fields) == 0 {
			t.Errorf("%s: %+v", name, got)
		}
	}
	if res, c := e.login("ada@example.com", "long enough pw", nil); res.status != 200 || c == nil {
		t.Fatalf("the new user cannot sign in: %d %s", res.status, res.body)
	}
	e.must(404, "PATCH", "/api/users/usr_000000000000000000000000", map[string]any{"role": "admin"}, nil)
	var got apiError
	e.must(409, "PATCH", "/api/users/"+e.admin.ID, map[string]any{"role": "member"}, &got)
	if got.Error.Code != "last_admin" {
		t.Errorf("demote the last admin: %+v", got)
	}
	e.must(409, "DELETE", "/api/users/"+e.admin.ID, nil, nil)
	e.must(200, "PATCH", "/api/users/"+u.ID, map[string]any{"role": "admin"}, nil)
	e.must(200, "PATCH", "/api/users/"+e.admin.ID, map[string]any{"role": "member"}, nil)
	e.must(403, "GET", "/api/users", nil, nil) // the env's user is a member now
}

func TestAuth_StatusAndNoneMode(t *testing.T) {
	e := newAPI(t)
	var st map[string]any
	e.anon().must(200, "GET", "/api/auth/status", nil, &st)
	if st["auth_mode"] != "local" || st["setup_required"] != false || st["oidc"] != false {
		t.Errorf("status %v", st)
	}
	n := newAPIWith(t, envOptions{authMode: auth.ModeNone})
	var me map[string]any
	n.anon().must(200, "GET", "/api/auth/me", nil, &me)
	if me["email"] != auth.LocalEmail || me["role"] != "admin" {
		t.Errorf("none mode acts as %v", me)
	}
}

// TestAuth_AdminOnlyRefusesMembersBeforeTheHandlerRuns: the route
// middleware, not only the services behind it, refuses a member on every
// admin route. A body the handler would reject (an unknown field) shows who
// answered: the middleware says 403 admin_only before the handler could
// say 400. Routes without a body (GET /api/users, the DELETEs) are guarded
// by the services too: TestAuth_EveryRouteSaysWhoMayCallIt covers those.
func TestAuth_AdminOnlyRefusesMembersBeforeTheHandlerRuns(t *testing.T) {
	e := newAPI(t)
	e.createDemo("demo")
	member, _ := e.newUser(auth.Member)
	// The admin routes whose handler decodes a JSON body.
	var decoding []string
	for _, r := range e.api.Routes() {
		key := r.Method + " " + r.Path
		if adminRoutes[key] && (r.Method == "POST" || r.Method == "PUT" || r.Method == "PATCH") && !strings.HasSuffix(r.Path, "/refresh") {
			decoding = append(decoding, r.Method+" "+strings.NewReplacer(":serverId", "demo", ":toolName", "get_forecast", ":userId", e.admin.ID).Replace(r.Path))
		}
	}
	if len(decoding) != 8 {
		t.Fatalf("admin routes with a body: %v", decoding)
	}
	unknownField := map[string]any{"no_such_field": true}
	before := e.snapshot()
	for _, route := range decoding {
		method, path, _ := strings.Cut(route, " ")
		res := member.call(method, path, unknownField)
		var got apiError
		_ = json.Unmarshal(res.body, &got)
		if res.status != 403 || got.Error.Code != "admin_only" {
			t.Errorf("%s as a member with a body the handler refuses: %d %s, want 403 admin_only", route, res.status, res.body)
		}
	}
	if after := e.snapshot(); !bytes.Equal(mustJSON(t, before), mustJSON(t, after)) {
		t.Errorf("refused requests changed the state:\nbefore %s\nafter  %s", mustJSON(t, before), mustJSON(t, after))
	}
	// The same body from an admin reaches the handler, which refuses it:
	// so the member's 403 came from the middleware.
	for _, route := range decoding {
		method, path, _ := strings.Cut(route, " ")
		if res := e.call(method, path, unknownField); res.status != 400 {
			t.Errorf("%s as an admin with an unknown field: %d %s, want 400 from the handler", route, res.status, res.body)
		}
	}
}

// TestAuth_DisabledInTheDatabaseRefusesLiveTokensAndSessions: disabling an
// account through the API deletes its sessions and tokens; this disables
// it behind the API's back (plain SQL, rows kept), and the token and the
// session still stop working at once, because every request reads the
// account's flag.
func TestAuth_DisabledInTheDatabaseRefusesLiveTokensAndSessions(t *testing.T) {
	e := newAPI(t)
	member, u := e.newUser(auth.Member)
	_, c := e.login(u.Email, memberPassword, nil)
	if c == nil {
		t.Fatal("no session")
	}
	member.must(200, "GET", "/api/auth/me", nil, nil)
	if res := e.withCookie(c, "GET", "/api/auth/me"); res.status != 200 {
		t.Fatalf("session before: %d", res.status)
	}
	setDisabled := func(v bool) {
		if _, err := e.pool.Exec(context.Background(), `UPDATE users SET disabled = $2 WHERE id = $1`, u.ID, v); err != nil {
			t.Fatal(err)
		}
	}
	setDisabled(true)
	var live int
	if err := e.pool.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM api_tokens WHERE user_id = $1)
		+ (SELECT count(*) FROM sessions WHERE user_id = $1)`, u.ID).Scan(&live); err != nil || live != 2 {
		t.Fatalf("the token and session rows should still be there: %d %v", live, err)
	}
	var got apiError
	member.must(401, "GET", "/api/auth/me", nil, &got)
	if got.Error.Code != "unauthenticated" {
		t.Errorf("token of a disabled user: %+v", got)
	}
	if res := e.withCookie(c, "GET", "/api/auth/me"); res.status != 401 {
		t.Errorf("session of a disabled user: %d %s", res.status, res.body)
	}
	member.must(401, "POST", "/api/conversations", map[string]any{}, nil)
	// The flag is what refuses them: enabled again, both work.
	setDisabled(false)
	member.must(200, "GET", "/api/auth/me", nil, nil)
	if res := e.withCookie(c, "GET", "/api/auth/me"); res.status != 200 {
		t.Errorf("session after enabling again: %d", res.status)
	}
}
