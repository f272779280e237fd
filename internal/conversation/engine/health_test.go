package engine_test

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/demomcp"
	"github.com/toolgate/toolgate/internal/policy"
)

// mcpSite is a demo MCP server that can go down and come back on the same
// address, as a real server does when it restarts.
type mcpSite struct {
	t    *testing.T
	addr string
	mu   sync.Mutex
	srv  *http.Server
}

func newMCPSite(t *testing.T) *mcpSite {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := &mcpSite{t: t, addr: ln.Addr().String()}
	m.serve(ln)
	t.Cleanup(m.down)
	return m
}

func (m *mcpSite) url() string { return "http://" + m.addr + "/mcp" }

func (m *mcpSite) serve(ln net.Listener) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.srv = &http.Server{Handler: demomcp.New(demomcp.Options{}).Handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = m.srv.Serve(ln) }()
}

// down stops the server: connections to it are refused.
func (m *mcpSite) down() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.srv != nil {
		_ = m.srv.Close()
		m.srv = nil
	}
}

// up starts it again on its address.
func (m *mcpSite) up() {
	m.t.Helper()
	var ln net.Listener
	var err error
	for range 50 { // the port may take a moment to be free again
		if ln, err = net.Listen("tcp", m.addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		m.t.Fatalf("listening on %s again: %v", m.addr, err)
	}
	m.serve(ln)
}

// register registers a second MCP server as an admin.
func (e *harness) register(label, url string) policy.Server {
	e.t.Helper()
	if _, err := e.policies.Servers.CreateServer(as(e.t.Context(), admin), policy.NewServer{Label: label, URL: url}); err != nil {
		e.t.Fatalf("registering %s: %v", label, err)
	}
	trusted := policy.HintsTrusted
	srv, err := e.policies.Servers.UpdateServer(as(e.t.Context(), admin), label, policy.ServerPatch{ReadOnlyHints: &trusted})
	if err != nil {
		e.t.Fatalf("trusting %s's hints: %v", label, err)
	}
	return srv
}

func (e *harness) health(label string) policy.Health {
	e.t.Helper()
	srv, err := e.policies.Servers.Server(e.t.Context(), label)
	if err != nil {
		e.t.Fatal(err)
	}
	return srv.Health
}

// notices returns the notice events a turn sent.
func (r *recorder) notices() []conversation.Notice {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []conversation.Notice
	for _, ev := range r.events {
		if ev.name == conversation.EventNameNotice {
			out = append(out, *ev.data.(conversation.NoticeEvent).Item.Notice)
		}
	}
	return out
}

// listed returns the servers a transcript has a tool listing for, with
// whether the listing failed.
func listed(tr conversation.Transcript) map[string]bool {
	out := map[string]bool{}
	for _, it := range tr.Items {
		if it.Type == conversation.ItemListTools {
			out[it.ServerLabel] = len(it.ListError) > 0
		}
	}
	return out
}

func wantNotice(t *testing.T, got []conversation.Notice, code, label string, parts ...string) {
	t.Helper()
	for _, n := range got {
		if n.Code != code || n.ServerLabel != label {
			continue
		}
		t.Logf("notice %s: %s", code, n.Message)
		for _, p := range parts {
			if !strings.Contains(n.Message, p) {
				t.Errorf("notice %s for %s says %q, want it to mention %q", code, label, n.Message, p)
			}
		}
		return
	}
	t.Errorf("no %s notice for %s; notices: %+v", code, label, got)
}

// TestHealth_HelloWithAnUnreachableServerAnswers is the acceptance test of
// "a broken MCP server breaks only itself": with the demo server up and a
// second one down, "hello" is answered normally, and the turn says which
// server it left out and why.
func TestHealth_HelloWithAnUnreachableServerAnswers(t *testing.T) {
	t.Run("known unreachable: skipped", func(t *testing.T) {
		e := newEngine(t, engineOptions{})
		srv := e.register("demo-2", closedURL(t)+"/mcp") // discovery fails: connection refused
		if srv.Health.Status != policy.HealthUnreachable || srv.Health.Since == nil || !strings.Contains(srv.Health.LastError, "connection refused") {
			t.Fatalf("after a failed discovery the health is %+v, want unreachable since then with the reason", srv.Health)
		}
		before := e.up.count()
		conv, rec := e.send(ana, "", "hello")
		if n := e.up.count() - before; n != 1 {
			t.Errorf("%d requests to the provider, want 1 (the server left out, no 424)", n)
		}
		wantNotice(t, rec.notices(), conversation.NoticeServerSkipped, "demo-2",
			"demo-2 skipped: unreachable since "+srv.Health.Since.UTC().Format("15:04:05"), "connection refused")
		tr := e.transcript(ana, conv)
		if l := listed(tr); l["demo"] || !hasKey(l, "demo") || hasKey(l, "demo-2") {
			t.Errorf("listings %v: want demo listed and demo-2 not offered", l)
		}
		if !slicesContainsNotice(tr, conversation.NoticeServerSkipped) {
			t.Error("the notice is not in the transcript read back")
		}
	})

	t.Run("went down after discovery: dropped after the 424, sent again once", func(t *testing.T) {
		e := newEngine(t, engineOptions{})
		site := newMCPSite(t)
		if srv := e.register("demo-2", site.url()); srv.Health.Status != policy.HealthOK {
			t.Fatalf("health after a discovery that worked: %+v", srv.Health)
		}
		site.down()
		before := e.up.count()
		conv, rec := e.send(ana, "", "hello")
		if n := e.up.count() - before; n != 2 {
			t.Errorf("%d requests to the provider, want 2 (the 424, then once more without demo-2)", n)
		}
		wantNotice(t, rec.notices(), conversation.NoticeServerDropped, "demo-2", "demo-2 dropped", "sent again without it")
		if l := listed(e.transcript(ana, conv)); hasKey(l, "demo-2") || !hasKey(l, "demo") {
			t.Errorf("listings %v: want demo only", l)
		}
		h := e.health("demo-2")
		if h.Status != policy.HealthUnreachable || !strings.Contains(h.LastError, "could not list its tools") {
			t.Errorf("health after the 424: %+v, want unreachable with the provider's words", h)
		}

		// The next request leaves it out from the start: no 424 at all.
		before = e.up.count()
		_, rec = e.send(ana, conv, "hello again")
		if n := e.up.count() - before; n != 1 {
			t.Errorf("next message: %d requests, want 1", n)
		}
		wantNotice(t, rec.notices(), conversation.NoticeServerSkipped, "demo-2", "demo-2 skipped: unreachable since")
	})
}

func hasKey(m map[string]bool, k string) bool { _, ok := m[k]; return ok }

func slicesContainsNotice(tr conversation.Transcript, code string) bool {
	for _, it := range tr.Items {
		if it.Type == conversation.ItemNotice && it.Notice != nil && it.Notice.Code == code {
			return true
		}
	}
	return false
}

// TestHealth_RecoveredServerIsOfferedAgain: once an unreachable server
// answers again, the background re-check finds it and the next request
// offers it, without anyone pressing Refresh.
func TestHealth_RecoveredServerIsOfferedAgain(t *testing.T) {
	e := newEngine(t, engineOptions{})
	site := newMCPSite(t)
	e.register("demo-2", site.url())
	site.down()
	e.send(ana, "", "hello") // the 424 marks it unreachable
	if h := e.health("demo-2"); h.Status != policy.HealthUnreachable {
		t.Fatalf("health %+v, want unreachable", h)
	}

	site.up()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); e.policies.Health.RunRechecks(ctx, 100*time.Millisecond) }()
	t.Cleanup(func() { cancel(); <-done })
	deadline := time.Now().Add(15 * time.Second)
	for e.health("demo-2").Status != policy.HealthOK {
		if time.Now().After(deadline) {
			t.Fatalf("the re-check did not find demo-2 reachable again: %+v", e.health("demo-2"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if h := e.health("demo-2"); h.Since != nil || h.LastError != "" || h.OKAt == nil {
		t.Errorf("recovered health %+v: want no failure left and when it was reached", h)
	}

	before := e.up.count()
	conv, rec := e.send(ana, "", "hello")
	if n := e.up.count() - before; n != 1 || len(rec.notices()) != 0 {
		t.Errorf("%d requests and notices %+v, want 1 and none", n, rec.notices())
	}
	if l := listed(e.transcript(ana, conv)); !hasKey(l, "demo-2") || l["demo-2"] {
		t.Errorf("listings %v: want demo-2 offered and listed again", l)
	}
}

// TestHealth_424OnDecisionsIsNotRetried: a request that answers approval
// requests is never sent twice, even when the 424 names a server it could
// do without; the server is still recorded as unreachable, so Retry then
// goes through without it, and the approved tool runs once.
func TestHealth_424OnDecisionsIsNotRetried(t *testing.T) {
	e := newEngine(t, engineOptions{})
	conv, a := e.asking(ana, "") // demo asks to run delete_forecast
	site := newMCPSite(t)
	e.register("demo-2", site.url()) // not in the conversation's context yet: the follow-up lists it
	site.down()

	before := e.up.count()
	turn, err := e.decide(ana, conv, a.ID, true)
	if err != nil {
		t.Fatal(err)
	}
	rec := e.run(ana, turn)
	if n := e.up.count() - before; n != 1 {
		t.Errorf("%d requests for the decisions, want exactly 1 (never retried)", n)
	}
	if ev, ok := rec.lastData().(conversation.ErrorEvent); rec.last() != conversation.EventNameError || !ok || ev.Code != "mcp_server_failed" {
		t.Fatalf("the decision turn ended with %v %+v, want error mcp_server_failed", rec.names(), rec.lastData())
	}
	if len(rec.notices()) != 0 {
		t.Errorf("notices %+v: nothing was dropped or sent again", rec.notices())
	}
	if h := e.health("demo-2"); h.Status != policy.HealthUnreachable {
		t.Errorf("health %+v, want unreachable", h)
	}

	retry, err := e.chat.StartRetry(as(t.Context(), ana), conv)
	if err != nil {
		t.Fatal(err)
	}
	rec = e.run(ana, retry)
	if rec.last() != conversation.EventNameCompleted {
		t.Fatalf("retry ended with %v", rec.names())
	}
	wantNotice(t, rec.notices(), conversation.NoticeServerSkipped, "demo-2")
	var ran int
	for _, it := range e.transcript(ana, conv).Items {
		if it.Type == conversation.ItemCall && it.ApprovalRequestID == a.ID && !it.Interrupted {
			ran++
		}
	}
	if ran != 1 {
		t.Errorf("delete_forecast ran %d times, want once", ran)
	}
}

// TestHealth_AnsweredServerIsOfferedWhileUnreachable: a request answering
// approval requests offers their server whatever its health, or upstream
// could not take the answers.
func TestHealth_AnsweredServerIsOfferedWhileUnreachable(t *testing.T) {
	e := newEngine(t, engineOptions{})
	conv, a := e.asking(ana, "")
	srv, err := e.policies.Servers.Server(t.Context(), "demo")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.policies.Health.ServerFailed(t.Context(), "demo", srv.URL, "a call could not reach it"); err != nil {
		t.Fatal(err)
	}
	turn, err := e.decide(ana, conv, a.ID, true)
	if err != nil {
		t.Fatal(err)
	}
	rec := e.run(ana, turn)
	if rec.last() != conversation.EventNameCompleted {
		t.Fatalf("the decision turn ended with %v %+v, want completed", rec.names(), rec.lastData())
	}
	if len(rec.notices()) != 0 {
		t.Errorf("notices %+v: the answered server must not be skipped", rec.notices())
	}
}

// TestHealth_TurnsRecordWhatTheyLearn: a listing that fails inside the
// stream marks the server unreachable for the next requests; calls the
// provider could not deliver do when MCP_HEALTH_FAILURES come in a row.
func TestHealth_TurnsRecordWhatTheyLearn(t *testing.T) {
	t.Run("listing failed in the stream", func(t *testing.T) {
		e := newEngine(t, engineOptions{})
		e.send(ana, "", "hello [emulator: mcp-error=list-in-stream]")
		if h := e.health("demo"); h.Status != policy.HealthUnreachable || !strings.Contains(h.LastError, "could not list its tools") {
			t.Errorf("health %+v, want unreachable: the provider could not list its tools", h)
		}
	})
	// One call that could not get through (often one that was only slow)
	// does not take a working server out for everyone: the health counts
	// failed calls in a row, and only MCP_HEALTH_FAILURES (3) of them make
	// it unreachable; a call that works starts the count again.
	t.Run("calls could not reach the server", func(t *testing.T) {
		e := newEngine(t, engineOptions{})
		site := newMCPSite(t)
		e.register("demo-2", site.url())
		conv, _ := e.send(ana, "", "hello") // lists demo-2: it stays in the context
		failedCall := func() {
			t.Helper()
			_, rec := e.send(ana, conv, `demo-2.get_forecast {"city": "Berlin"}`)
			if len(rec.notices()) != 0 {
				t.Errorf("notices %+v: demo-2 must still be offered", rec.notices())
			}
			var callErr string
			for _, ev := range rec.events {
				if ie, ok := ev.data.(conversation.ItemEvent); ok && ie.Item.Type == conversation.ItemCall {
					callErr = string(ie.Item.CallError)
				}
			}
			if !strings.Contains(callErr, "http_error") {
				t.Fatalf("the call's error is %q, want the provider's http_error", callErr)
			}
		}
		site.down()
		failedCall()
		if h := e.health("demo-2"); h.Status != policy.HealthOK || h.Failures != 1 {
			t.Errorf("health %+v after one failed call, want still ok with 1 failure counted", h)
		}
		site.up()
		if _, rec := e.send(ana, conv, `demo-2.get_forecast {"city": "Berlin"}`); len(rec.notices()) != 0 {
			t.Errorf("notices %+v: demo-2 must still be offered", rec.notices())
		}
		if h := e.health("demo-2"); h.Status != policy.HealthOK || h.Failures != 0 {
			t.Errorf("health %+v after a call that worked, want ok with the count back at 0", h)
		}
		site.down()
		failedCall()
		failedCall()
		if h := e.health("demo-2"); h.Status != policy.HealthOK || h.Failures != 2 {
			t.Errorf("health %+v after two failed calls, want still ok with 2 failures", h)
		}
		failedCall()
		if h := e.health("demo-2"); h.Status != policy.HealthUnreachable || h.Failures != 3 ||
			!strings.Contains(h.LastError, "3 calls in a row failed; the last: the model's provider could not reach it to call get_forecast") {
			t.Errorf("health %+v after three failed calls in a row, want unreachable saying so", h)
		}
		_, rec := e.send(ana, conv, "hello again")
		wantNotice(t, rec.notices(), conversation.NoticeServerSkipped, "demo-2", "demo-2 skipped: unreachable since", "3 calls in a row failed")
		if h := e.health("demo"); h.Status != policy.HealthOK || h.Failures != 0 {
			t.Errorf("demo's health %+v: another server's failure must not touch it", h)
		}
	})
}

// TestHealth_FailureOfAnOldURLIsIgnored: what a request learned about a
// server's old URL does not mark it unreachable once it points elsewhere.
func TestHealth_FailureOfAnOldURLIsIgnored(t *testing.T) {
	e := newEngine(t, engineOptions{})
	if err := e.policies.Health.ServerFailed(t.Context(), "demo", "http://127.0.0.1:1/old", "refused"); err != nil {
		t.Fatal(err)
	}
	if h := e.health("demo"); h.Status != policy.HealthOK {
		t.Errorf("health %+v, want ok: the failure was of another URL", h)
	}
	if err := e.policies.Health.ServerFailed(t.Context(), "gone", "", "refused"); err != nil {
		t.Errorf("a failure of a deleted server: %v, want no error", err)
	}
}

// TestHealth_ProviderErrorsKeepURLSecrets: the provider's 424 quotes the
// URL it could not reach; a secret in its query is masked in the notice,
// the stored health and the turn's error, as everywhere else.
func TestHealth_ProviderErrorsKeepURLSecrets(t *testing.T) {
	const secret = "sk-query-secret-0123456789"
	e := newEngine(t, engineOptions{})
	site := newMCPSite(t)
	e.register("demo-2", site.url()+"?api_key="+secret)
	site.down()
	conv, rec := e.send(ana, "", "hello")
	for _, n := range rec.notices() {
		if strings.Contains(n.Message, secret) {
			t.Errorf("notice leaks the URL's secret: %s", n.Message)
		}
	}
	wantNotice(t, rec.notices(), conversation.NoticeServerDropped, "demo-2", "api_key=********6789")
	if h := e.health("demo-2"); strings.Contains(h.LastError, secret) || h.Status != policy.HealthUnreachable {
		t.Errorf("stored health %+v leaks the secret or is not unreachable", h)
	}
	for _, it := range e.transcript(ana, conv).Items {
		if it.Notice != nil && strings.Contains(it.Notice.Message, secret) {
			t.Errorf("stored notice leaks the secret: %s", it.Notice.Message)
		}
	}

	// Whatever a turn reports (a listing's or a call's error quoting the
	// URL) is stored masked.
	url := site.url() + "?api_key=" + secret
	if err := e.policies.Health.ServerFailed(t.Context(), "demo-2", url, `Could not reach the MCP server: Post "`+url+`": connection refused`); err != nil {
		t.Fatal(err)
	}
	if h := e.health("demo-2"); strings.Contains(h.LastError, secret) || !strings.Contains(h.LastError, "api_key=********6789") {
		t.Errorf("stored health %q: want the URL's query masked", h.LastError)
	}
}

// TestHealth_TranscriptResendDropsAServerThatIsDown: when the provider has
// lost the previous response, the conversation is sent again from the
// transcript, which lists every server anew; a 424 for one of them is sent
// once more without it, like any request without decisions.
func TestHealth_TranscriptResendDropsAServerThatIsDown(t *testing.T) {
	e := newEngine(t, engineOptions{})
	conv, _ := e.send(ana, "", "hello")
	site := newMCPSite(t)
	e.register("demo-2", site.url())
	site.down()
	e.up.replace(t) // the provider forgets every response

	_, rec := e.send(ana, conv, "hello again")
	wantNotice(t, rec.notices(), conversation.NoticeProviderStateLost, "")
	wantNotice(t, rec.notices(), conversation.NoticeServerDropped, "demo-2")
	if h := e.health("demo-2"); h.Status != policy.HealthUnreachable {
		t.Errorf("health %+v, want unreachable", h)
	}
}
