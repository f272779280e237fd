package http_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

func TestChat_SplitLayoutMapsLabelsBack(t *testing.T) {
	e := newAPIWith(t, envOptions{layout: "split"})
	e.askFor("delete_forecast")
	e.setPolicy("demo", "get_forecast", "never")

	s := e.send("", `get_forecast {"city": "Berlin"} delete_forecast {"city": "Oslo"}`).ok(t)
	tools, _ := json.Marshal(e.up.sent()[e.up.count()-1]["tools"])
	if !strings.Contains(string(tools), `"server_label":"demo__never"`) || !strings.Contains(string(tools), `"server_label":"demo__always"`) ||
		!strings.Contains(string(tools), `"require_approval":"always"`) {
		t.Errorf("split tools: %s", tools)
	}
	ap := one[approval](t, s, "approval.required")
	if ap.ServerLabel != "demo" {
		t.Errorf("approval server_label %q, want demo", ap.ServerLabel)
	}
	for _, it := range s.items(t) {
		if it.ServerLabel != "" && it.ServerLabel != "demo" {
			t.Errorf("item %s has server_label %q", it.Type, it.ServerLabel)
		}
	}
	// Remembering moves the tool to the never group; the answer must still reach it.
	e.decide(s.conv(t), ap.ID, true, map[string]any{"remember": true}).ok(t)
	if _, ok := e.demo.State().Forecasts["Oslo"]; ok {
		t.Error("approved call did not run in the split layout")
	}
}

func TestChat_UnknownToolsAlwaysAskAndAreRecorded(t *testing.T) {
	e := newAPI(t) // the global default is never: known tools would run without asking
	e.createDemo("demo")
	if _, err := e.pool.Exec(context.Background(), `DELETE FROM mcp_tools WHERE server_label = 'demo'`); err != nil {
		t.Fatal(err)
	}
	s := e.send("", `delete_forecast {"city": "Oslo"}`).ok(t)
	ap := one[approval](t, s, "approval.required")
	if ap.AsksBecause.Source != "unknown" {
		t.Errorf("asks_because %+v, want unknown", ap.AsksBecause)
	}
	if _, ok := e.demo.State().Forecasts["Oslo"]; !ok {
		t.Fatal("an unknown tool ran without asking")
	}
	if tl, ok := e.tools("demo")["delete_forecast"]; !ok || !tl.Discovered {
		t.Errorf("the listed tool was not stored as discovered: %+v", tl)
	}
}

func TestChat_HeadersAndURLGoWithEveryRequest(t *testing.T) {
	e := newAPI(t)
	url := startDemo(t, demoToken)
	e.must(201, "POST", "/api/mcp/servers", map[string]any{"label": "secure", "url": url,
		"headers": map[string]string{"Authorization": "Bearer " + demoToken}}, nil)
	e.setPolicy("secure", "delete_forecast", "always")
	s := e.send("", `delete_forecast {"city": "Oslo"}`).ok(t)
	ap := one[approval](t, s, "approval.required")
	f := e.decide(s.conv(t), ap.ID, true, nil).ok(t)
	for i, req := range e.up.sent() {
		b, _ := json.Marshal(req["tools"])
		if !strings.Contains(string(b), demoToken) || !strings.Contains(string(b), url) {
			t.Errorf("request %d tools lack the URL or headers: %s", i, b)
		}
	}
	for _, it := range f.items(t) {
		if it.Type == "mcp_call" && (it.Output == nil || it.Error != nil) {
			t.Errorf("call with the server's token failed: %+v %s", it, it.Error)
		}
	}
}

func TestChat_FailedResponseEndsWithFailed(t *testing.T) {
	e := newAPI(t)
	e.createDemo("demo")
	s := e.send("", "[emulator: failed=server_error] hello")
	names := s.names()
	if names[len(names)-1] != "failed" {
		t.Fatalf("events %v", names)
	}
	if tr := e.transcript(s.conv(t)); tr.Conversation.LastResponseID != nil {
		t.Error("a failed response became the last response")
	}
}

func TestChat_BadInputIsRefusedAndChangesNothing(t *testing.T) {
	e := newAPI(t)
	e.askFor("delete_forecast")
	_, conv, ap := e.askToDeleteOslo()
	for _, tc := range []struct {
		path string
		body any
		code string
	}{
		{"/api/responses", map[string]any{"conversation_id": conv}, "invalid_input"},
		{"/api/responses", map[string]any{"conversation_id": conv, "input": "   "}, "invalid_input"},
		{"/api/responses", map[string]any{"conversation_id": "conv_missing", "input": "hi"}, "conversation_not_found"},
		{"/api/responses", map[string]any{"input": "hi", "stream": true}, "unknown_field"},
		{"/api/responses/approval-response", map[string]any{"approval_request_id": ap.ID, "approve": true}, "invalid_conversation_id"},
		{"/api/responses/approval-response", map[string]any{"conversation_id": conv, "approval_request_id": ap.ID}, "invalid_decision"},
		{"/api/responses/approval-response", map[string]any{"conversation_id": conv, "approval_request_id": ap.ID, "approve": true, "scope": "forever"}, "invalid_decision"},
		{"/api/responses/approval-response", map[string]any{"conversation_id": conv, "approval_request_id": ap.ID, "approve": false, "scope": "conversation"}, "invalid_decision"},
		{"/api/responses/approval-response", map[string]any{"conversation_id": conv, "approval_request_id": ap.ID, "approve": true,
			"decisions": []map[string]any{{"approval_request_id": ap.ID, "approve": true}}}, "invalid_decisions"},
		{"/api/responses/approval-response", map[string]any{"conversation_id": conv, "decisions": []map[string]any{
			{"approval_request_id": ap.ID, "approve": true}, {"approval_request_id": ap.ID, "approve": false}}}, "invalid_decision"},
		{"/api/responses/approval-response", map[string]any{"conversation_id": "conv_missing", "approval_request_id": ap.ID, "approve": true}, "conversation_not_found"},
	} {
		r := e.stream(tc.path, tc.body)
		var body apiError
		if r.status < 400 || json.Unmarshal(r.body, &body) != nil || body.Error.Code != tc.code || body.Error.Message == "" {
			t.Errorf("%s %v: %d %s, want code %s", tc.path, tc.body, r.status, r.body, tc.code)
		}
	}
	if tr := e.transcript(conv); len(tr.Pending) != 1 || tr.Pending[0].State != "pending" {
		t.Errorf("bad input changed the approval: %+v", tr.Pending)
	}
}

