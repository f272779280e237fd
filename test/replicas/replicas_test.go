// Package replicas_test runs Toolgate as it is deployed to scale out: three
// replicas of the real binary on one Postgres database behind the real
// HAProxy (deploy/haproxy.cfg), one OpenAI Responses emulator as the
// provider and one demo MCP server whose call log says what really ran. It
// sends turns with approvals through the proxy while replicas are
// SIGKILLed at random points and restarted, then checks what must hold
// whatever happened: nothing ran twice, nothing approved was lost without
// saying so, no conversation stayed blocked past its lease, and every
// transcript tells what the provider did.
//
// Everything is on loopback and bounded: at most buildDeadline to build the
// binaries, then hardDeadline for the rest.
// REPLICA_TEST_SEED=N replays a run's plan (tools, decisions, kill choices);
// the timing of the kills still varies.
package replicas_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/testdb"
)

// hardDeadline bounds the run once the binaries are built; past it every
// child is killed and the test fails saying in which phase it was.
// buildDeadline bounds the build (a cold one compiles every dependency), so
// the whole test ends within the sum of both.
const hardDeadline, buildDeadline = 3 * time.Minute, 4 * time.Minute

// plan is the size and timing of one run.
type plan struct {
	seed          int64
	conversations int
	turns         int // per conversation: a message and the decisions on what it asked
	maxTurns      int // more while replicas are still being killed
	clients       int // conversations driven at once
	kills         int
	leaseTTL      time.Duration // TURN_LEASE_TTL of every replica
	margin        time.Duration // allowed on top of the lease before a blocked conversation counts
	streamLimit   time.Duration // one chat stream, at most
	blockCap      time.Duration // how long a blocked conversation is waited for
	// gateway: MCP_ROUTE=gateway, the provider calls the demo server
	// through the replicas' MCP face (behind HAProxy, PUBLIC_URL).
	gateway bool
}

// emulatorBehavior slows every upstream answer a little, so that kills land
// inside turns: before the first event (a follow-up sent, its response not
// yet created), between events, during a tool call.
const emulatorBehavior = "first-event-delay=400ms; event-delay=15ms"

const adminEmail, adminPassword = "admin@replicas.test", "correct horse battery staple"

func newPlan(t *testing.T) plan {
	seed := time.Now().UnixNano()
	if s := os.Getenv("REPLICA_TEST_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseInt(s, 10, 64); err != nil {
			t.Fatalf("REPLICA_TEST_SEED=%q is not a whole number", s)
		}
	}
	p := plan{seed: seed, conversations: 8, turns: 3, maxTurns: 8, clients: 4, kills: 6,
		leaseTTL: 3 * time.Second, margin: 4 * time.Second, streamLimit: 30 * time.Second}
	p.blockCap = p.leaseTTL + p.margin + 8*time.Second
	return p
}

// TestReplicas_KilledUnderLoad_NothingRunsTwiceNothingIsLostNothingStaysBlocked
// is issue 13's replica test (point 11): see the package comment.
// TestReplicas_KilledUnderLoad_NothingRunsTwiceNothingIsLostNothingStaysBlocked
// runs the load with MCP_ROUTE=gateway: every call the provider makes
// reaches the demo server through the replicas' MCP face behind HAProxy,
// so for every approved call the record says truthfully whether it ran.
func TestReplicas_KilledUnderLoad_NothingRunsTwiceNothingIsLostNothingStaysBlocked(t *testing.T) {
	p := newPlan(t)
	p.gateway = true
	runReplicas(t, p)
}

// TestReplicas_Direct_KilledUnderLoad is the same load with
// MCP_ROUTE=direct: the provider calls the demo server itself.
func TestReplicas_Direct_KilledUnderLoad(t *testing.T) {
	runReplicas(t, newPlan(t))
}

