package replicas_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/testdb"
)

// replicaSeen records which replica answered each MCP request of a
// session (HAProxy's X-Toolgate-Replica), adding the person's token.
type replicaSeen struct {
	token string
	mu    sync.Mutex
	seen  map[string]int
	log   []string // each request's method, replica and status, in order
}

func (r *replicaSeen) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+r.token)
	res, err := http.DefaultTransport.RoundTrip(req)
	if err == nil {
		r.mu.Lock()
		// A request of the session: it carries its id, or began it. (The
		// Go SDK's client first probes the server without a session.)
		if req.Header.Get("Mcp-Session-Id") != "" || res.Header.Get("Mcp-Session-Id") != "" {
			r.seen[res.Header.Get("X-Toolgate-Replica")]++
		}
		r.log = append(r.log, req.Method+" "+res.Header.Get("X-Toolgate-Replica")+" "+res.Status+" session="+req.Header.Get("Mcp-Session-Id")+" answered="+res.Header.Get("Mcp-Session-Id"))
		r.mu.Unlock()
	}
	return res, err
}

// TestReplicas_AgentSessionsStickAndHeldCallsAreDecidedOnAnyReplica: three
// replicas behind the repository's HAProxy configuration. An MCP client's
// session at /mcp (the face for any client) is served by the replica that
// began it, request after request (the proxy's stick table on
// Mcp-Session-Id); a call held there is decided by a request to another
// replica, and runs once.
func TestReplicas_AgentSessionsStickAndHeldCallsAreDecidedOnAnyReplica(t *testing.T) {
	dbURL := testdb.URL(t)
	cl := newCluster(t)
	buildCtx, cancelBuild := context.WithTimeout(context.Background(), buildDeadline)
	defer cancelBuild()
	cl.build(buildCtx)
	ctx, cancel := context.WithTimeout(context.Background(), hardDeadline)
	defer cancel()
	defer context.AfterFunc(ctx, cl.killAll)()

	cl.startHelpers(ctx, "")
	cl.newReplicas(3, dbURL, map[string]string{"TOOLGATE_ADMIN_EMAIL": adminEmail, "TOOLGATE_ADMIN_PASSWORD": adminPassword,
		"TRUST_PROXY_HEADERS": "true", "MCP_ROUTE": "direct", "PUBLIC_URL": "http://" + cl.reserveProxy()})
	for _, r := range cl.replicas {
		if err := cl.start(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	cl.startProxy(ctx)
	token := cl.token(ctx, adminEmail)
	c := newClient(cl.proxy, token)
	if err := c.must(ctx, http.MethodPost, "/api/mcp/servers", map[string]any{"label": "demo", "url": cl.demo + "/mcp"}, nil); err != nil {
		t.Fatalf("register the demo MCP server: %v", err)
	}
	for tool, p := range map[string]string{"delete_forecast": "always", "get_forecast": "never"} {
		if err := c.must(ctx, http.MethodPut, "/api/mcp/servers/demo/tools/"+tool+"/approval-policy?layer=workspace", map[string]any{"policy": p}, nil); err != nil {
			t.Fatalf("set the policy of %s: %v", tool, err)
		}
	}

	rt := &replicaSeen{token: token, seen: map[string]int{}}
	session, err := mcp.NewClient(&mcp.Implementation{Name: "replica-agent", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: cl.proxy + "/mcp", HTTPClient: &http.Client{Transport: rt}, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatalf("connect through the proxy: %v", err)
	}
	defer session.Close()
	for range 6 { // round robin would spread these over all three replicas
		if _, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "demo__get_forecast", Arguments: map[string]any{"city": "Oslo"}}); err != nil {
			t.Fatalf("a session's request through the proxy: %v (replicas seen %v)", err, rt.seen)
		}
	}
	rt.mu.Lock()
	var home string
	for name := range rt.seen {
		home = name
	}
	seen, trail := len(rt.seen), rt.log
	rt.mu.Unlock()
	if seen != 1 || home == "" {
		t.Fatalf("one session's requests were answered by more than one replica; want one for all:\n%s", strings.Join(trail, "\n"))
	}

	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "demo__delete_forecast", Arguments: map[string]any{"city": "Oslo"}})
		if err != nil {
			t.Errorf("the held call: %v", err)
		}
		done <- res
	}()
	// Decide on a replica that does not hold the call, bypassing the proxy.
	var other *replica
	for _, r := range cl.replicas {
		if r.name != home {
			other = r
		}
	}
	direct := newClient("http://"+other.addr, token)
	var id string
	for deadline := time.Now().Add(20 * time.Second); id == "" && time.Now().Before(deadline); {
		var inbox struct {
			Approvals []struct {
				ID string `json:"approval_request_id"`
			} `json:"approvals"`
		}
		if err := direct.must(ctx, http.MethodGet, "/api/approvals?state=pending", nil, &inbox); err != nil {
			t.Fatal(err)
		}
		if len(inbox.Approvals) == 1 {
			id = inbox.Approvals[0].ID
		}
		time.Sleep(100 * time.Millisecond)
	}
	if id == "" {
		t.Fatalf("the held call's request never reached the inbox on %s", other.name)
	}
	if err := direct.must(ctx, http.MethodPost, "/api/approvals/"+id+"/decision", map[string]any{"approve": true}, nil); err != nil {
		t.Fatalf("decide on %s: %v", other.name, err)
	}
	select {
	case res := <-done:
		if res == nil || res.IsError {
			t.Fatalf("the call held on %s, approved on %s: %+v", home, other.name, res)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("the call held on %s did not run after the decision on %s", home, other.name)
	}
	var log struct {
		Calls []struct {
			Tool string `json:"tool"`
		} `json:"calls"`
	}
	if err := getJSON(ctx, cl.demo+"/calls", &log); err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, c := range log.Calls {
		if c.Tool == "delete_forecast" {
			ran++
		}
	}
	if ran != 1 {
		t.Errorf("the demo server ran delete_forecast %d times, want once", ran)
	}
}
