package postgres_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/postgres"
	"github.com/toolgate/toolgate/internal/testdb"
)

// TestServerHealth_FailingSinceKeepsTheFirstFailure: a server failing again
// keeps when it began failing; reaching it clears the failure; a failure of
// a URL the server no longer has changes nothing.
func TestServerHealth_FailingSinceKeepsTheFirstFailure(t *testing.T) {
	r := newPolicyRepo(t)
	ctx := t.Context()
	health := func() policy.Health {
		t.Helper()
		s, err := r.Servers.Get(ctx, "crm", false)
		if err != nil {
			t.Fatal(err)
		}
		return s.Health
	}
	if h := health(); h.Status != policy.HealthUnknown || h.CheckedAt != nil {
		t.Fatalf("a new server's health is %+v, want unknown and never checked", h)
	}
	t1 := time.Now().Add(-time.Minute).UTC().Truncate(time.Microsecond)
	t2 := t1.Add(30 * time.Second)
	if err := r.Health.MarkUnreachable(ctx, "crm", "https://crm.example/mcp", "connection refused", t1); err != nil {
		t.Fatal(err)
	}
	if err := r.Health.MarkUnreachable(ctx, "crm", "", "timed out", t2); err != nil {
		t.Fatal(err)
	}
	if h := health(); h.Status != policy.HealthUnreachable || !h.Since.Equal(t1) || !h.CheckedAt.Equal(t2) || h.LastError != "timed out" {
		t.Errorf("health %+v: want unreachable since %v, checked %v, the last error", h, t1, t2)
	}
	if err := r.Health.MarkHealthy(ctx, "crm", t2.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if h := health(); h.Status != policy.HealthOK || h.Since != nil || h.LastError != "" || !h.OKAt.Equal(t2.Add(time.Second)) {
		t.Errorf("health after a check that worked: %+v", h)
	}
	if err := r.Health.MarkUnreachable(ctx, "crm", "https://old.example/mcp", "refused", t2.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	if h := health(); h.Status != policy.HealthOK {
		t.Errorf("a failure of another URL changed the health: %+v", h)
	}
	if err := r.Health.MarkUnreachable(ctx, "gone", "", "refused", t2); err != nil {
		t.Errorf("a failure of a server that does not exist: %v, want none", err)
	}
}

// TestServerHealth_ReplicasClaimEachRecheckOnce: several replicas asking at
// once for servers to re-check get each unreachable server once, and none
// again within the interval; healthy and disabled servers are never
// claimed.
func TestServerHealth_ReplicasClaimEachRecheckOnce(t *testing.T) {
	pool := testdb.New(t)
	ctx := t.Context()
	store := postgres.NewStore(pool)
	r := store.Repo()
	long := time.Now().Add(-time.Hour).Truncate(time.Microsecond)
	var down []string
	for i, label := range []string{"a", "b", "c", "d", "e", "f", "ok", "off"} {
		if _, err := r.Servers.Insert(ctx, policy.Server{Label: label, URL: "https://" + label + ".example/mcp",
			Headers: map[string]string{}, Enabled: label != "off"}); err != nil {
			t.Fatal(err)
		}
		if label == "ok" {
			if err := r.Health.MarkHealthy(ctx, label, long); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := r.Health.MarkUnreachable(ctx, label, "", "refused", long.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
		if label != "off" {
			down = append(down, label)
		}
	}

	// Four replicas, each on its own store (its own connections).
	var mu sync.Mutex
	var claimed []string
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := postgres.NewStore(pool).Repo().Health.ClaimRechecks(ctx, time.Minute, 4)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			claimed = append(claimed, got...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	slices.Sort(claimed)
	if !slices.Equal(claimed, down) {
		t.Errorf("claimed %v, want each enabled unreachable server once: %v", claimed, down)
	}
	again, err := r.Health.ClaimRechecks(ctx, time.Minute, 10)
	if err != nil || len(again) != 0 {
		t.Errorf("claimed again within the interval: %v, %v", again, err)
	}
	if s, err := r.Servers.Get(ctx, "a", false); err != nil || s.Health.Status != policy.HealthUnreachable || !s.Health.Since.Equal(long) {
		t.Errorf("a claim changed more than when it was checked: %+v, %v", s.Health, err)
	}
}