func runReplicas(t *testing.T, p plan) {
	t.Logf("seed %d (REPLICA_TEST_SEED=%d replays this plan), gateway %v", p.seed, p.seed, p.gateway)
	dbURL := testdb.URL(t) // before the cluster: its processes die before the database is dropped
	cl := newCluster(t)
	buildCtx, cancelBuild := context.WithTimeout(context.Background(), buildDeadline)
	defer cancelBuild()
	building := time.Now()
	cl.build(buildCtx)
	t.Logf("built toolgate, the emulator and the demo MCP server in %s", time.Since(building).Round(100*time.Millisecond))

	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), hardDeadline)
	defer cancel()
	stopKilling := context.AfterFunc(ctx, cl.killAll)
	defer stopKilling()
	var phase string
	inTime := func() {
		t.Helper()
		if ctx.Err() != nil {
			t.Fatalf("the replica test passed its hard deadline of %s while %s (after %s); every child process was killed",
				hardDeadline, phase, time.Since(began).Round(time.Second))
		}
	}

	phase = "starting the emulator, the demo MCP server, three replicas and HAProxy"
	cl.startHelpers(ctx, emulatorBehavior)
	cl.newReplicas(3, dbURL, map[string]string{
		"TOOLGATE_ADMIN_EMAIL": adminEmail, "TOOLGATE_ADMIN_PASSWORD": adminPassword,
		"TURN_LEASE_TTL":            p.leaseTTL.String(),
		"USER_MAX_CONCURRENT_TURNS": "100", "USER_MESSAGES_PER_MINUTE": "10000",
		"TRUST_PROXY_HEADERS": "true", "SSE_HEARTBEAT": "5s", "METRICS_TOKEN": metricsToken,
		"MCP_ROUTE": map[bool]string{true: "gateway", false: "direct"}[p.gateway], "PUBLIC_URL": "http://" + cl.reserveProxy(),
	})
	// The first one migrates the database and creates the admin; the
	// others then start together.
	if err := cl.start(ctx, cl.replicas[0]); err != nil {
		inTime()
		t.Fatal(err)
	}
	var starting sync.WaitGroup
	errs := make(chan error, len(cl.replicas))
	for _, r := range cl.replicas[1:] {
		starting.Go(func() { errs <- cl.start(ctx, r) })
	}
	starting.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			inTime()
			t.Fatal(err)
		}
	}
	cl.startProxy(ctx)
	c := newClient(cl.proxy, cl.token(ctx, adminEmail))
	convs := setUp(ctx, t, c, cl, p)
	inTime()

	phase = "sending turns while replicas are killed"
	l := &load{plan: p, c: c, convs: convs, unusable: map[string]string{}, killsDone: make(chan struct{}), started: time.Now()}
	done, killerDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(killerDone)
		l.killer(ctx, cl, done)
	}()
	work := make(chan *conv)
	var clients sync.WaitGroup
	for range p.clients {
		clients.Go(func() {
			for cv := range work {
				l.runConversation(ctx, cv)
			}
		})
	}
	for _, cv := range convs {
		work <- cv
	}
	close(work)
	clients.Wait()
	close(done)
	<-killerDone // and every killed replica restarted
	loadTime := time.Since(l.started)
	inTime()

	phase = "settling: every conversation idle, then one more message each"
	for _, r := range cl.replicas {
		if !r.isUp() {
			l.problems = append(l.problems, r.name+" is not up after the load")
		}
	}
	for _, cv := range convs {
		l.waitUnblocked(ctx, cv, time.Now(), "", "after the load, all replicas up")
	}
	probe(ctx, l)
	inTime()

	phase = "checking the invariants"
	ev, err := gather(ctx, cl, c, convs)
	if err != nil {
		inTime()
		t.Fatalf("reading what happened: %v", err)
	}
	invs := checkAll(ctx, ev, l)
	inTime()

	scrapeTakeovers(ctx, t, cl)
	report(t, l, invs, loadTime, time.Since(building))
	if t.Failed() {
		for _, r := range cl.replicas {
			t.Logf("last lines of %s's log:\n%s", r.name, r.logs.tail(25))
		}
	}
}

// setUp registers the demo MCP server with tools that ask (send_alert,
// delete_forecast) and one that runs at once (get_forecast), and starts
// the conversations.
func setUp(ctx context.Context, t *testing.T, c *client, cl *cluster, p plan) []*conv {
	t.Helper()
	if err := c.must(ctx, http.MethodPost, "/api/mcp/servers", map[string]any{"label": "demo", "url": cl.demo + "/mcp"}, nil); err != nil {
		t.Fatalf("register the demo MCP server: %v", err)
	}
	for tool, policy := range map[string]string{"send_alert": "always", "delete_forecast": "always", "get_forecast": "never"} {
		path := "/api/mcp/servers/demo/tools/" + tool + "/approval-policy?layer=workspace"
		if err := c.must(ctx, http.MethodPut, path, map[string]any{"policy": policy}, nil); err != nil {
			t.Fatalf("set the policy of %s: %v", tool, err)
		}
	}
	var convs []*conv
	for i := range p.conversations {
		var created struct{ ID string }
		if err := c.must(ctx, http.MethodPost, "/api/conversations", map[string]any{"title": fmt.Sprintf("replica test c%d", i)}, &created); err != nil {
			t.Fatalf("start a conversation: %v", err)
		}
		convs = append(convs, &conv{idx: i, id: created.ID, completed: map[string]bool{},
			rng: newRand(p.seed, uint64(i))})
	}
	return convs
}

