package http_test

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/auth"
)

const settingsEventsPath = "/api/settings/events"

type settingsChanged struct {
	Version int64    `json:"version"`
	Kinds   []string `json:"kinds"`
}

// followSettings opens GET /api/settings/events as e's user (hdr added)
// once e's replica listens for notifications, and returns the version the
// stream started at and its events.
func (e *apiEnv) followSettings(ctx context.Context, hdr map[string]string) (int64, <-chan sseEvent) {
	e.t.Helper()
	<-e.listening
	res, evs := e.events(ctx, settingsEventsPath, hdr)
	if res.StatusCode != 200 {
		e.t.Fatalf("GET %s: %d", settingsEventsPath, res.StatusCode)
	}
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		e.t.Fatalf("Content-Type %q, want text/event-stream", ct)
	}
	v, err := strconv.ParseInt(res.Header.Get("X-Settings-Version"), 10, 64)
	if err != nil || v < 1 {
		e.t.Fatalf("X-Settings-Version %q: want the version the stream starts at", res.Header.Get("X-Settings-Version"))
	}
	return v, evs
}

// nextChange waits at most within for the stream's next settings.changed.
func nextChange(t *testing.T, evs <-chan sseEvent, within time.Duration, what string) (settingsChanged, sseEvent) {
	t.Helper()
	select {
	case ev, ok := <-evs:
		if !ok {
			t.Fatalf("%s: the stream ended", what)
		}
		var got settingsChanged
		if ev.Name != "settings.changed" || json.Unmarshal(ev.Data, &got) != nil {
			t.Fatalf("%s: got %s %s, want settings.changed", what, ev.Name, ev.Data)
		}
		return got, ev
	case <-time.After(within):
		t.Fatalf("%s: no settings.changed within %v", what, within)
	}
	panic("unreachable")
}

// An admin's open settings page hears of every change another admin makes
// (a tool policy, a lock, a server default, the global default, a rule, a
// card, a webhook) within a second, with the version moving on for the
// workspace's changes and as the event's id.
func TestSettingsEvents_AnotherAdminsChangeReachesTheStreamWithinASecond(t *testing.T) {
	e := newAPI(t)
	e.createDemo("demo")
	other, _ := e.newUser(auth.Admin)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start, evs := e.followSettings(ctx, nil)
	tool := "/api/mcp/servers/demo/tools/delete_forecast"
	changes := []struct {
		what         string
		method, path string
		body         any
		kind         string
	}{
		{"a tool policy", "PUT", tool + "/approval-policy", map[string]any{"policy": "always"}, "workspace"},
		{"a lock", "PUT", tool + "/approval-policy", map[string]any{"policy": "always", "locked": true}, "workspace"},
		{"a server default", "PATCH", "/api/mcp/servers/demo", map[string]any{"default_policy": "always"}, "workspace"},
		{"the global default", "PUT", "/api/settings", map[string]any{"default_policy": "always"}, "workspace"},
		{"a rule", "PUT", tool + "/rules", map[string]any{"rules": []ruleJSON{{When: "true", Decision: "ask"}}}, "workspace"},
		{"an approval card", "PUT", tool + "/approval-card", map[string]any{"approval_text": "Delete {city}"}, "card"},
		{"result masking", "PATCH", "/api/mcp/servers/demo", map[string]any{"mask_results": false}, "server"},
	}
	last := start
	for _, c := range changes {
		other.must(200, c.method, c.path, c.body, nil)
		got, ev := nextChange(t, evs, time.Second, c.what)
		// The PATCH that switches masking writes more of the server's row,
		// which may move the version too: its kind must be among them.
		if !slices.Contains(got.Kinds, c.kind) {
			t.Errorf("%s: kinds %v, want %s among them", c.what, got.Kinds, c.kind)
		}
		if c.kind == "workspace" && got.Version <= last {
			t.Errorf("%s: version %d, want past %d", c.what, got.Version, last)
		}
		if ev.ID != strconv.FormatInt(got.Version, 10) {
			t.Errorf("%s: id %q, want the version %d", c.what, ev.ID, got.Version)
		}
		last = got.Version
	}
	var hook webhookJSON
	other.must(201, "POST", "/api/webhooks", map[string]any{"url": "http://127.0.0.1:9/hook", "events": []string{"approval.required"}}, &hook)
	if got, _ := nextChange(t, evs, time.Second, "a webhook"); len(got.Kinds) != 1 || got.Kinds[0] != "webhook" {
		t.Errorf("a webhook: kinds %v, want [webhook]", got.Kinds)
	}
}

