package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/demomcp"
	"github.com/toolgate/toolgate/internal/testdb"
)

// TestRun_UnreachableServerIsSkippedAndComesBack: offline, with a second MCP
// server that is down, "hello" is answered (no 424) and the turn says the
// server was skipped; once the server is up again, the background re-check
// (MCP_HEALTH_RECHECK) finds it without anyone pressing Refresh, and the
// next turn offers it.
func TestRun_UnreachableServerIsSkippedAndComesBack(t *testing.T) {
	addr := freeAddr(t) // nothing listens here yet
	base, _, _ := start(t, map[string]string{"DATABASE_URL": testdb.MissingURL(t), "MCP_HEALTH_RECHECK": "1s"})
	if st, body := do(t, "POST", base+"/api/mcp/servers", fmt.Sprintf(`{"label":"demo-2","url":"http://%s/mcp"}`, addr)); st != 201 {
		t.Fatalf("register demo-2: %d %s", st, body)
	}
	if h := healthOf(t, base, "demo-2"); h.Status != "unreachable" {
		t.Fatalf("demo-2 health %+v, want unreachable", h)
	}

	_, events := sse(t, base+"/api/responses", `{"input":"hello"}`)
	var skipped string
	for _, ev := range events {
		if ev.name == "notice" && strings.Contains(ev.data, `"server_skipped"`) {
			skipped = ev.data
		}
	}
	if last := events[len(events)-1]; last.name != "completed" || !strings.Contains(skipped, "demo-2 skipped: unreachable since") {
		t.Fatalf("hello with demo-2 down: %v", events)
	}

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: demomcp.New(demomcp.Options{}).Handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	deadline := time.Now().Add(15 * time.Second)
	for healthOf(t, base, "demo-2").Status != "ok" {
		if time.Now().After(deadline) {
			t.Fatalf("demo-2 was not found reachable again: %+v", healthOf(t, base, "demo-2"))
		}
		time.Sleep(200 * time.Millisecond)
	}

	_, events = sse(t, base+"/api/responses", `{"input":"hello"}`)
	listed := false
	for _, ev := range events {
		if ev.name == "notice" {
			t.Errorf("notice after demo-2 came back: %s", ev.data)
		}
		listed = listed || ev.name == "item.done" && strings.Contains(ev.data, `"mcp_list_tools"`) && strings.Contains(ev.data, `"server_label":"demo-2"`)
	}
	if !listed || events[len(events)-1].name != "completed" {
		t.Errorf("demo-2 is not offered again: %v", events)
	}
}

type healthJSON struct {
	Status    string  `json:"status"`
	LastError *string `json:"last_error"`
}

func healthOf(t *testing.T, base, label string) healthJSON {
	t.Helper()
	st, body := do(t, "GET", base+"/api/mcp/servers/"+label, "")
	var s struct {
		Health healthJSON `json:"health"`
	}
	if err := json.Unmarshal([]byte(body), &s); st != 200 || err != nil {
		t.Fatalf("GET server %s: %d %s", label, st, body)
	}
	return s.Health
}
