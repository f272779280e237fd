package prelist

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/policy"
)

// The groups a request is built from after the listings (checked): what
// would run unasked and cannot be vouched for asks, everything else is as
// the policies grouped it, and the snapshot's groups are never changed.
func TestPrelist_CheckedMovesWhatCannotBeVouchedForToAsking(t *testing.T) {
	grant := &policy.GrantRef{ID: "grant_1", Conversation: true}
	groups := []policy.ServerTools{
		{Server: policy.Server{Label: "vault"},
			Never: []policy.GroupedTool{
				{Name: "balance", Source: policy.FromTool},
				{Name: "gone", Source: policy.FromUser},
				{Name: "rug", Source: policy.FromConversation, Grant: grant},
			},
			Always: []policy.GroupedTool{{Name: "wipe", Source: policy.FromTool}}},
		{Server: policy.Server{Label: "ruled"},
			Always: []policy.GroupedTool{{Name: "pay", Source: policy.FromUser, AsksBecause: &policy.AsksBecause{Reason: policy.ReasonRules}}},
			Ruled:  map[string]policy.RuledTool{"pay": {Policy: policy.Never, Source: policy.FromUser}}},
		{Server: policy.Server{Label: "quiet"}, Always: []policy.GroupedTool{{Name: "ask", Source: policy.FromTool}}},
	}
	before := cloneGroups(groups)
	ls := map[string]*listing{
		"vault": {listed: map[string]bool{"balance": true, "rug": true, "wipe": true}, changed: map[string]bool{"rug": true}},
		"ruled": {err: errPrelistSlow},
	}
	got := checked(groups, ls)

	if diff := cmp.Diff(before, groups); diff != "" {
		t.Fatalf("checked changed the groups it was given (-before +after):\n%s", diff)
	}
	changed := &policy.AsksBecause{Reason: policy.ReasonChanged}
	unverified := &policy.AsksBecause{Reason: conversation.ReasonUnverified}
	want := []policy.ServerTools{
		{Server: policy.Server{Label: "vault"},
			Never: []policy.GroupedTool{{Name: "balance", Source: policy.FromTool}},
			Always: []policy.GroupedTool{
				{Name: "gone", Source: policy.FromUnknown, AsksBecause: unverified},
				{Name: "rug", Source: policy.FromChanged, AsksBecause: changed},
				{Name: "wipe", Source: policy.FromTool},
			}},
		{Server: policy.Server{Label: "ruled"},
			Never:  []policy.GroupedTool{},
			Always: []policy.GroupedTool{{Name: "pay", Source: policy.FromUnknown, AsksBecause: unverified}},
			Ruled:  map[string]policy.RuledTool{"pay": {Policy: policy.Always, Source: policy.FromUnknown}}},
		{Server: policy.Server{Label: "quiet"}, Always: []policy.GroupedTool{{Name: "ask", Source: policy.FromTool}}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("checked groups (-want +got):\n%s", diff)
	}
	// What the turn makes of an approval request for them: nothing approves
	// the ruled tool by its policy any more, and the grant is not named.
	if rt, ok := got[1].HasRules("pay"); !ok || rt.Policy != policy.Always {
		t.Errorf("pay's policy without rules = %+v, want always", rt)
	}
	if g := got[0].GrantOf("rug"); g != nil {
		t.Errorf("rug still runs by grant %+v", g)
	}
	if unchanged := checked(groups[2:], nil); &unchanged[0] != &groups[2] {
		t.Error("groups with nothing unasked were copied")
	}
}

func cloneGroups(gs []policy.ServerTools) []policy.ServerTools {
	out := make([]policy.ServerTools, len(gs))
	for i, g := range gs {
		g.Never = append([]policy.GroupedTool(nil), g.Never...)
		g.Always = append([]policy.GroupedTool(nil), g.Always...)
		if g.Ruled != nil {
			r := map[string]policy.RuledTool{}
			for k, v := range g.Ruled {
				r[k] = v
			}
			g.Ruled = r
		}
		out[i] = g
	}
	return out
}

// slowLister is an MCP server's listing as these tests need it: it counts
// listings and answers after delay (or when its context ends).
type slowLister struct {
	delay time.Duration
	deaf  bool // ignores its context, as a stuck connection might
	calls atomic.Int32
}

func (l *slowLister) ListTools(ctx context.Context, _ string, _ map[string]string) ([]policy.DiscoveredTool, error) {
	l.calls.Add(1)
	if l.deaf {
		time.Sleep(l.delay)
		return nil, errors.New("too late")
	}
	select {
	case <-time.After(l.delay):
		return []policy.DiscoveredTool{{Name: "ping"}}, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

type noChanges struct{}

func (noChanges) RecordDefinitions(context.Context, string, []policy.DiscoveredTool) ([]string, error) {
	return nil, nil
}

// Requests that start while a server is being listed share that listing:
// ten at once list it once. One that waits past the time limit gets a
// failed listing at the limit, not when the listing ends (even one that
// does not heed its context).
func TestPrelist_ConcurrentRequestsShareOneListingAndWaitNoLongerThanTheLimit(t *testing.T) {
	l := &slowLister{delay: 50 * time.Millisecond}
	p := &Listings{Options: Options{Lister: l, Recorder: noChanges{}, MaxAge: time.Minute, TimeLimit: time.Second},
		now: time.Now, cache: map[string]*listing{}}
	srv := policy.Server{Label: "busy", URL: "http://mcp.test/mcp"}
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			if got := p.get(t.Context(), srv); got.err != nil || !got.listed["ping"] {
				t.Errorf("listing = %+v", got)
			}
		})
	}
	wg.Wait()
	if n := l.calls.Load(); n != 1 {
		t.Errorf("ten concurrent requests listed %d times, want 1", n)
	}

	hang := &slowLister{delay: 3 * time.Second, deaf: true}
	p = &Listings{Options: Options{Lister: hang, Recorder: noChanges{}, MaxAge: time.Minute, TimeLimit: 100 * time.Millisecond},
		now: time.Now, cache: map[string]*listing{}}
	start := time.Now()
	got := p.get(t.Context(), srv)
	if took := time.Since(start); !errors.Is(got.err, errPrelistSlow) || took > time.Second {
		t.Errorf("a hanging server: %v after %s, want errPrelistSlow at about 100ms", got.err, took)
	}
}
