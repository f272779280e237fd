package http_test

import (
	"context"
	"crypto/sha256"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/auth"
)

const (
	linkView     = "/api/approval-links/view"
	linkDecision = "/api/approval-links/decision"
)

// The payload carries both links (the request's path, the token after #)
// and Slack buttons for them; a retried delivery carries the same links;
// neither the delivery log nor approval_links holds a token.
// Catches: a token minted afresh per attempt (the retry's links differ),
// the token stored in plaintext, links missing from blocks.
func TestApprovalLinks_PayloadCarriesTheSameLinksOnEveryAttempt(t *testing.T) {
	e := newAPI(t)
	h := e.newLinkedHook(fastRetries)
	h.r.status = func(n int) int { // the first attempt fails, the retry is delivered
		if n == 1 {
			return 500
		}
		return 200
	}
	e.askFor("delete_forecast")
	_, _, ap := e.askToDeleteOslo()

	calls := h.r.waitFor(2, nil)
	p1, p2 := calls[0].Payload, calls[1].Payload
	if p1.ApproveURL == "" || p1.ApproveURL != p2.ApproveURL || p1.DenyURL != p2.DenyURL || p1.ApproveURL == p1.DenyURL {
		t.Fatalf("links differ between attempts or are missing: %q %q / %q %q", p1.ApproveURL, p1.DenyURL, p2.ApproveURL, p2.DenyURL)
	}
	if !strings.HasPrefix(p1.ApproveURL, "https://toolgate.example.com/link/"+ap.ID+"#tgl_") {
		t.Errorf("approve_url %q", p1.ApproveURL)
	}
	approve, deny := parseLink(t, p1.ApproveURL), parseLink(t, p1.DenyURL)
	if len(approve.token) != 47 || approve.id != ap.ID || deny.id != ap.ID {
		t.Errorf("links %+v %+v", approve, deny)
	}
	blocks := string(mustJSON(t, p1.Blocks))
	for _, want := range []string{p1.ApproveURL, p1.DenyURL, `"type":"actions"`, `"text":"Approve…"`, `"text":"Deny…"`} {
		if !strings.Contains(blocks, strings.ReplaceAll(want, "&", `\u0026`)) {
			t.Errorf("blocks lack %s: %s", want, blocks)
		}
	}
	if !strings.HasPrefix(p1.Text, "Approval needed: demo / delete_forecast") {
		t.Errorf("text %q", p1.Text)
	}
	var stored, hashes int
	ctx := context.Background()
	if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM webhook_deliveries WHERE data::text LIKE '%tgl_%'`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	for _, tok := range []string{approve.token, deny.token} {
		sum := sha256.Sum256([]byte(tok))
		var n int
		if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM approval_links WHERE token_hash = $1 AND approval_request_id = $2
			AND user_id = $3 AND position(convert_to($4, 'UTF8') IN token_hash) = 0`, sum[:], ap.ID, e.admin.ID, tok).Scan(&n); err != nil {
			t.Fatal(err)
		}
		hashes += n
	}
	if stored != 0 || hashes != 2 {
		t.Errorf("deliveries holding a token: %d; links stored by hash for the owner: %d, want 2", stored, hashes)
	}
}

// Opening a link (a bot's GET of the page, then the page's view) decides
// nothing and leaves the link usable. Catches: a view that claims the link
// or decides, a GET route that decides.
func TestApprovalLinks_OpeningDecidesNothing(t *testing.T) {
	e := newAPI(t)
	h := e.newLinkedHook(fastRetries)
	e.askFor("delete_forecast")
	_, _, ap := e.askToDeleteOslo()
	approve, _, p := h.linksFor(t, ap.ID)

	req, _ := http.NewRequestWithContext(context.Background(), "GET", strings.Replace(p.ApproveURL, "https://toolgate.example.com", e.url, 1), nil)
	req.Header.Set("User-Agent", "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	for range 2 {
		var v linkAnswer
		e.anon().must(200, "POST", linkView, approve.body(nil), &v)
		if v.Link.Decision != "approve" || v.Link.UsedAt != nil || v.Link.PersonEmail != e.admin.Email || v.Approval.ID != ap.ID ||
			v.Approval.ToolName != "delete_forecast" || v.Approval.State != "pending" || !strings.Contains(string(v.Approval.Arguments), "Oslo") {
			t.Fatalf("view %+v", v)
		}
	}
	time.Sleep(100 * time.Millisecond)
	if st, _ := e.approvalState(ap.ID); st != "pending" || e.toolCalls("delete_forecast") != 0 {
		t.Fatalf("after opening: state %s, calls %d", st, e.toolCalls("delete_forecast"))
	}
	var used *time.Time
	if err := e.pool.QueryRow(context.Background(), `SELECT max(used_at) FROM approval_links`).Scan(&used); err != nil || used != nil {
		t.Fatalf("a link was used by opening it: %v %v", used, err)
	}
}

