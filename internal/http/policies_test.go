package http_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// effective is a tool's effective policy with its source, as the API reports it.
type effective struct{ Policy, Source string }

func (e *apiEnv) effective(label, name string) effective {
	e.t.Helper()
	t, ok := e.tools(label)[name]
	if !ok {
		e.t.Fatalf("tool %s/%s not listed", label, name)
	}
	return effective{t.EffectivePolicy, t.PolicySource}
}

func TestPolicy_PrecedenceToolThenServerThenGlobal(t *testing.T) {
	e := newAPI(t)
	e.createDemo("weather")
	const tool = "delete_forecast"
	steps := []struct {
		name   string
		method string
		path   string
		body   any
		want   effective
	}{
		{"initial global default asks: not read-only", "", "", nil, effective{"always", "global"}},
		{"global default never", "PUT", "/api/settings", map[string]string{"default_policy": "never"}, effective{"never", "global"}},
		{"global default changes", "PUT", "/api/settings", map[string]string{"default_policy": "always"}, effective{"always", "global"}},
		{"server default wins over global", "PATCH", "/api/mcp/servers/weather", map[string]string{"default_policy": "blocked"}, effective{"blocked", "server"}},
		{"tool policy wins over server", "PUT", "/api/mcp/servers/weather/tools/" + tool + "/approval-policy", map[string]string{"policy": "never"}, effective{"never", "tool"}},
		{"global change leaves tool policy alone", "PUT", "/api/settings", map[string]string{"default_policy": "never"}, effective{"never", "tool"}},
		{"deleting the tool policy falls back to server", "DELETE", "/api/mcp/servers/weather/tools/" + tool + "/approval-policy", nil, effective{"blocked", "server"}},
		{"clearing the server default falls back to global", "PATCH", "/api/mcp/servers/weather", map[string]any{"default_policy": nil}, effective{"never", "global"}},
	}
	for _, st := range steps {
		if st.method != "" {
			e.must(200, st.method, st.path, st.body, nil)
		}
		if diff := cmp.Diff(st.want, e.effective("weather", tool)); diff != "" {
			t.Errorf("%s: effective policy (-want +got):\n%s", st.name, diff)
		}
	}
	// Other tools of the server were never given a policy of their own.
	if got := e.effective("weather", "get_forecast"); got != (effective{"never", "global"}) {
		t.Errorf("get_forecast = %+v", got)
	}
}

func TestPolicy_PutReturnsToolAndListsExplicitPolicies(t *testing.T) {
	e := newAPI(t)
	e.createDemo("weather")
	var got tool
	e.must(200, "PUT", "/api/mcp/servers/weather/tools/send_alert/approval-policy", map[string]string{"policy": "always"}, &got)
	if got.Name != "send_alert" || deref(got.Policy) != "always" || got.EffectivePolicy != "always" ||
		got.PolicySource != "tool" || deref(got.PolicyUpdatedBy) != e.admin.Email {
		t.Errorf("PUT response = %+v", got)
	}
	var pols struct {
		Policies []struct {
			ServerID  string `json:"server_label"`
			OldID     string `json:"server_id"`
			ToolName  string `json:"tool_name"`
			Policy    string `json:"policy"`
			UpdatedAt string `json:"updated_at"`
			UpdatedBy string `json:"updated_by"`
		}
	}
	e.must(200, "GET", "/api/mcp/servers/weather/tools/approval-policies", nil, &pols)
	if len(pols.Policies) != 1 {
		t.Fatalf("policies = %+v", pols.Policies)
	}
	p := pols.Policies[0]
	if p.ServerID != "weather" || p.OldID != "weather" || p.ToolName != "send_alert" || p.Policy != "always" || p.UpdatedBy != e.admin.Email || p.UpdatedAt == "" {
		t.Errorf("policy = %+v", p)
	}
}

