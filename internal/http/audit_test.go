package http_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAudit_RecordsEveryChangeNewestFirst(t *testing.T) {
	e := newAPI(t)
	e.createDemo("weather")
	e.must(200, "PUT", "/api/settings", map[string]any{"default_policy": "never", "default_policy_locked": true}, nil)
	e.must(200, "PUT", "/api/mcp/servers/weather/tools/delete_forecast/approval-policy", map[string]string{"policy": "always"}, nil)
	e.must(200, "PUT", "/api/mcp/servers/weather/tools/delete_forecast/approval-policy", map[string]string{"policy": "always"}, nil) // no change
	e.must(200, "PUT", "/api/mcp/servers/weather/tools/approval-policies", map[string]any{"policies": map[string]any{"get_forecast": "never", "delete_forecast": "blocked"}}, nil)
	e.must(200, "DELETE", "/api/mcp/servers/weather/tools/get_forecast/approval-policy", nil, nil)
	e.must(200, "PATCH", "/api/mcp/servers/weather", map[string]any{"description": "Forecasts", "headers": map[string]string{"X-Api-Key": "supersecretvalue-1234"}}, nil)
	e.must(204, "DELETE", "/api/mcp/servers/weather", nil, nil)

	type row struct {
		Actor, Action, Server, Tool string
		Before, After               string
	}
	var got []row
	for _, en := range e.audit() {
		got = append(got, row{en.Actor, en.Action, deref2(en.ServerLabel), deref2(en.ToolName), compact(en.Before), compact(en.After)})
	}
	ann := e.admin.Email // the actor is the signed-in user
	want := []row{
		{ann, "server.delete", "weather", "", `{"policies":{"delete_forecast":"blocked"},"server":{"approval_ttl_seconds":null,"default_policy":null,"default_policy_locked":false,"description":"Forecasts","enabled":true,"headers":{"X-Api-Key":"********1234"},"label":"weather","url":"` + e.demoURL + `"}}`, `null`},
		{ann, "server.update", "weather", "", `{"approval_ttl_seconds":null,"default_policy":null,"default_policy_locked":false,"description":"","enabled":true,"headers":{},"label":"weather","url":"` + e.demoURL + `"}`, `{"approval_ttl_seconds":null,"default_policy":null,"default_policy_locked":false,"description":"Forecasts","enabled":true,"headers":{"X-Api-Key":"********1234"},"label":"weather","url":"` + e.demoURL + `"}`},
		{ann, "policy.delete", "weather", "get_forecast", `{"policy":"never"}`, `null`},
		{ann, "policy.set", "weather", "get_forecast", `null`, `{"policy":"never"}`},
		{ann, "policy.set", "weather", "delete_forecast", `{"policy":"always"}`, `{"policy":"blocked"}`},
		{ann, "policy.set", "weather", "delete_forecast", `null`, `{"policy":"always"}`},
		{ann, "settings.update", "", "", `{"ask_everything":false,"default_policy":"ask_unless_read_only","default_policy_locked":false}`, `{"ask_everything":false,"default_policy":"never","default_policy_locked":true}`},
		{ann, "server.tools_changed", "weather", "", ``, ``},
		{ann, "server.create", "weather", "", `null`, `{"approval_ttl_seconds":null,"default_policy":null,"default_policy_locked":false,"description":"","enabled":true,"headers":{},"label":"weather","url":"` + e.demoURL + `"}`},
	}
	// The discovery entry lists six digests; its shape is checked below.
	if len(got) > 7 {
		if !strings.Contains(got[7].After, `"delete_forecast":"sha256:`) {
			t.Errorf("tools_changed after = %s", got[7].After)
		}
		got[7].Before, got[7].After = "", ""
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("audit log (-want +got):\n%s", diff)
	}
}