// probe sends every conversation one more message, which must complete.
func probe(ctx context.Context, l *load) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, l.plan.clients)
	for _, cv := range l.convs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			l.note(func() { l.messages++ })
			res := l.send(ctx, cv, "/api/responses", map[string]any{"conversation_id": cv.id, "input": "hello"})
			if res.terminal == "completed" {
				return
			}
			why := fmt.Sprintf("status %d %s", res.status, strings.TrimSpace(string(res.body)))
			switch res.status {
			case 0:
				why = fmt.Sprintf("no answer: %v", res.err)
			case http.StatusOK:
				why = fmt.Sprintf("stream ended with %q: %s", orDash(res.terminal), res.last(res.terminal))
			}
			l.note(func() { l.unusable[cv.id] = why })
		})
	}
	wg.Wait()
}

// report logs the figures and fails the test for every invariant violated
// and every harness problem.
func report(t *testing.T, l *load, invs []*invariant, loadTime, total time.Duration) {
	t.Helper()
	var longest time.Duration
	for _, b := range l.blocked {
		longest = max(longest, b.waited)
	}
	var kills []string
	for _, k := range l.kills {
		kills = append(kills, fmt.Sprintf("%s at %s (%d streams, down %s)", k.replica,
			k.at.Sub(l.started).Round(100*time.Millisecond), k.streams, k.down.Round(100*time.Millisecond)))
	}
	t.Logf("figures: %d conversations; %d turns sent (%d messages, %d decision requests); %d approvals, %d denials; "+
		"%d kills: %s; %d streams cut; %d waits for a blocked conversation, the longest %s; load %s, whole test %s",
		len(l.convs), l.messages+l.decisionPosts, l.messages, l.decisionPosts, l.approved, l.denied,
		len(l.kills), strings.Join(kills, ", "), l.cuts, len(l.blocked), longest.Round(100*time.Millisecond),
		loadTime.Round(100*time.Millisecond), total.Round(time.Second))
	held := 0
	for _, iv := range invs {
		verdict := "held"
		if len(iv.violations) > 0 {
			verdict = "VIOLATED"
		} else {
			held++
		}
		t.Logf("invariant %s: %s (%d checks, %d violations)", verdict, iv.name, iv.checked, len(iv.violations))
	}
	t.Logf("invariants held: %d of %d", held, len(invs))
	for _, p := range l.problems {
		t.Errorf("harness: %s", p)
	}
	for _, iv := range invs {
		if len(iv.violations) == 0 {
			continue
		}
		shown := iv.violations
		if len(shown) > 10 {
			shown = append(shown[:10:10], fmt.Sprintf("… and %d more", len(iv.violations)-10))
		}
		t.Errorf("invariant violated: %s (%d of %d checks):\n  %s", iv.name, len(iv.violations), iv.checked, strings.Join(shown, "\n  "))
	}
}

// metricsToken is every replica's METRICS_TOKEN.
const metricsToken = "replica-test-metrics-token"

// scrapeTakeovers reads each replica's /metrics: the replica metrics are
// there, and how many turns each closed for a dead replica since it last
// started (a replica killed later takes its count with it).
func scrapeTakeovers(ctx context.Context, t *testing.T, cl *cluster) {
	t.Helper()
	total := 0.0
	for _, r := range cl.replicas {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+r.addr+"/metrics", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+metricsToken)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Errorf("scrape %s: %v", r.name, err)
			continue
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		text := string(body)
		for _, m := range []string{"toolgate_lease_takeovers_total", "toolgate_approvals_pending", "toolgate_event_streams_following", "toolgate_upstream_first_event_seconds_count"} {
			if !strings.Contains(text, "\n"+m+" ") {
				t.Errorf("%s's /metrics has no %s", r.name, m)
			}
		}
		for _, line := range strings.Split(text, "\n") {
			if v, ok := strings.CutPrefix(line, "toolgate_lease_takeovers_total "); ok {
				n, _ := strconv.ParseFloat(v, 64)
				total += n
			}
		}
	}
	t.Logf("lease takeovers counted by the replicas still up: %.0f", total)
}