func TestConversations_CreateListRenameDelete(t *testing.T) {
	e := newAPI(t)
	var c struct {
		ID    string `json:"id"`
		Title string `json:"title"`
	}
	e.must(201, "POST", "/api/conversations", map[string]any{"title": "Trip planning"}, &c)
	if !strings.HasPrefix(c.ID, "conv_") || c.Title != "Trip planning" {
		t.Fatalf("created %+v", c)
	}
	e.createDemo("demo")
	e.send(c.ID, "hello").ok(t)
	auto := e.send("", "What is the weather like in Lisbon today?\nThanks").ok(t).conv(t)

	var list struct {
		Conversations []struct {
			ID    string `json:"id"`
			Title string `json:"title"`
		} `json:"conversations"`
	}
	e.must(200, "GET", "/api/conversations", nil, &list)
	if len(list.Conversations) != 2 || list.Conversations[0].ID != auto || list.Conversations[0].Title != "What is the weather like in Lisbon today?" {
		t.Errorf("list %+v", list)
	}
	e.must(200, "PATCH", "/api/conversations/"+c.ID, map[string]any{"title": "Renamed"}, &c)
	if c.Title != "Renamed" {
		t.Errorf("renamed to %q", c.Title)
	}
	e.must(204, "DELETE", "/api/conversations/"+c.ID, nil, nil)
	e.must(404, "GET", "/api/conversations/"+c.ID, nil, nil)
	e.must(404, "DELETE", "/api/conversations/"+c.ID, nil, nil)
	var info struct {
		Offline bool   `json:"offline"`
		Model   string `json:"model"`
		Version string `json:"version"`
	}
	e.must(200, "GET", "/api/info", nil, &info)
	if !info.Offline || info.Model == "" || info.Version != "dev" {
		t.Errorf("info %+v, want offline, a model and version dev (none given)", info)
	}
}

// TestInfo_SaysWhichToolgateThisIs: GET /api/info carries the binary's
// version, as `toolgate version` prints it.
func TestInfo_SaysWhichToolgateThisIs(t *testing.T) {
	e := newAPIWith(t, envOptions{version: "v1.2.0-3-gd28f8d6-dirty"})
	var info struct {
		Version string `json:"version"`
	}
	e.must(200, "GET", "/api/info", nil, &info)
	if info.Version != "v1.2.0-3-gd28f8d6-dirty" {
		t.Errorf("version %q", info.Version)
	}
}

// TestChat_UnreachableMCPServerIsAClearError: the provider cannot list an
// MCP server's tools (424). The request is sent once more without the
// server the 424 names (a notice says so); when that one fails too, the
// turn ends with a clear error, and no third request is sent.
func TestChat_UnreachableMCPServerIsAClearError(t *testing.T) {
	e := newAPI(t)
	e.createDemo("demo")
	e.must(201, "POST", "/api/mcp/servers", map[string]any{"label": "other", "url": startDemo(t, "")}, nil)
	before := e.up.count()
	s := e.send("", "[emulator: mcp-error=list] hello")
	if te := one[turnError](t, s, "error"); te.Code != "mcp_server_failed" || !strings.Contains(te.Message, "424") {
		t.Errorf("error %+v", te)
	}
	if n := e.up.count() - before; n != 2 {
		t.Fatalf("%d requests, want 2 (once more without the server the first 424 named)", n)
	}
	if n := len(all[map[string]any](t, s, "notice")); n != 1 {
		t.Errorf("%d notices, want one (server_dropped)", n)
	}
	tools, _ := json.Marshal(e.up.sent()[e.up.count()-1]["tools"])
	if strings.Contains(string(tools), `"demo"`) || !strings.Contains(string(tools), `"other"`) {
		t.Errorf("second request's tools %s: want other only", tools)
	}
}

func TestChat_DisabledServersAreNotOffered(t *testing.T) {
	e := newAPI(t)
	e.createDemo("demo")
	e.must(201, "POST", "/api/mcp/servers", map[string]any{"label": "other", "url": startDemo(t, "")}, nil)
	e.must(200, "PATCH", "/api/mcp/servers/other", map[string]any{"enabled": false}, nil)
	e.send("", "hello").ok(t)
	tools, _ := json.Marshal(e.up.sent()[e.up.count()-1]["tools"])
	if strings.Contains(string(tools), `"other"`) || !strings.Contains(string(tools), `"demo"`) {
		t.Errorf("tools %s: want demo only", tools)
	}
}
