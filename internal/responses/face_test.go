package responses

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/policy"
)

// The secrets of the test's server: none may appear in a request through
// the face.
const (
	secretURL    = "https://crm.internal.example:8443/mcp?api_key=url-secret-9f2c"
	secretHeader = "header-secret-7d41"
	secretTenant = "tenant-secret-3b88"
)

func faceTokens(t testing.TB) *gateway.Tokens {
	t.Helper()
	return gateway.NewTokens([]byte("capability-token-key-for-tests-0123456789"))
}

func faceClient(t testing.TB, layout Layout) (*Client, *gateway.Tokens) {
	t.Helper()
	tok := faceTokens(t)
	return New(Config{BaseURL: "http://127.0.0.1:1/v1/", APIKey: "sk", Model: "gpt-5", Layout: layout,
		Face: &Face{BaseURL: "https://toolgate.example.com/", Tokens: tok, TTL: 10 * time.Minute}}), tok
}

func secretServer(label string) policy.Server {
	return policy.Server{Label: label, URL: secretURL, Description: "CRM records", Enabled: true,
		Headers: map[string]string{"Authorization": "Bearer " + secretHeader, "X-Tenant": secretTenant}}
}

func grouped(names ...string) []policy.GroupedTool {
	out := make([]policy.GroupedTool, 0, len(names))
	for _, n := range names {
		out = append(out, policy.GroupedTool{Name: n, Source: policy.FromTool})
	}
	return out
}

// faceEntry is an mcp entry as the provider reads it.
type faceEntry struct {
	Label   string            `json:"server_label"`
	URL     string            `json:"server_url"`
	Headers map[string]string `json:"headers"`
	Rest    map[string]any    `json:"-"`
}

// entriesOf decodes the request's tools: each entry's label, URL and
// headers, and the rest of it.
func entriesOf(t testing.TB, body []byte) []faceEntry {
	t.Helper()
	var req struct{ Tools []json.RawMessage }
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatalf("the body is not JSON: %v\n%s", err, body)
	}
	out := make([]faceEntry, len(req.Tools))
	for i, raw := range req.Tools {
		if err := json.Unmarshal(raw, &out[i]); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, &out[i].Rest); err != nil {
			t.Fatal(err)
		}
		delete(out[i].Rest, "server_url")
		delete(out[i].Rest, "headers")
	}
	return out
}

// assertNoSecrets fails when body carries the server's URL or a stored
// header value.
func assertNoSecrets(t testing.TB, body []byte) {
	t.Helper()
	for _, s := range []string{secretURL, "crm.internal.example", "url-secret-9f2c", secretHeader, secretTenant, "X-Tenant"} {
		if bytes.Contains(body, []byte(s)) {
			t.Errorf("the request carries %q:\n%s", s, body)
		}
	}
}

// checkToken verifies an entry's Authorization header and returns its claims.
func checkToken(t testing.TB, tok *gateway.Tokens, e faceEntry) gateway.Claims {
	t.Helper()
	if len(e.Headers) != 1 {
		t.Errorf("entry %s: headers %v, want only Authorization", e.Label, e.Headers)
	}
	bearer := gateway.BearerToken(e.Headers["Authorization"])
	if !strings.HasPrefix(bearer, gateway.TokenPrefix) {
		t.Fatalf("entry %s: Authorization %q is not a capability token", e.Label, e.Headers["Authorization"])
	}
	c, err := tok.Verify(bearer)
	if err != nil {
		t.Fatalf("entry %s: the token does not verify: %v", e.Label, err)
	}
	return c
}