// The approve link decides as the owner without a session, once: the tool
// runs exactly once, the decision is theirs and audited as by link; the
// same link again, and the deny link after it, are refused, changing
// nothing. Catches: no one-time check, decided_by not the owner, no audit.
func TestApprovalLinks_ApproveOnceAsTheOwner(t *testing.T) {
	e := newAPI(t)
	h := e.newLinkedHook(fastRetries)
	e.askFor("delete_forecast")
	_, conv, ap := e.askToDeleteOslo()
	approve, deny, _ := h.linksFor(t, ap.ID)

	var v linkAnswer
	e.anon().must(200, "POST", linkDecision, approve.body(nil), &v)
	if v.Approval.State != "approved" || v.Link.UsedAt == nil {
		t.Fatalf("decision %+v", v)
	}
	if st, by := e.approvalState(ap.ID); st != "approved" || by == nil || *by != e.admin.Email {
		t.Fatalf("state %s by %v, want approved by %s", st, by, e.admin.Email)
	}
	e.waitTranscript(conv, func(tr transcript) bool { return e.toolCalls("delete_forecast") == 1 && !tr.Conversation.Streaming })

	again := e.anon().call("POST", linkDecision, approve.body(nil))
	if view := e.anon().call("POST", linkView, approve.body(nil)); view.status != 409 || errCode(t, view) != "link_used" {
		t.Errorf("the used link's view: %d %s, want 409 link_used", view.status, view.body)
	}
	other := e.anon().call("POST", linkDecision, deny.body(map[string]any{"reason": "too late"}))
	if again.status != 409 || errCode(t, again) != "link_used" || other.status != 409 || errCode(t, other) != "link_request_decided" {
		t.Fatalf("second use: %d %s; deny after: %d %s", again.status, again.body, other.status, other.body)
	}
	time.Sleep(100 * time.Millisecond)
	if st, _ := e.approvalState(ap.ID); st != "approved" || e.toolCalls("delete_forecast") != 1 {
		t.Fatalf("after the refusals: %s, %d calls", st, e.toolCalls("delete_forecast"))
	}
	var linkUsed, decided int
	if err := e.pool.QueryRow(context.Background(), `SELECT
			count(*) FILTER (WHERE action = 'approval.link_used' AND actor = $1 AND after->>'link_id' = $2 AND after->>'approval_request_id' = $3),
			count(*) FILTER (WHERE action = 'approval.decide' AND actor = $1)
		FROM audit_log`, e.admin.Email, v.Link.ID, ap.ID).Scan(&linkUsed, &decided); err != nil {
		t.Fatal(err)
	}
	if linkUsed != 1 || decided != 1 {
		t.Errorf("audit: %d approval.link_used, %d approval.decide; want 1 each", linkUsed, decided)
	}
}

// Eight uses at once of the same link: exactly one decides, the others
// are told it was used, by the link's own claim (not by the engine's
// refusal of a second decision). Catches: a read-then-write claim.
func TestApprovalLinks_ConcurrentUsesDecideOnce(t *testing.T) {
	e := newAPI(t)
	h := e.newLinkedHook(fastRetries)
	e.askFor("delete_forecast")
	_, conv, ap := e.askToDeleteOslo()
	approve, _, _ := h.linksFor(t, ap.ID)

	const n = 8
	answers := make([]response, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			answers[i] = e.anon().call("POST", linkDecision, approve.body(nil))
		})
	}
	close(start)
	wg.Wait()
	ok, used := 0, 0
	for _, a := range answers {
		switch {
		case a.status == 200:
			ok++
		case a.status == 409 && errCode(t, a) == "link_used": // the claim refused it, before any decision was tried
			used++
		default:
			t.Errorf("answer %d %s", a.status, a.body)
		}
	}
	if ok != 1 || used != n-1 {
		t.Fatalf("%d decided, %d refused; want 1 and %d", ok, used, n-1)
	}
	e.waitTranscript(conv, func(tr transcript) bool { return e.toolCalls("delete_forecast") == 1 && !tr.Conversation.Streaming })
	time.Sleep(200 * time.Millisecond)
	if c := e.toolCalls("delete_forecast"); c != 1 {
		t.Fatalf("the tool ran %d times", c)
	}
}