func TestPolicy_ForUndiscoveredToolIsKeptAndAppliesWhenItAppears(t *testing.T) {
	e := newAPI(t)
	e.must(201, "POST", "/api/mcp/servers", map[string]any{"label": "later", "url": "http://127.0.0.1:1/mcp"}, nil)
	var got tool
	e.must(200, "PUT", "/api/mcp/servers/later/tools/delete_forecast/approval-policy", map[string]string{"policy": "blocked"}, &got)
	if got.Discovered || got.EffectivePolicy != "blocked" || got.PolicySource != "tool" {
		t.Errorf("undiscovered tool = %+v", got)
	}
	if tools := e.tools("later"); len(tools) != 1 || tools["delete_forecast"].Discovered {
		t.Errorf("tools before discovery = %+v", tools)
	}
	// The server comes up: the tool is discovered and keeps its policy.
	e.must(200, "PATCH", "/api/mcp/servers/later", map[string]string{"url": e.demoURL}, nil)
	tools := e.tools("later")
	if d := tools["delete_forecast"]; !d.Discovered || d.EffectivePolicy != "blocked" || d.PolicySource != "tool" {
		t.Errorf("after discovery = %+v", d)
	}
	if len(tools) != 6 {
		t.Errorf("%d tools, want 6", len(tools))
	}
}

func TestPolicy_DeleteWithoutPolicyChangesNothing(t *testing.T) {
	e := newAPI(t)
	e.createDemo("weather")
	before := len(e.audit())
	var got tool
	e.must(200, "DELETE", "/api/mcp/servers/weather/tools/get_forecast/approval-policy", nil, &got)
	if got.Policy != nil || got.PolicySource != "global" {
		t.Errorf("DELETE response = %+v", got)
	}
	if after := len(e.audit()); after != before {
		t.Errorf("audit grew from %d to %d for a delete that changed nothing", before, after)
	}
}

func TestBulkPolicies_SetsAllAtOnce(t *testing.T) {
	e := newAPI(t)
	e.createDemo("weather")
	e.must(200, "PUT", "/api/settings", map[string]string{"default_policy": "never"}, nil)
	e.must(200, "PUT", "/api/mcp/servers/weather/tools/send_alert/approval-policy", map[string]string{"policy": "blocked"}, nil)
	var out struct{ Tools []tool }
	e.must(200, "PUT", "/api/mcp/servers/weather/tools/approval-policies", map[string]any{
		"policies": map[string]any{"get_forecast": "never", "delete_forecast": "always", "not_yet_seen": "blocked", "send_alert": nil},
	}, &out)
	got := map[string]effective{}
	for _, tl := range out.Tools {
		got[tl.Name] = effective{tl.EffectivePolicy, tl.PolicySource}
	}
	want := map[string]effective{
		"get_forecast": {"never", "tool"}, "delete_forecast": {"always", "tool"}, "not_yet_seen": {"blocked", "tool"},
		"send_alert": {"never", "global"}, "list_forecasts": {"never", "global"}, "set_forecast": {"never", "global"},
		"reset_forecasts": {"never", "global"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tools after bulk update (-want +got):\n%s", diff)
	}
}

func TestBulkPolicies_OneBadValueStoresNone(t *testing.T) {
	e := newAPI(t)
	e.createDemo("weather")
	before := e.snapshot()
	var apiErr apiError
	e.must(400, "PUT", "/api/mcp/servers/weather/tools/approval-policies", map[string]any{
		"policies": map[string]any{"get_forecast": "never", "delete_forecast": "sometimes", "send_alert": "always"},
	}, &apiErr)
	if apiErr.Error.Code != "invalid_policy" || apiErr.Error.Fields["policies.delete_forecast"] == "" {
		t.Errorf("error = %+v", apiErr.Error)
	}
	if diff := cmp.Diff(before, e.snapshot()); diff != "" {
		t.Errorf("a rejected bulk update changed state (-before +after):\n%s", diff)
	}
}

// snapshot is every piece of state the API shows, to prove a rejected request changed nothing.
func (e *apiEnv) snapshot() map[string]json.RawMessage {
	e.t.Helper()
	out := map[string]json.RawMessage{}
	add := func(path string) {
		res := e.call("GET", path, nil)
		out[path] = res.body
	}
	add("/api/mcp/servers")
	add("/api/settings")
	add("/api/audit?limit=500")
	var list struct{ Servers []server }
	_ = json.Unmarshal(out["/api/mcp/servers"], &list)
	for _, s := range list.Servers {
		add("/api/mcp/servers/" + s.Label + "/tools")
		add("/api/mcp/servers/" + s.Label + "/tools/approval-policies")
	}
	return out
}