// Through the face, an entry names the face of its server with a token for
// the request's conversation, turn and server, and leaves the server's URL
// and headers out; the rest of the entry is the direct one's.
func TestBody_ThroughTheFace(t *testing.T) {
	c, tok := faceClient(t, LayoutDefault)
	groups := []policy.ServerTools{{Server: secretServer("crm"), Never: grouped("search"), Always: grouped("update_record")}}
	before := time.Now()
	body, labels, err := c.body(conversation.UpstreamRequest{ConversationID: "conv_a", TurnID: "turn_a", UserText: "hi", Tools: groups})
	if err != nil {
		t.Fatal(err)
	}
	assertNoSecrets(t, body)
	got := entriesOf(t, body)
	if len(got) != 1 || got[0].URL != "https://toolgate.example.com/mcp/crm" {
		t.Fatalf("entries %+v, want one with server_url https://toolgate.example.com/mcp/crm", got)
	}
	claims := checkToken(t, tok, got[0])
	if claims.ConversationID != "conv_a" || claims.TurnID != "turn_a" || claims.ServerLabel != "crm" {
		t.Errorf("the token is bound to %+v, want conv_a, turn_a, crm", claims)
	}
	if lo, hi := before.Add(10*time.Minute-time.Second), time.Now().Add(10*time.Minute); claims.ExpiresAt.Before(lo) || claims.ExpiresAt.After(hi) {
		t.Errorf("the token expires at %v, want MCP_TOKEN_TTL (10m) after the request (%v)", claims.ExpiresAt, before)
	}
	direct := entriesOf(t, []byte(`{"tools":`+string(RenderTools(groups, nil, LayoutDefault).JSON)+`}`))
	if diff := cmp.Diff(direct[0].Rest, got[0].Rest); diff != "" {
		t.Errorf("the entry but its URL and headers differs from the direct one (-direct +face):\n%s", diff)
	}
	if labels.Server("crm") != "crm" {
		t.Errorf("labels %v", labels)
	}
}

// The split layout's entries and an entry added for an answer name the
// face of the Toolgate server (not the upstream label) with a token for it.
func TestBody_ThroughTheFaceSplitAndAnswers(t *testing.T) {
	c, tok := faceClient(t, LayoutSplit)
	groups := []policy.ServerTools{
		{Server: secretServer("crm"), Never: grouped("search"), Always: grouped("update_record")},
		{Server: secretServer("wiki"), Never: grouped("read")},
	}
	// delete_record was asked under wiki__always, an entry this request
	// would not have: one is added for the answer.
	answers := []conversation.Answer{{ApprovalRequestID: "mcpr_1", Approve: true, ServerLabel: "wiki", UpstreamLabel: "wiki__always", ToolName: "purge"}}
	body, _, err := c.body(conversation.UpstreamRequest{ConversationID: "conv_b", TurnID: "turn_b", PreviousResponseID: "resp_1",
		Answers: answers, Tools: groups})
	if err != nil {
		t.Fatal(err)
	}
	assertNoSecrets(t, body)
	got := entriesOf(t, body)
	want := map[string]string{"crm__never": "crm", "crm__always": "crm", "wiki__never": "wiki", "wiki__always": "wiki"}
	if len(got) != len(want) {
		t.Fatalf("%d entries, want %d: %s", len(got), len(want), body)
	}
	for _, e := range got {
		server := want[e.Label]
		if e.URL != "https://toolgate.example.com/mcp/"+server {
			t.Errorf("entry %s: server_url %q, want the face of %s", e.Label, e.URL, server)
		}
		if cl := checkToken(t, tok, e); cl.ServerLabel != server || cl.TurnID != "turn_b" || cl.ConversationID != "conv_b" {
			t.Errorf("entry %s: token bound to %+v, want server %s of turn_b", e.Label, cl, server)
		}
	}
	if a := got[3]; a.Label != "wiki__always" || !cmp.Equal(a.Rest["allowed_tools"], []any{"purge"}) {
		t.Errorf("the answer's entry is %+v", a)
	}
}

// The cache keeps serving an entry's fragment (no render) while each
// request carries tokens of its own: the fragment holds no token, URL or
// header.
func TestBody_ThroughTheFaceKeepsTheCache(t *testing.T) {
	c, tok := faceClient(t, LayoutDefault)
	groups := []policy.ServerTools{{Server: secretServer("crm"), Never: grouped("search"), Always: grouped("update_record")}}
	var frag *cachedFrag
	var lastToken string
	for i, turn := range []string{"turn_1", "turn_2", "turn_3"} {
		body, _, err := c.body(conversation.UpstreamRequest{ConversationID: "conv_c", TurnID: turn, UserText: "hi", Tools: groups})
		if err != nil {
			t.Fatal(err)
		}
		e := entriesOf(t, body)[0]
		if cl := checkToken(t, tok, e); cl.TurnID != turn {
			t.Errorf("request %d: token of turn %s, want %s", i, cl.TurnID, turn)
		}
		if e.Headers["Authorization"] == lastToken {
			t.Errorf("request %d carries the token of the one before", i)
		}
		lastToken = e.Headers["Authorization"]
		f := c.tools.frags[fragKey{"crm", kindDefault}]
		if f == nil {
			t.Fatal("nothing cached")
		}
		if frag != nil && (f != frag || &f.json[0] != &frag.json[0]) {
			t.Errorf("request %d rendered the entry again", i)
		}
		frag = f
		for _, s := range []string{"tgc_", "server_url", "headers", secretHeader, "Authorization"} {
			if bytes.Contains(f.json, []byte(s)) {
				t.Errorf("the cached fragment holds %q: %s", s, f.json)
			}
		}
	}
}