// The deny link with a reason: the denial is the owner's and the model
// gets the reason. Catches: a reason dropped on the way to the decision.
func TestApprovalLinks_DenyReasonReachesTheModel(t *testing.T) {
	e := newAPI(t)
	h := e.newLinkedHook(fastRetries)
	e.askFor("delete_forecast")
	_, conv, ap := e.askToDeleteOslo()
	_, deny, _ := h.linksFor(t, ap.ID)

	var v linkAnswer
	e.anon().must(200, "POST", linkDecision, deny.body(map[string]any{"reason": "keep Oslo, it is sunny"}), &v)
	if v.Approval.State != "denied" || v.Approval.Reason == nil || *v.Approval.Reason != "keep Oslo, it is sunny" {
		t.Fatalf("decision %+v", v.Approval)
	}
	tr := e.waitTranscript(conv, func(tr transcript) bool {
		return strings.Contains(lastText(tr), `Reason given: "keep Oslo, it is sunny"`) && !tr.Conversation.Streaming
	})
	if e.toolCalls("delete_forecast") != 0 || tr.Conversation.Streaming {
		t.Fatalf("after the denial: %d calls", e.toolCalls("delete_forecast"))
	}
}

// A link that cannot be used says why, with a code, and changes nothing:
// one byte changed, another request's, expired (the link's time, and the
// request's own), someone else signed in, a bad bearer token, bad input.
// Catches: a missing check of each kind (the request would be decided).
func TestApprovalLinks_RefusalsChangeNothing(t *testing.T) {
	e := newAPI(t)
	h := e.newLinkedHook(fastRetries)
	e.askFor("delete_forecast")
	_, _, ap := e.askToDeleteOslo()
	_, _, other := e.askToDeleteOslo() // another conversation's request
	approve, _, _ := h.linksFor(t, ap.ID)
	otherApprove, _, _ := h.linksFor(t, other.ID)
	member, _ := e.newUser(auth.Member)

	flip := func(tok string, i int) string {
		b := []byte(tok)
		b[i] = map[bool]byte{true: 'B', false: 'A'}[b[i] == 'A']
		return string(b)
	}
	expire := func(qs ...string) func() {
		return func() {
			for _, q := range qs {
				if _, err := e.pool.Exec(context.Background(), q, ap.ID); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	for _, tc := range []struct {
		name   string
		as     *apiEnv
		body   map[string]any
		before func()
		status int
		code   string
	}{
		{"last byte changed", e.anon(), map[string]any{"approval_request_id": ap.ID, "token": flip(approve.token, len(approve.token)-1)}, nil, 404, "link_invalid"},
		{"middle byte changed", e.anon(), map[string]any{"approval_request_id": ap.ID, "token": flip(approve.token, 20)}, nil, 404, "link_invalid"},
		{"cut short", e.anon(), map[string]any{"approval_request_id": ap.ID, "token": approve.token[:46]}, nil, 404, "link_invalid"},
		{"another request's link", e.anon(), map[string]any{"approval_request_id": ap.ID, "token": otherApprove.token}, nil, 404, "link_other_request"},
		{"someone else signed in", member, approve.body(nil), nil, 403, "link_other_person"},
		{"a bad bearer token", e.withToken("tg_nope"), approve.body(nil), nil, 401, "unauthenticated"},
		{"no token", e.anon(), map[string]any{"approval_request_id": ap.ID}, nil, 400, "invalid_link_request"},
		{"an unknown field", e.anon(), approve.body(map[string]any{"approve": false}), nil, 400, "unknown_field"},
		{"the link expired", e.anon(), approve.body(nil), expire(`UPDATE approval_links SET expires_at = now() - interval '1 second' WHERE approval_request_id = $1`), 409, "link_expired"},
		{"the request ran out of time", e.anon(), approve.body(nil), expire(`UPDATE approval_links SET expires_at = NULL WHERE approval_request_id = $1`,
			`UPDATE approval_requests SET requested_at = now() - interval '2 days' WHERE id = $1`), 409, "link_expired"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.before != nil {
				tc.before()
			}
			for _, path := range []string{linkView, linkDecision} {
				res := tc.as.call("POST", path, tc.body)
				if res.status != tc.status || errCode(t, res) != tc.code {
					t.Fatalf("%s: %d %s, want %d %s", path, res.status, res.body, tc.status, tc.code)
				}
			}
			if st, _ := e.approvalState(ap.ID); st == "approved" || st == "denied" {
				t.Fatalf("the request was decided: %s", st)
			}
		})
	}
	var used int
	if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM approval_links WHERE used_at IS NOT NULL`).Scan(&used); err != nil || used != 0 {
		t.Fatalf("%d links used by refused requests (%v)", used, err)
	}
	if e.toolCalls("delete_forecast") != 0 {
		t.Fatal("the tool ran")
	}
	// The owner signed in may use their own link.
	var v linkAnswer
	e.must(200, "POST", linkView, otherApprove.body(nil), &v)
}
