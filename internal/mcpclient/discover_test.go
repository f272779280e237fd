package mcpclient_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/demomcp"
	"github.com/toolgate/toolgate/internal/mcpclient"
	"github.com/toolgate/toolgate/internal/policy"
)

func startDemo(t *testing.T, opts demomcp.Options) string {
	t.Helper()
	srv := httptest.NewServer(demomcp.New(opts).Handler())
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

func listTools(t *testing.T, url string, headers map[string]string) []policy.DiscoveredTool {
	t.Helper()
	tools, err := (&mcpclient.Discoverer{}).ListTools(t.Context(), url, headers)
	if err != nil {
		t.Fatalf("ListTools: %v", err)
	}
	return tools
}

func byName(tools []policy.DiscoveredTool) map[string]policy.DiscoveredTool {
	m := make(map[string]policy.DiscoveredTool, len(tools))
	for _, tool := range tools {
		m[tool.Name] = tool
	}
	return m
}

func hints(readOnly, destructive, idempotent, openWorld bool) policy.Annotations {
	return policy.Annotations{ReadOnlyHint: &readOnly, DestructiveHint: &destructive, IdempotentHint: &idempotent, OpenWorldHint: &openWorld}
}

func TestListToolsReturnsEveryDemoToolWithItsHints(t *testing.T) {
	type view struct {
		Title       string
		Description string
		Hints       policy.Annotations
		Properties  []string // of the input schema
	}
	want := map[string]view{
		"get_forecast":    {"Get forecast", "Get the weather forecast for one city.", hints(true, false, true, false), []string{"city"}},
		"list_forecasts":  {"List forecasts", "List the weather forecasts of all known cities.", hints(true, false, true, false), nil},
		"set_forecast":    {"Set forecast", "Create or replace the weather forecast for a city.", hints(false, false, true, false), []string{"city", "summary", "temperature_c"}},
		"delete_forecast": {"Delete forecast", "Delete the weather forecast of a city. The forecast cannot be recovered.", hints(false, true, true, false), []string{"city"}},
		"send_alert":      {"Send weather alert", "Send a weather alert to the people subscribed to a city. People are notified immediately.", hints(false, false, false, true), []string{"city", "message"}},
		"reset_forecasts": {"Delete all forecasts", "Delete the weather forecasts of every city. They cannot be recovered.", hints(false, true, true, false), nil},
	}

	got := make(map[string]view)
	for _, tool := range listTools(t, startDemo(t, demomcp.Options{}), nil) {
		var schema struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(tool.InputSchema, &schema); err != nil || schema.Type != "object" {
			t.Errorf("%s: input schema %s is not an object schema (%v)", tool.Name, tool.InputSchema, err)
		}
		hints := tool.Annotations
		if hints.Title != tool.Title {
			t.Errorf("%s: annotations title %q, want the tool's title %q", tool.Name, hints.Title, tool.Title)
		}
		hints.Title = ""
		var props []string
		for p := range schema.Properties {
			props = append(props, p)
		}
		slices.Sort(props)
		got[tool.Name] = view{tool.Title, tool.Description, hints, props}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
}

func TestDigestIsStableAcrossListingsAndChangesWithTheDefinition(t *testing.T) {
	url := startDemo(t, demomcp.Options{})
	first, second := byName(listTools(t, url, nil)), byName(listTools(t, url, nil))
	for name, tool := range first {
		if got, want := second[name].Digest(), tool.Digest(); got != want {
			t.Errorf("%s: digest changed between listings: %s then %s", name, want, got)
		}
	}

	original := first["delete_forecast"]
	changed := byName(listTools(t, serveTools(t, 0, &mcp.Tool{
		Name:        original.Name,
		Title:       original.Title,
		Description: original.Description + " Also deletes its history.",
		InputSchema: original.InputSchema,
		Annotations: &mcp.ToolAnnotations{Title: original.Title, DestructiveHint: original.Annotations.DestructiveHint, IdempotentHint: true, OpenWorldHint: original.Annotations.OpenWorldHint},
	}), nil))["delete_forecast"]
	if changed.Digest() == original.Digest() {
		t.Error("digest did not change when the server changed the description")
	}
	changed.Description = original.Description
	if diff := cmp.Diff(original.Digest(), changed.Digest()); diff != "" {
		t.Errorf("the same definition from another server has another digest (-want +got):\n%s", diff)
	}
}

func TestListToolsFollowsPagination(t *testing.T) {
	var tools []*mcp.Tool
	var want []string
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		tools = append(tools, &mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)})
		want = append(want, name)
	}
	var got []string
	for _, tool := range listTools(t, serveTools(t, 2, tools...), nil) {
		got = append(got, tool.Name)
	}
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tool names over 3 pages (-want +got):\n%s", diff)
	}
}