// The same request built again (the transport sends it again) is the same
// bytes: its tokens expire when the first one's do.
func TestBody_ThroughTheFaceSameBytesAgain(t *testing.T) {
	c, _ := faceClient(t, LayoutDefault)
	req := conversation.UpstreamRequest{ConversationID: "conv_d", TurnID: "turn_d", UserText: "hi",
		Tools: []policy.ServerTools{{Server: secretServer("crm"), Never: grouped("search")}}}
	at := time.Now()
	pa, _, _ := c.bodyAt(req, at)
	pb, _, _ := c.bodyAt(req, at.Add(3*time.Second))
	a, b := pa.bytes(), pb.bytes()
	if pc, _, _ := c.bodyAt(req, at); !bytes.Equal(a, pc.bytes()) {
		t.Errorf("built again at the same time:\n%s\n%s", a, pc.bytes())
	}
	if bytes.Equal(a, b) {
		t.Error("tokens 3 s apart expire at the same time")
	}
}

// A request through the face that names no turn is refused: its tokens
// would be refused at every call.
func TestBody_ThroughTheFaceNeedsTheTurn(t *testing.T) {
	c, _ := faceClient(t, LayoutDefault)
	_, _, err := c.body(conversation.UpstreamRequest{ConversationID: "conv_e", UserText: "hi",
		Tools: []policy.ServerTools{{Server: secretServer("crm"), Never: grouped("search")}}})
	if !errors.Is(err, errNoTurn) {
		t.Errorf("err = %v, want errNoTurn", err)
	}
	// Without tools there is nothing to call: no turn needed.
	if _, _, err := c.body(conversation.UpstreamRequest{UserText: "hi"}); err != nil {
		t.Errorf("without tools: %v", err)
	}
}

func TestFaceURL_EscapesTheLabel(t *testing.T) {
	f := &Face{BaseURL: "https://toolgate.example.com/base/"}
	if got, want := f.URL("a b/c"), "https://toolgate.example.com/base/mcp/a%20b%2Fc"; got != want {
		t.Errorf("URL = %q, want %q", got, want)
	}
}

// A cache that holds an entry rendered for the server itself never hands
// it to a request through the face (one Client has one route, but the
// cache must not depend on it).
func TestBody_ThroughTheFaceNeverServesADirectFragment(t *testing.T) {
	c, _ := faceClient(t, LayoutDefault)
	groups := []policy.ServerTools{{Server: secretServer("crm"), Never: grouped("search")}}
	render(groups, nil, LayoutDefault, c.tools) // direct, into the same cache
	body, _, err := c.body(conversation.UpstreamRequest{ConversationID: "conv_f", TurnID: "turn_f", UserText: "hi", Tools: groups})
	if err != nil {
		t.Fatal(err)
	}
	assertNoSecrets(t, body)
	again := render(groups, nil, LayoutDefault, c.tools)
	if d := RenderTools(groups, nil, LayoutDefault).JSON; !bytes.Equal(again.appendJSON(nil), d) {
		t.Error("a direct render after one through the face differs from an uncached one")
	}
}

// BenchmarkRequestBody_ThroughTheFace_1000x100 is BenchmarkRequestBody's
// cached case through the face: 1,000 tokens minted per request.
func BenchmarkRequestBody_ThroughTheFace_1000x100(b *testing.B) {
	req := scaleRequest()
	c := New(Config{BaseURL: "http://127.0.0.1:1/v1/", APIKey: "sk", Model: "gpt-5", MaxTools: 100000,
		Face: &Face{BaseURL: "https://toolgate.example.com", Tokens: faceTokens(b)}})
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := c.body(req); err != nil {
			b.Fatal(err)
		}
	}
}
