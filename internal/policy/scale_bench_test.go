package policy

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// scaleSnapshot is a workspace of servers × tools as the snapshot holds
// it: a mix of workspace policies (a tenth always, a twentieth blocked, a
// tenth locked never), read-only hints, and tools first seen after the
// server's first discovery.
func scaleSnapshot(servers, tools int) ToolSnapshot {
	first := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	later := first.Add(time.Hour)
	yes := true
	s := ToolSnapshot{Version: 1, Settings: Settings{DefaultPolicy: AskUnlessReadOnly}, Servers: make([]SnapshotServer, servers)}
	for i := range s.Servers {
		srv := Server{Label: fmt.Sprintf("srv-%04d", i), URL: fmt.Sprintf("https://mcp%d.example/mcp", i), Enabled: true,
			Headers: map[string]string{}, FirstDiscoveredAt: &first, Health: Health{Status: HealthOK}}
		ts := make([]Tool, tools)
		for j := range ts {
			t := Tool{DiscoveredTool: DiscoveredTool{Name: fmt.Sprintf("tool_%03d", j)}, ServerLabel: srv.Label, Discovered: true,
				Digest: fmt.Sprintf("sha256:%064d", j), FirstSeenAt: &first, ChangedAt: &first}
			switch {
			case j%10 == 0:
				p := Always
				t.Policy = &p
			case j%20 == 1:
				p := Blocked
				t.Policy = &p
			case j%10 == 2:
				p := Never
				t.Policy, t.PolicyLocked, t.GrantedDigest = &p, true, t.Digest
			case j%3 == 0:
				t.Annotations.ReadOnlyHint = &yes
			case j == tools-1:
				t.FirstSeenAt = &later
			}
			ts[j] = t
		}
		s.Servers[i] = SnapshotServer{Server: srv, Tools: ts}
	}
	return s
}

// scaleUser is one person's share of a turn: personal policies on 10
// servers and grants on 5.
func scaleUser() ([]UserPolicy, map[string]map[string]GrantRef) {
	var mine []UserPolicy
	grants := map[string]map[string]GrantRef{}
	for i := range 10 {
		mine = append(mine, UserPolicy{ServerLabel: fmt.Sprintf("srv-%04d", i*7), ToolName: "tool_004", Policy: Never})
	}
	for i := range 5 {
		grants[fmt.Sprintf("srv-%04d", i*11)] = map[string]GrantRef{"tool_010": {ID: "g", Conversation: true}}
	}
	return mine, grants
}

// BenchmarkGroupTools_1000x100 is the grouping of one turn at 1,000
// servers × 100 tools, without the database: "regroup_all" groups every
// tool of every server for the turn (what each turn did before, the
// baseline); "from_snapshot" is what a turn does now, the replica's copy
// being at the current version.
func BenchmarkGroupTools_1000x100(b *testing.B) {
	raw := scaleSnapshot(1000, 100)
	mine, grants := scaleUser()
	b.Run("regroup_all", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			byServer := map[string][]UserPolicy{}
			for _, up := range mine {
				byServer[up.ServerLabel] = append(byServer[up.ServerLabel], up)
			}
			out := []ServerTools{}
			for _, srv := range raw.Servers {
				g := GroupTools(srv.Server, raw.Settings, srv.Tools, byServer[srv.Server.Label], grants[srv.Server.Label])
				g.withRules(ruledTools(raw.Rules, srv.Server.Label))
				out = append(out, g)
			}
			if len(out) != 1000 {
				b.Fatal(len(out))
			}
		}
	})
	snap := newSnapshot(raw)
	b.Run("from_snapshot", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			out, _ := snap.request(mine, grants, nil)
			if len(out) != 1000 {
				b.Fatal(len(out))
			}
		}
	})
	b.Run("snapshot_build", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			newSnapshot(raw)
		}
	})
}

// The copy's grouping equals grouping every server for the turn, with
// personal policies and grants on some servers.
func TestSnapshotRequest_EqualsGroupingEveryServer(t *testing.T) {
	raw := scaleSnapshot(30, 12)
	raw.Rules = []RuleList{{ServerLabel: "srv-0003"}, {ServerLabel: "srv-0004", ToolName: "tool_005"}}
	raw.Servers[2].Server.Health = Health{Status: HealthUnreachable}
	raw.Servers[5].Server.Health = Health{Status: HealthUnreachable}
	mine, grants := scaleUser()
	grants["srv-0003"] = map[string]GrantRef{"tool_001": {ID: "g2"}}
	keep := map[string]bool{"srv-0005": true}
	got, gotSkipped := newSnapshot(raw).request(mine, grants, keep)
	var want []ServerTools
	var wantSkipped []SkippedServer
	for _, srv := range raw.Servers {
		var m []UserPolicy
		for _, up := range mine {
			if up.ServerLabel == srv.Server.Label {
				m = append(m, up)
			}
		}
		g := GroupTools(srv.Server, raw.Settings, srv.Tools, m, grants[srv.Server.Label])
		g.withRules(ruledTools(raw.Rules, srv.Server.Label))
		switch {
		case !g.Offered():
		case srv.Server.Health.Status == HealthUnreachable && !keep[srv.Server.Label]:
			wantSkipped = append(wantSkipped, SkippedServer{Label: srv.Server.Label, Health: srv.Server.Health, Tools: g})
		default:
			want = append(want, g)
		}
	}
	if diff := cmpDiff(want, got); diff != "" {
		t.Errorf("groups (-want +got):\n%s", diff)
	}
	if diff := cmpDiff(wantSkipped, gotSkipped); diff != "" {
		t.Errorf("skipped (-want +got):\n%s", diff)
	}
	if len(got) != 29 || len(gotSkipped) != 1 {
		t.Errorf("%d offered, %d skipped; want 29 and 1", len(got), len(gotSkipped))
	}
}

func cmpDiff(want, got any) string { return cmp.Diff(want, got) }
