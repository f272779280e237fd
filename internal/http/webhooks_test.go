package http_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/netguard"
	"github.com/toolgate/toolgate/internal/postgres/notify"
	"github.com/toolgate/toolgate/internal/webhook"
)

// hookReceiver is a local webhook receiver that checks every request's
// signature as a real receiver would and records what arrived.
type hookReceiver struct {
	t      testing.TB
	url    string
	mu     sync.Mutex
	secret string
	calls  []hookCall
	// status answers the nth request (1 for the first) of a delivery id.
	status func(n int) int
	delay  time.Duration
}

type hookCall struct {
	Delivery, Event, ContentType string
	Payload                      webhook.Payload
	SigErr                       error
}

func newReceiver(t testing.TB) *hookReceiver {
	r := &hookReceiver{t: t, status: func(int) int { return 200 }}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		time.Sleep(r.delay)
		r.mu.Lock()
		c := hookCall{Delivery: req.Header.Get(webhook.HeaderDelivery), Event: req.Header.Get(webhook.HeaderEvent),
			ContentType: req.Header.Get("Content-Type"),
			SigErr:      verifySignature(r.secret, req.Header.Get("Toolgate-Signature"), body)}
		if err := json.Unmarshal(body, &c.Payload); err != nil {
			c.SigErr = err
		}
		r.calls = append(r.calls, c)
		n := 0
		for _, x := range r.calls {
			if x.Delivery == c.Delivery {
				n++
			}
		}
		status := r.status(n)
		r.mu.Unlock()
		w.WriteHeader(status)
		_, _ = w.Write([]byte(strings.Repeat("ignored ", 100)))
	}))
	t.Cleanup(srv.Close)
	r.url = srv.URL + "/hook?token=abc123"
	return r
}

// verifySignature checks a Toolgate-Signature header the way docs/webhooks.md
// tells receivers to, independently of package webhook: HMAC-SHA256 of
// "<t>.<body>" under the secret, and t within five minutes of now.
func verifySignature(secret, header string, body []byte) error {
	var ts, sig string
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(part, "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sig = v
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("no timestamp in %q", header)
	}
	if age := time.Since(time.Unix(sec, 0)); age > 5*time.Minute || age < -5*time.Minute {
		return fmt.Errorf("timestamp %s is %s old", ts, age)
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts + "." + string(body)))
	if !hmac.Equal([]byte(hex.EncodeToString(m.Sum(nil))), []byte(sig)) {
		return fmt.Errorf("signature %q does not match", header)
	}
	return nil
}

