package main

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/postgres"
	"github.com/toolgate/toolgate/internal/testdb"
)

// BenchmarkRun_MessageTurn runs message turns one after another against the
// whole program and the slow upstream (in a process of its own, answering
// at once), with servers × tools seeded into the database as cmd/bench
// seeds them (the servers need not run): "1x1" is the baseline beside
// "128x1000" (the most servers the provider accepts). ns/op is a whole turn; ms-to-upstream is the median time from
// posting the message to the request reaching the upstream (cmd/bench's
// "time before the upstream call"). With -cpuprofile it shows where a
// turn's time goes:
// go test -run '^$' -bench MessageTurn -benchtime 30x ./cmd/api/
func BenchmarkRun_MessageTurn(b *testing.B) {
	upstream := startSlowUpstream(b)
	for _, size := range []struct{ servers, tools int }{{1, 1}, {128, 1000}} {
		b.Run(fmt.Sprintf("%dx%d", size.servers, size.tools), func(b *testing.B) {
			dbURL := testdb.URL(b)
			base, _, _ := start(b, map[string]string{"DATABASE_URL": dbURL, "OFFLINE_DEMO": "true", "LOG_LEVEL": "warn",
				"OPENAI_BASE_URL": upstream + "/v1/", "USER_MESSAGES_PER_MINUTE": "10000", "UPSTREAM_MAX_TOOL_ENTRIES": "100000"})
			seedTools(b, dbURL, size.servers, size.tools)
			messageTurn(b, base) // the policy snapshot and the rendered tools are cached
			var toUpstream []time.Duration
			for b.Loop() {
				toUpstream = append(toUpstream, messageTurn(b, base))
			}
			slices.Sort(toUpstream)
			b.ReportMetric(float64(toUpstream[len(toUpstream)/2])/float64(time.Millisecond), "ms-to-upstream")
		})
	}
}

// seedTools inserts servers × tools straight into the database.
func seedTools(b testing.TB, dbURL string, servers, tools int) {
	ctx := context.Background()
	pool, err := postgres.Open(ctx, dbURL, false, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, fmt.Sprintf(`
INSERT INTO mcp_servers (label, url, tools_refreshed_at)
  SELECT 'bench' || s, 'http://127.0.0.1:9/mcp', now() FROM generate_series(1, %[1]d) s;
INSERT INTO mcp_tools (server_label, name, description, input_schema, annotations, digest, first_seen_at, definition_changed_at)
  SELECT 'bench' || s, 'tool_' || t, 'a seeded tool', '{"type":"object","properties":{"q":{"type":"string"}}}',
         '{"readOnlyHint":true}', md5(s || '.' || t), now(), now()
  FROM generate_series(1, %[1]d) s, generate_series(1, %[2]d) t;`, servers, tools)); err != nil {
		b.Fatal(err)
	}
}

// messageTurn posts a message the slow upstream answers at once, reads the
// stream to its end and returns the time from posting to the request
// reaching the upstream.
func messageTurn(b testing.TB, base string) time.Duration {
	req, _ := http.NewRequest("POST", base+"/api/responses", strings.NewReader(`{"input":"answer at once"}`))
	req.Header.Set("Content-Type", "application/json")
	withSession(req)
	start := time.Now()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	r := bufio.NewReader(res.Body)
	var arrived int64
	for {
		line, err := r.ReadString('\n')
		if _, rest, ok := strings.Cut(line, `"arrived `); ok && arrived == 0 {
			arrived, _ = strconv.ParseInt(rest[:strings.IndexByte(rest, ' ')], 10, 64)
		}
		if strings.HasPrefix(line, "event: completed") && arrived != 0 {
			return time.Unix(0, arrived).Sub(start)
		}
		if err != nil || strings.HasPrefix(line, "event: failed") || strings.HasPrefix(line, "event: error") {
			b.Fatalf("turn: %q %v", line, err)
		}
	}
}