func TestListToolsWithTokenNeedsTheHeader(t *testing.T) {
	url := startDemo(t, demomcp.Options{Token: "s3cret"})

	_, err := (&mcpclient.Discoverer{}).ListTools(t.Context(), url, nil)
	assertDiscoveryFailed(t, err, url+": the server answered 401 Unauthorized (check the server's headers, e.g. its Authorization token)")

	if got := listTools(t, url, map[string]string{"Authorization": "Bearer s3cret"}); len(got) != 6 {
		t.Errorf("with the token: %d tools, want 6", len(got))
	}
}

func TestListToolsSendsHeadersOnEveryRequestWithoutChangingTheCallersClient(t *testing.T) {
	demo := demomcp.New(demomcp.Options{})
	var mu sync.Mutex
	var seen []string // "METHOD X-Api-Key"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.Header.Get("X-Api-Key"))
		mu.Unlock()
		demo.Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)

	base := &countingTransport{base: http.DefaultTransport}
	caller := &http.Client{Transport: base}
	d := &mcpclient.Discoverer{HTTPClient: caller}
	if _, err := d.ListTools(t.Context(), srv.URL+"/mcp", map[string]string{"X-Api-Key": "k1"}); err != nil {
		t.Fatal(err)
	}

	mu.Lock()
	defer mu.Unlock()
	if len(seen) < 4 || !slices.Contains(seen, "DELETE k1") {
		t.Errorf("requests %v: want initialize, tools/list and the closing DELETE", seen)
	}
	for _, s := range seen {
		if s != "POST k1" && s != "DELETE k1" {
			t.Errorf("request %q lacks the header", s)
		}
	}
	if caller.Transport != base {
		t.Error("ListTools replaced the caller's client's Transport")
	}
	if base.n.Load() != int64(len(seen)) {
		t.Errorf("the caller's transport carried %d requests, want %d", base.n.Load(), len(seen))
	}
}

func TestListToolsDoesNotSendHeadersToAnotherHostItIsRedirectedTo(t *testing.T) {
	var mu sync.Mutex
	var leaked []string
	demo := demomcp.New(demomcp.Options{})
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if v := r.Header.Get("Authorization"); v != "" {
			mu.Lock()
			leaked = append(leaked, v)
			mu.Unlock()
		}
		demo.Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(other.Close)
	redirector := httptest.NewServer(http.RedirectHandler(other.URL+"/mcp", http.StatusTemporaryRedirect))
	t.Cleanup(redirector.Close)

	_, _ = (&mcpclient.Discoverer{}).ListTools(t.Context(), redirector.URL+"/mcp", map[string]string{"Authorization": "Bearer s3cret"})

	mu.Lock()
	defer mu.Unlock()
	if len(leaked) > 0 {
		t.Errorf("the redirect target received Authorization %q", leaked)
	}
}

func TestListToolsMapsWhatTheServerLeftOut(t *testing.T) {
	url := fakeMCP(func(string) any {
		return map[string]any{"tools": []any{
			map[string]any{"name": "bare"},
			map[string]any{"name": "empty_hints", "inputSchema": map[string]any{"type": "object"}, "annotations": map[string]any{}},
			map[string]any{"name": "titled", "inputSchema": map[string]any{"type": "object"}, "annotations": map[string]any{"title": "From hints", "destructiveHint": false}},
		}}
	})(t)
	f := false
	want := []policy.DiscoveredTool{
		{Name: "bare", InputSchema: json.RawMessage(`{"type":"object"}`)},
		// The SDK decodes absent readOnlyHint/idempotentHint as false.
		{Name: "empty_hints", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: policy.Annotations{ReadOnlyHint: &f, IdempotentHint: &f}},
		{Name: "titled", Title: "From hints", InputSchema: json.RawMessage(`{"type":"object"}`),
			Annotations: policy.Annotations{Title: "From hints", ReadOnlyHint: &f, DestructiveHint: &f, IdempotentHint: &f}},
	}
	if diff := cmp.Diff(want, listTools(t, url, nil)); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
}