func (r *hookReceiver) got() []hookCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// waitFor polls until n calls satisfying keep arrived, and returns them.
func (r *hookReceiver) waitFor(n int, keep func(hookCall) bool) []hookCall {
	r.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var out []hookCall
		for _, c := range r.got() {
			if keep == nil || keep(c) {
				out = append(out, c)
			}
		}
		if len(out) >= n {
			for _, c := range out {
				if c.SigErr != nil {
					r.t.Fatalf("delivery %s: %v", c.Delivery, c.SigErr)
				}
			}
			return out
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("got %d matching webhook calls, want %d; all: %+v", len(out), n, r.got())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type webhookJSON struct {
	ID      string   `json:"id"`
	URL     string   `json:"url"`
	Events  []string `json:"events"`
	Enabled bool     `json:"enabled"`
	Secret  *string  `json:"secret"`
}

type deliveryJSON struct {
	ID            string     `json:"id"`
	Event         string     `json:"event"`
	State         string     `json:"state"`
	Attempts      int        `json:"attempts"`
	Status        *int       `json:"status"`
	Error         *string    `json:"error"`
	NextAttemptAt *time.Time `json:"next_attempt_at"`
	DeliveredAt   *time.Time `json:"delivered_at"`
	Log           []struct {
		Attempt int     `json:"attempt"`
		Status  *int    `json:"status"`
		Error   *string `json:"error"`
	} `json:"attempt_log"`
}

// createHook registers r for events and hands it the secret.
func (e *apiEnv) createHook(r *hookReceiver, events ...string) webhookJSON {
	e.t.Helper()
	var w webhookJSON
	e.must(201, "POST", "/api/webhooks", map[string]any{"url": r.url, "events": events}, &w)
	r.mu.Lock()
	r.secret = *w.Secret
	r.mu.Unlock()
	return w
}

func (e *apiEnv) deliveries(id string) []deliveryJSON {
	e.t.Helper()
	var out struct {
		Deliveries []deliveryJSON `json:"deliveries"`
	}
	e.must(200, "GET", "/api/webhooks/"+id+"/deliveries", nil, &out)
	return out.Deliveries
}

// fastRetries is a schedule for tests: retries within tens of milliseconds.
var fastRetries = webhook.Config{MaxAttempts: 6, RetryBase: 20 * time.Millisecond, RetryMax: 100 * time.Millisecond,
	Timeout: 2 * time.Second, Lease: 5 * time.Second, Poll: 10 * time.Millisecond}

// dispatcher is a replica's dispatcher on the env's database.
func (e *apiEnv) dispatcher(owner string, c webhook.Config) *webhook.Dispatcher {
	g, err := netguard.New(netguard.Config{AllowedHosts: "127.0.0.1"})
	if err != nil {
		e.t.Fatal(err)
	}
	return &webhook.Dispatcher{Store: e.hooks, Client: webhook.NewClient(g.Transport(), c.Timeout), Owner: owner,
		PublicURL: "https://toolgate.example.com", Log: e.log, Config: c}
}

// wakeOnNotify wakes d on the webhooks channel, as cmd/api does; it
// returns once listening.
func (e *apiEnv) wakeOnNotify(d *webhook.Dispatcher) {
	ctx, cancel := context.WithCancel(context.Background())
	e.t.Cleanup(cancel)
	listening := make(chan struct{})
	var once sync.Once
	l := notify.NewListener(e.pool, e.log, notify.Funcs{Notify: func(string, []byte) { d.Wake() },
		Connect: func() { once.Do(func() { close(listening) }) }})
	go l.Run(ctx, webhook.Channel)
	<-listening
}

// run runs d until the test ends.
func run(t testing.TB, d *webhook.Dispatcher) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); d.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

func TestWebhooks_AdminOnly(t *testing.T) {
	e := newAPI(t)
	r := newReceiver(t)
	w := e.createHook(r, "approval.required")
	member, _ := e.newUser(auth.Member)
	routes := []struct{ method, path string }{
		{"GET", "/api/webhooks"}, {"POST", "/api/webhooks"},
		{"GET", "/api/webhooks/" + w.ID}, {"PATCH", "/api/webhooks/" + w.ID}, {"DELETE", "/api/webhooks/" + w.ID},
		{"POST", "/api/webhooks/" + w.ID + "/test"}, {"GET", "/api/webhooks/" + w.ID + "/deliveries"},
	}
	body := map[string]any{"url": "http://127.0.0.1:1/x", "events": []string{"approval.required"}, "enabled": false}
	for _, rt := range routes {
		if res := e.anon().call(rt.method, rt.path, body); res.status != 401 {
			t.Errorf("anonymous %s %s: %d, want 401 (%s)", rt.method, rt.path, res.status, res.body)
		}
		if res := member.call(rt.method, rt.path, body); res.status != 403 {
			t.Errorf("member %s %s: %d, want 403 (%s)", rt.method, rt.path, res.status, res.body)
		}
	}
	for _, rt := range routes[2:] {
		path := strings.Replace(rt.path, w.ID, "wh_nope", 1)
		if res := e.call(rt.method, path, body); res.status != 404 || !strings.Contains(string(res.body), "webhook_not_found") {
			t.Errorf("admin %s %s: %d %s, want 404 webhook_not_found", rt.method, path, res.status, res.body)
		}
	}
	// Nothing the refused calls sent changed the webhook, and nothing was queued.
	var got webhookJSON
	e.must(200, "GET", "/api/webhooks/"+w.ID, nil, &got)
	if !got.Enabled || strings.Contains(got.URL, "abc123") || !strings.Contains(got.URL, "/hook?token=") {
		t.Errorf("webhook after refused calls: %+v", got)
	}
	if ds := e.deliveries(w.ID); len(ds) != 0 {
		t.Errorf("deliveries queued by refused calls: %+v", ds)
	}
}

func TestWebhooks_SecretShownOnceURLMaskedChangesAudited(t *testing.T) {
	e := newAPI(t)
	r := newReceiver(t)
	w := e.createHook(r, "approval.required", "decision.recorded")
	if w.Secret == nil || !strings.HasPrefix(*w.Secret, "whsec_") || strings.Contains(w.URL, "abc123") {
		t.Fatalf("create answered %+v", w)
	}
	res := e.must(200, "GET", "/api/webhooks/"+w.ID, nil, nil)
	list := e.must(200, "GET", "/api/webhooks", nil, nil)
	for _, b := range [][]byte{res.body, list.body} {
		if strings.Contains(string(b), *w.Secret) || strings.Contains(string(b), `"secret"`) || strings.Contains(string(b), "abc123") {
			t.Errorf("the secret or the URL's token is shown again: %s", b)
		}
	}
	var upd webhookJSON
	e.must(200, "PATCH", "/api/webhooks/"+w.ID, map[string]any{"enabled": false, "url": w.URL}, &upd)
	if upd.Enabled || upd.URL != w.URL {
		t.Errorf("patch answered %+v", upd)
	}
	e.must(204, "DELETE", "/api/webhooks/"+w.ID, nil, nil)
	e.must(404, "GET", "/api/webhooks/"+w.ID, nil, nil)
	var actions []string
	for _, a := range e.audit() {
		if strings.HasPrefix(a.Action, "webhook.") {
			actions = append(actions, a.Action)
			if strings.Contains(string(a.Before)+string(a.After), *w.Secret) || strings.Contains(string(a.Before)+string(a.After), "abc123") {
				t.Errorf("audit entry shows a secret: %+v", a)
			}
		}
	}
	if want := []string{"webhook.delete", "webhook.update", "webhook.create"}; !slices.Equal(actions, want) {
		t.Errorf("audit actions %v, want %v", actions, want)
	}
}

func TestWebhooks_BadInputIsRefusedAndChangesNothing(t *testing.T) {
	e := newAPI(t)
	cases := []struct {
		body  map[string]any
		code  string
		field string
	}{
		{map[string]any{"events": []string{"approval.required"}}, "invalid_webhook", "url"},
		{map[string]any{"url": "ftp://127.0.0.1/x", "events": []string{"approval.required"}}, "invalid_webhook", "url"},
		{map[string]any{"url": "http://127.0.0.1/x"}, "invalid_webhook", "events"},
		{map[string]any{"url": "http://127.0.0.1/x", "events": []string{}}, "invalid_webhook", "events"},
		{map[string]any{"url": "http://127.0.0.1/x", "events": []string{"item.done"}}, "invalid_webhook", "events"},
		{map[string]any{"url": "http://127.0.0.1/x", "events": []string{"approval.required"}, "secret": "short"}, "invalid_webhook", "secret"},
		{map[string]any{"url": "http://10.1.2.3/x", "events": []string{"approval.required"}}, "url_not_allowed", "url"},
		{map[string]any{"url": "http://169.254.169.254/latest", "events": []string{"approval.required"}}, "url_not_allowed", "url"},
	}
	for _, c := range cases {
		var out apiError
		e.must(400, "POST", "/api/webhooks", c.body, &out)
		if out.Error.Code != c.code || out.Error.Fields[c.field] == "" {
			t.Errorf("%v: %+v, want %s on %s", c.body, out.Error, c.code, c.field)
		}
	}
	r := newReceiver(t)
	w := e.createHook(r, "approval.required")
	var out apiError
	e.must(400, "PATCH", "/api/webhooks/"+w.ID, map[string]any{"enabled": false, "url": "http://10.0.0.1/"}, &out)
	e.must(400, "PATCH", "/api/webhooks/"+w.ID, map[string]any{"enabled": false, "secret": "0123456789abcdefgh"}, &out)
	var got struct {
		Webhooks []webhookJSON `json:"webhooks"`
	}
	e.must(200, "GET", "/api/webhooks", nil, &got)
	if len(got.Webhooks) != 1 || !got.Webhooks[0].Enabled {
		t.Errorf("after refused requests: %+v", got.Webhooks)
	}
}

func TestWebhooks_ApprovalAndDecisionReachTheReceiverSigned(t *testing.T) {
	e := newAPI(t)
	r := newReceiver(t)
	w := e.createHook(r, "approval.required", "decision.recorded")
	other := newReceiver(t)
	e.createHook(other, "decision.recorded")
	// This replica's dispatcher never polls: the NOTIFY that AppendEvents
	// sends with the queued deliveries wakes it, as in cmd/api.
	c := fastRetries
	c.Poll = time.Hour
	disp := e.dispatcher("replica-a", c)
	e.wakeOnNotify(disp)
	run(t, disp)
	e.askFor("delete_forecast")
	_, conv, ap := e.askToDeleteOslo()
	e.must(200, "PATCH", "/api/conversations/"+conv, map[string]any{"title": "Weather <chat>"}, nil)

	got := r.waitFor(1, nil)[0]
	p := got.Payload
	if got.Event != "approval.required" || p.Type != got.Event || got.Delivery != p.ID || got.ContentType != "application/json" {
		t.Errorf("headers %+v, payload %+v", got, p)
	}
	wantURL := "https://toolgate.example.com/c/" + conv + "#approval-" + ap.ID
	if p.URL != wantURL || p.ConversationID == nil || *p.ConversationID != conv {
		t.Errorf("url %q, want %q; conversation %v", p.URL, wantURL, p.ConversationID)
	}
	if p.Data["tool_name"] != "delete_forecast" || p.Data["server_label"] != "demo" || p.Data["approval_request_id"] != ap.ID ||
		p.Data["expires_at"] == nil || p.Data["arguments"] == nil {
		t.Errorf("data %v", p.Data)
	}
	if want := "Approval needed: demo / delete_forecast in “delete_forecast {\"city\": \"Oslo\"}” — <" + wantURL + "|Open>"; p.Text != want {
		t.Errorf("text %q, want %q", p.Text, want)
	}
	if n := len(other.got()); n != 0 {
		t.Errorf("a webhook for decision.recorded only got %d approval.required calls", n)
	}

	e.decide(conv, ap.ID, false, map[string]any{"reason": "keep <Oslo>"}).ok(t)
	isDecision := func(c hookCall) bool { return c.Event == "decision.recorded" }
	d := r.waitFor(1, isDecision)[0].Payload
	if d.Data["state"] != "denied" || d.Data["decided_by"] != e.admin.Email || d.Data["reason"] != "keep <Oslo>" {
		t.Errorf("decision data %v", d.Data)
	}
	if !strings.HasPrefix(d.Text, "Denied by "+e.admin.Email+": demo / delete_forecast in “Weather &lt;chat&gt;” (keep &lt;Oslo&gt;) — <") {
		t.Errorf("decision text %q", d.Text)
	}
	other.waitFor(1, isDecision)
	time.Sleep(100 * time.Millisecond) // nothing more comes
	if n := len(r.got()); n != 2 {
		t.Errorf("receiver got %d calls, want 2: %+v", n, r.got())
	}
	ds := e.deliveries(w.ID)
	if len(ds) != 2 || ds[0].Event != "decision.recorded" || ds[1].Event != "approval.required" {
		t.Fatalf("deliveries %+v", ds)
	}
	for _, d := range ds {
		if d.State != "delivered" || d.Attempts != 1 || d.Status == nil || *d.Status != 200 || d.DeliveredAt == nil || d.NextAttemptAt != nil || len(d.Log) != 1 {
			t.Errorf("delivery %+v", d)
		}
	}
}

func TestWebhooks_RetriesWithTheSameDeliveryIDUntilDelivered(t *testing.T) {
	e := newAPI(t)
	r := newReceiver(t)
	r.status = func(n int) int {
		if n <= 2 {
			return 500
		}
		return 200
	}
	w := e.createHook(r, "approval.required")
	run(t, e.dispatcher("replica-a", fastRetries))
	var queued deliveryJSON
	e.must(202, "POST", "/api/webhooks/"+w.ID+"/test", nil, &queued)
	calls := r.waitFor(3, nil)
	for _, c := range calls {
		if c.Delivery != queued.ID || c.Event != "ping" {
			t.Errorf("call %+v, want delivery %s", c, queued.ID)
		}
	}
	d := waitDelivery(t, e, w.ID, "delivered")
	var statuses []int
	for _, a := range d.Log {
		statuses = append(statuses, *a.Status)
	}
	if d.Attempts != 3 || !slices.Equal(statuses, []int{500, 500, 200}) || d.Log[0].Error == nil || d.Log[2].Error != nil {
		t.Errorf("delivery %+v, statuses %v", d, statuses)
	}
}

func TestWebhooks_GivesUpAfterTheLastAttempt(t *testing.T) {
	e := newAPI(t)
	r := newReceiver(t)
	r.status = func(int) int { return 503 }
	w := e.createHook(r, "approval.required")
	c := fastRetries
	c.MaxAttempts = 3
	run(t, e.dispatcher("replica-a", c))
	e.must(202, "POST", "/api/webhooks/"+w.ID+"/test", nil, nil)
	d := waitDelivery(t, e, w.ID, "failed")
	time.Sleep(150 * time.Millisecond) // longer than any retry wait
	if n := len(r.got()); n != 3 || d.Attempts != 3 || len(d.Log) != 3 || d.NextAttemptAt != nil || d.Error == nil || !strings.Contains(*d.Error, "503") {
		t.Errorf("%d calls; delivery %+v", n, d)
	}
}

func TestWebhooks_TwoReplicasDeliverEachEventOnce(t *testing.T) {
	e := newAPI(t)
	r := newReceiver(t)
	r.delay = 5 * time.Millisecond
	w := e.createHook(r, "approval.required")
	const n = 30
	for range n {
		e.must(202, "POST", "/api/webhooks/"+w.ID+"/test", nil, nil)
	}
	c := fastRetries
	c.Batch, c.Parallel = 3, 2
	run(t, e.dispatcher("replica-a", c))
	run(t, e.dispatcher("replica-b", c))
	r.waitFor(n, nil)
	time.Sleep(200 * time.Millisecond)
	seen := map[string]int{}
	for _, c := range r.got() {
		seen[c.Delivery]++
	}
	for id, k := range seen {
		if k != 1 {
			t.Errorf("delivery %s arrived %d times", id, k)
		}
	}
	if len(seen) != n {
		t.Errorf("%d distinct deliveries arrived, want %d", len(seen), n)
	}
}

func TestWebhooks_ReplicaDyingAfterClaimIsRedeliveredByAnother(t *testing.T) {
	e := newAPI(t)
	r := newReceiver(t)
	w := e.createHook(r, "approval.required")
	var queued deliveryJSON
	e.must(202, "POST", "/api/webhooks/"+w.ID+"/test", nil, &queued)
	// A replica claims the delivery and dies before sending it.
	claimed, err := e.hooks.Claim(context.Background(), "replica-dead", 300*time.Millisecond, 6, 10)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %v, %+v", err, claimed)
	}
	run(t, e.dispatcher("replica-b", fastRetries))
	time.Sleep(150 * time.Millisecond)
	if n := len(r.got()); n != 0 {
		t.Fatalf("sent while another replica held the lease: %d calls", n)
	}
	r.waitFor(1, nil)
	d := waitDelivery(t, e, w.ID, "delivered")
	if d.ID != queued.ID || d.Attempts != 2 || len(d.Log) != 1 || d.Log[0].Attempt != 2 {
		t.Errorf("delivery %+v", d)
	}
	// The dead replica's late result changes nothing.
	if err := e.hooks.Record(context.Background(), "replica-dead", webhook.Result{DeliveryID: queued.ID, Attempt: 1, Status: 500,
		Error: "late", State: webhook.StatePending, NextAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if d := e.deliveries(w.ID)[0]; d.State != "delivered" || d.Attempts != 2 {
		t.Errorf("after a late result: %+v", d)
	}
}

func TestWebhooks_DisabledWebhookGetsNothing(t *testing.T) {
	e := newAPI(t)
	r := newReceiver(t)
	w := e.createHook(r, "approval.required")
	e.must(200, "PATCH", "/api/webhooks/"+w.ID, map[string]any{"enabled": false}, nil)
	run(t, e.dispatcher("replica-a", fastRetries))
	e.askFor("delete_forecast")
	e.askToDeleteOslo()
	time.Sleep(200 * time.Millisecond)
	if n := len(r.got()); n != 0 || len(e.deliveries(w.ID)) != 0 {
		t.Errorf("a disabled webhook got %d calls", n)
	}
}

func waitDelivery(t *testing.T, e *apiEnv, id, state string) deliveryJSON {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ds := e.deliveries(id)
		if len(ds) > 0 && ds[0].State == state {
			return ds[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("deliveries %+v, want the newest %s", ds, state)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestWebhooks_PruneDropsOnlyFinishedOldDeliveries(t *testing.T) {
	e := newAPI(t)
	r := newReceiver(t)
	w := e.createHook(r, "approval.required")
	run(t, e.dispatcher("replica-a", fastRetries))
	e.must(202, "POST", "/api/webhooks/"+w.ID+"/test", nil, nil)
	waitDelivery(t, e, w.ID, "delivered")
	// A second delivery still pending (its webhook disabled), just as old.
	e.must(200, "PATCH", "/api/webhooks/"+w.ID, map[string]any{"enabled": false}, nil)
	if _, err := e.pool.Exec(context.Background(), `INSERT INTO webhook_deliveries (id, webhook_id, event, data) VALUES ('whd_pending', $1, 'approval.required', '{}')`, w.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.pool.Exec(context.Background(), `UPDATE webhook_deliveries SET created_at = now() - interval '31 days'`); err != nil {
		t.Fatal(err)
	}
	n, err := e.hooks.Prune(context.Background(), time.Now().Add(-webhook.Retention))
	if err != nil || n != 1 {
		t.Fatalf("pruned %d, %v; want 1", n, err)
	}
	if ds := e.deliveries(w.ID); len(ds) != 1 || ds[0].ID != "whd_pending" {
		t.Errorf("left %+v", ds)
	}
}

func TestWebhooks_SecretThatDoesNotDecryptFailsTheDeliveryNotTheList(t *testing.T) {
	e := newAPI(t)
	r := newReceiver(t)
	w := e.createHook(r, "approval.required")
	// As if another SECRETS_KEY had sealed it.
	if _, err := e.pool.Exec(context.Background(), `UPDATE webhooks SET secret_enc = decode('00112233445566778899aabbccddeeff0011223344', 'hex')`); err != nil {
		t.Fatal(err)
	}
	e.must(200, "GET", "/api/webhooks", nil, nil)
	c := fastRetries
	c.MaxAttempts = 1
	run(t, e.dispatcher("replica-a", c))
	e.must(202, "POST", "/api/webhooks/"+w.ID+"/test", nil, nil)
	d := waitDelivery(t, e, w.ID, "failed")
	if d.Error == nil || !strings.Contains(*d.Error, "SECRETS_KEY") || len(r.got()) != 0 {
		t.Errorf("delivery %+v; %d calls", d, len(r.got()))
	}
}