func TestAudit_PagesWithCursor(t *testing.T) {
	e := newAPI(t)
	e.createDemo("weather")
	for _, p := range []string{"always", "never", "blocked", "always", "never"} {
		e.must(200, "PUT", "/api/mcp/servers/weather/tools/send_alert/approval-policy", map[string]string{"policy": p}, nil)
	}
	all := e.audit() // 5 policy changes, tools_changed, create
	if len(all) != 7 {
		t.Fatalf("%d entries, want 7", len(all))
	}
	var ids []int64
	path := "/api/audit?limit=3"
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("paging does not end")
		}
		var p auditPage
		e.must(200, "GET", path, nil, &p)
		for _, en := range p.Entries {
			ids = append(ids, en.ID)
		}
		if p.NextCursor == nil {
			break
		}
		path = "/api/audit?limit=3&cursor=" + *p.NextCursor
	}
	var want []int64
	for _, en := range all {
		want = append(want, en.ID)
	}
	if diff := cmp.Diff(want, ids); diff != "" {
		t.Errorf("ids over pages (-want +got):\n%s", diff)
	}

	var filtered auditPage
	e.must(200, "GET", "/api/audit?action=server.create&server_label=weather", nil, &filtered)
	if len(filtered.Entries) != 1 || filtered.Entries[0].Action != "server.create" {
		t.Errorf("filtered = %+v", filtered.Entries)
	}
	var none auditPage
	e.must(200, "GET", "/api/audit?server_label=no-such-server", nil, &none)
	if len(none.Entries) != 0 {
		t.Errorf("server_label=no-such-server matched %d entries", len(none.Entries))
	}
	// server_id is the deprecated alias of server_label: filter and field.
	var old struct {
		Entries []map[string]any `json:"entries"`
	}
	e.must(200, "GET", "/api/audit?action=server.create&server_id=weather", nil, &old)
	if len(old.Entries) != 1 || old.Entries[0]["server_id"] != "weather" || old.Entries[0]["server_label"] != "weather" {
		t.Errorf("with the deprecated server_id filter: %+v", old.Entries)
	}
}

// The web app's filters are groups of actions ("Policy changes":
// policy.set and policy.delete); action takes them comma-separated, in the
// list and in the export, which the Export button downloads.
func TestAudit_ActionListFiltersListAndExport(t *testing.T) {
	e := newAPI(t)
	e.createDemo("weather")
	e.must(200, "PUT", "/api/mcp/servers/weather/tools/send_alert/approval-policy", map[string]string{"policy": "always"}, nil)
	e.must(200, "DELETE", "/api/mcp/servers/weather/tools/send_alert/approval-policy", nil, nil)
	e.must(200, "PUT", "/api/settings", map[string]any{"default_policy": "never"}, nil)

	actions := func(es []auditEntry) []string {
		var out []string
		for _, en := range es {
			out = append(out, en.Action)
		}
		return out
	}
	want := []string{"policy.delete", "policy.set"}
	var page auditPage
	e.must(200, "GET", "/api/audit?action=policy.set,%20policy.delete", nil, &page)
	if got := actions(page.Entries); !cmp.Equal(got, want) {
		t.Errorf("GET /api/audit?action=policy.set,policy.delete: %v, want %v", got, want)
	}
	if got := actions(e.export("?format=jsonl&action=policy.set,policy.delete")); !cmp.Equal(got, want) {
		t.Errorf("export of policy.set,policy.delete: %v, want %v", got, want)
	}
	if got := actions(e.export("?action=settings.update,,")); !cmp.Equal(got, []string{"settings.update"}) {
		t.Errorf("export of settings.update: %v", got)
	}
	if got := e.export("?action=nothing.such"); len(got) != 0 {
		t.Errorf("an unknown action matches %v", actions(got))
	}
}

func TestSettings_ReadAndUpdate(t *testing.T) {
	e := newAPI(t)
	var s struct {
		DefaultPolicy string `json:"default_policy"`
		Locked        bool   `json:"default_policy_locked"`
	}
	e.must(200, "GET", "/api/settings", nil, &s)
	if s.DefaultPolicy != "ask_unless_read_only" || s.Locked {
		t.Errorf("initial settings = %+v, want ask_unless_read_only, unlocked", s)
	}
	e.must(200, "PUT", "/api/settings", map[string]string{"default_policy": "always"}, &s)
	if s.DefaultPolicy != "always" || s.Locked {
		t.Errorf("after PUT default_policy = %+v", s)
	}
	e.must(200, "PUT", "/api/settings", map[string]bool{"default_policy_locked": true}, &s)
	if s.DefaultPolicy != "always" || !s.Locked {
		t.Errorf("after PUT default_policy_locked = %+v", s)
	}
	e.must(200, "GET", "/api/settings", nil, &s)
	if s.DefaultPolicy != "always" {
		t.Errorf("settings did not persist: %+v", s)
	}
}

func TestHealth_ReadyOnlyWithDatabase(t *testing.T) {
	e := newAPI(t)
	e.must(200, "GET", "/healthz", nil, nil)
	e.must(200, "GET", "/readyz", nil, nil)
	e.pool.Close()
	var got apiError
	e.must(503, "GET", "/readyz", nil, &got)
	if got.Error.Code != "database_unavailable" {
		t.Errorf("readyz error = %+v", got.Error)
	}
	e.must(200, "GET", "/healthz", nil, nil)
}

func compact(raw json.RawMessage) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func deref2(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