// A member's stream tells them of the workspace's changes and their own,
// never of another member's personal policies, the admins' webhooks or
// decision hooks, and never carries any of their content.
func TestSettingsEvents_AMemberHearsOnlyWhatTheyMaySee(t *testing.T) {
	e := newAPI(t)
	e.createDemo("demo")
	ann, _ := e.newUser(auth.Member)
	bob, bobUser := e.newUser(auth.Member)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, annEvents := ann.followSettings(ctx, nil)
	_, bobEvents := bob.followSettings(ctx, nil)

	// Bob's own policy, then the admins' webhook: Ann hears of neither. The
	// workspace change after them is the first thing she hears (the
	// notifications arrive in commit order).
	bob.must(200, "PUT", "/api/mcp/servers/demo/tools/delete_forecast/approval-policy", map[string]any{"policy": "blocked"}, nil)
	if got, _ := nextChange(t, bobEvents, time.Second, "Bob's own policy, on his stream"); len(got.Kinds) != 1 || got.Kinds[0] != "personal" {
		t.Errorf("Bob's stream: kinds %v, want [personal]", got.Kinds)
	}
	e.must(201, "POST", "/api/webhooks", map[string]any{"url": "http://127.0.0.1:9/hook", "events": []string{"approval.required"}}, nil)
	e.must(200, "PUT", "/api/decision-hook", map[string]any{"url": "http://127.0.0.1:9/decide"}, nil)
	e.must(200, "PUT", "/api/settings", map[string]any{"default_policy": "always"}, nil)
	got, ev := nextChange(t, annEvents, time.Second, "the workspace's change, on Ann's stream")
	if len(got.Kinds) != 1 || got.Kinds[0] != "workspace" {
		t.Errorf("Ann's first event says %v; want [workspace] only (nothing of Bob's policy, the webhook or the decision hook)", got.Kinds)
	}
	for _, secret := range []string{bobUser.ID, "blocked", "delete_forecast", "127.0.0.1"} {
		if strings.Contains(string(ev.Data), secret) {
			t.Errorf("Ann's event %s carries %q", ev.Data, secret)
		}
	}
	// Ann's own change she hears of.
	ann.must(200, "PUT", "/api/mcp/servers/demo/tools/get_forecast/approval-policy", map[string]any{"policy": "always"}, nil)
	if got, _ := nextChange(t, annEvents, time.Second, "Ann's own policy"); len(got.Kinds) != 1 || got.Kinds[0] != "personal" {
		t.Errorf("Ann's own change: kinds %v, want [personal]", got.Kinds)
	}
}

// Only a signed-in caller from the app's own origin opens the stream; a
// bad Last-Event-ID is refused; one behind the version now says resync at
// once, one at it says nothing.
func TestSettingsEvents_WhoMayOpenItAndWhereItResumes(t *testing.T) {
	e := newAPI(t)
	e.createDemo("demo")
	if r := e.anon().call("GET", settingsEventsPath, nil); r.status != 401 {
		t.Errorf("without credentials: %d, want 401", r.status)
	}
	if r, body := e.raw("GET", settingsEventsPath, "", map[string]string{"Authorization": "Bearer " + e.token,
		"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}); r.status != 403 || body.Error.Code != "cross_origin" {
		t.Errorf("from another site: %d %q, want 403 cross_origin", r.status, body.Error.Code)
	}
	if r, body := e.raw("GET", settingsEventsPath, "", map[string]string{"Authorization": "Bearer " + e.token,
		"Last-Event-ID": "yesterday"}); r.status != 400 || body.Error.Code != "invalid_last_event_id" {
		t.Errorf("Last-Event-ID yesterday: %d %q, want 400 invalid_last_event_id", r.status, body.Error.Code)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	now, _ := e.followSettings(ctx, nil)
	_, behind := e.followSettings(ctx, map[string]string{"Last-Event-ID": strconv.FormatInt(now-1, 10)})
	if got, ev := nextChange(t, behind, time.Second, "resumed behind"); len(got.Kinds) != 1 || got.Kinds[0] != "resync" || got.Version != now || ev.ID != strconv.FormatInt(now, 10) {
		t.Errorf("resumed behind the version: %+v id %s, want resync at %d", got, ev.ID, now)
	}
	_, current := e.followSettings(ctx, map[string]string{"Last-Event-ID": strconv.FormatInt(now, 10)})
	e.setPolicy("demo", "delete_forecast", "always")
	if got, _ := nextChange(t, current, time.Second, "resumed at the version"); len(got.Kinds) != 1 || got.Kinds[0] != "workspace" {
		t.Errorf("resumed at the version, the first event says %v; want the change that followed, no resync", got.Kinds)
	}
}

// Two replicas on one database: a change made through one reaches a
// settings page following the other within a second.
func TestSettingsEvents_AChangeOnOneReplicaReachesAPageOnAnother(t *testing.T) {
	e := newAPI(t)
	e.createDemo("demo")
	b := e.replica()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start, onB := b.followSettings(ctx, nil)
	e.must(200, "PATCH", "/api/mcp/servers/demo", map[string]any{"default_policy_locked": true}, nil)
	got, _ := nextChange(t, onB, time.Second, "a lock made on the other replica")
	if len(got.Kinds) != 1 || got.Kinds[0] != "workspace" || got.Version <= start {
		t.Errorf("on the other replica: %+v, want workspace past version %d", got, start)
	}
}
