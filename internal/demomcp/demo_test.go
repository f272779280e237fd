package demomcp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/demomcp"
)

func startDemo(t *testing.T, opts demomcp.Options) (*demomcp.Demo, *httptest.Server) {
	t.Helper()
	demo := demomcp.New(opts)
	srv := httptest.NewServer(demo.Handler())
	t.Cleanup(srv.Close)
	return demo, srv
}

func connect(t *testing.T, srv *httptest.Server) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "demomcp-test", Version: "v0"}, nil)
	session, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{
		Endpoint:             srv.URL + "/mcp",
		DisableStandaloneSSE: true,
	}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = session.Close() })
	return session
}

// call calls a tool and returns its text and whether it was a tool error.
func call(t *testing.T, session *mcp.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := session.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("CallTool(%s): protocol error %v", name, err)
	}
	var texts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	return strings.Join(texts, "\n"), res.IsError
}

func TestToolsAnswerWithTextAModelCanQuote(t *testing.T) {
	tests := []struct {
		tool      string
		args      map[string]any
		wantText  string
		wantError bool
	}{
		{"get_forecast", map[string]any{"city": "Berlin"}, "Forecast for Berlin: Light rain clearing by evening, 14°C.", false},
		{"get_forecast", map[string]any{"city": "oslo"}, "Forecast for Oslo: Overcast with snow showers, -2°C.", false},
		{"get_forecast", map[string]any{"city": "Atlantis"}, `there is no forecast for "Atlantis"; known cities: Berlin, Lisbon, Oslo`, true},
		{"list_forecasts", nil, "3 forecasts:\n- Berlin: Light rain clearing by evening, 14°C\n- Lisbon: Sunny with a light Atlantic breeze, 24°C\n- Oslo: Overcast with snow showers, -2°C", false},
		{"set_forecast", map[string]any{"city": "Madrid", "summary": "Clear skies", "temperature_c": 31.5}, "Created the forecast for Madrid: Clear skies, 31.5°C.", false},
		{"set_forecast", map[string]any{"city": "berlin", "summary": "Thunderstorms", "temperature_c": 19}, "Updated the forecast for Berlin: Thunderstorms, 19°C.", false},
		{"set_forecast", map[string]any{"city": "Berlin", "summary": "Hot", "temperature_c": 400}, "temperature_c 400 is not a plausible temperature; use a value from -90 to 60", true},
		{"delete_forecast", map[string]any{"city": "Lisbon"}, "Deleted the forecast for Lisbon.", false},
		{"delete_forecast", map[string]any{"city": "Atlantis"}, `there is no forecast for "Atlantis"; known cities: Berlin, Lisbon, Oslo`, true},
		{"send_alert", map[string]any{"city": "Oslo", "message": "Heavy snow tonight"}, `Sent a weather alert for Oslo: "Heavy snow tonight".`, false},
		{"send_alert", map[string]any{"city": "Oslo", "message": " "}, "city and message must not be empty", true},
		{"reset_forecasts", nil, "Deleted all forecasts (3 cities).", false},
	}
	for _, tt := range tests {
		t.Run(tt.tool+" "+tt.wantText, func(t *testing.T) {
			_, srv := startDemo(t, demomcp.Options{})
			gotText, gotError := call(t, connect(t, srv), tt.tool, tt.args)
			if diff := cmp.Diff(tt.wantText, gotText); diff != "" {
				t.Errorf("text (-want +got):\n%s", diff)
			}
			if gotError != tt.wantError {
				t.Errorf("IsError = %v, want %v", gotError, tt.wantError)
			}
		})
	}
}

func TestDeleteForecastReallyDeletesTheCity(t *testing.T) {
	demo, srv := startDemo(t, demomcp.Options{})
	session := connect(t, srv)

	call(t, session, "delete_forecast", map[string]any{"city": "Berlin"})

	st := demo.State()
	if _, ok := st.Forecasts["Berlin"]; ok {
		t.Errorf("Berlin is still in the state after delete_forecast: %+v", st.Forecasts)
	}
	if diff := cmp.Diff(map[string]int{"delete_forecast": 1}, st.Calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if text, isErr := call(t, session, "get_forecast", map[string]any{"city": "Berlin"}); !isErr {
		t.Errorf("get_forecast after delete = %q, want a tool error", text)
	}
}

func TestGetForecastOfUnknownCityIsAToolErrorButStillCounted(t *testing.T) {
	demo, srv := startDemo(t, demomcp.Options{})
	if _, isErr := call(t, connect(t, srv), "get_forecast", map[string]any{"city": "Atlantis"}); !isErr {
		t.Fatal("IsError = false, want true")
	}
	if diff := cmp.Diff(map[string]int{"get_forecast": 1}, demo.State().Calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

// TestCallsLogEveryCallWithItsArguments: GET /calls lists each tools/call
// with the arguments as sent, failed ones and repeats included, so a test
// can tell how often a tool ran with which arguments; Reset clears it.
func TestCallsLogEveryCallWithItsArguments(t *testing.T) {
	demo, srv := startDemo(t, demomcp.Options{})
	session := connect(t, srv)
	call(t, session, "send_alert", map[string]any{"city": "Lisbon", "message": "c1"})
	call(t, session, "get_forecast", map[string]any{"city": "Atlantis"}) // a tool error still ran
	call(t, session, "send_alert", map[string]any{"city": "Lisbon", "message": "c1"})

	var got struct{ Calls []demomcp.Call }
	getJSON(t, http.MethodGet, srv.URL+"/calls", http.StatusOK, &got)
	type call struct{ Tool, Arguments string }
	var calls []call
	for _, c := range got.Calls {
		if c.At.IsZero() {
			t.Errorf("call %s has no time", c.Tool)
		}
		calls = append(calls, call{c.Tool, string(c.Arguments)})
	}
	want := []call{
		{"send_alert", `{"city":"Lisbon","message":"c1"}`},
		{"get_forecast", `{"city":"Atlantis"}`},
		{"send_alert", `{"city":"Lisbon","message":"c1"}`},
	}
	if diff := cmp.Diff(want, calls); diff != "" {
		t.Errorf("/calls (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(got.Calls, demo.Calls()); diff != "" {
		t.Errorf("Calls() and /calls differ (-/calls +Calls()):\n%s", diff)
	}
	demo.Reset()
	if n := len(demo.Calls()); n != 0 {
		t.Errorf("%d calls after Reset, want none", n)
	}
}

func TestSendAlertPutsTheAlertInTheOutbox(t *testing.T) {
	demo, srv := startDemo(t, demomcp.Options{})
	call(t, connect(t, srv), "send_alert", map[string]any{"city": "Lisbon", "message": "Heat warning"})

	want := []demomcp.Alert{{City: "Lisbon", Message: "Heat warning"}}
	if diff := cmp.Diff(want, demo.State().Alerts, cmpopts.IgnoreFields(demomcp.Alert{}, "SentAt")); diff != "" {
		t.Errorf("alerts (-want +got):\n%s", diff)
	}
}

func TestResetForecastsEmptiesAndResetRestoresTheSeed(t *testing.T) {
	demo, srv := startDemo(t, demomcp.Options{})
	seed := demo.State()
	session := connect(t, srv)
	call(t, session, "reset_forecasts", nil)
	call(t, session, "send_alert", map[string]any{"city": "Oslo", "message": "Ice"})

	if got := demo.State().Forecasts; len(got) != 0 {
		t.Errorf("forecasts after reset_forecasts = %v, want none", got)
	}
	demo.Reset()
	if diff := cmp.Diff(seed, demo.State()); diff != "" {
		t.Errorf("state after Reset (-seed +got):\n%s", diff)
	}
}

func TestStateIsACopy(t *testing.T) {
	demo := demomcp.New(demomcp.Options{})
	st := demo.State()
	delete(st.Forecasts, "Berlin")
	st.Calls["get_forecast"] = 7
	if diff := cmp.Diff(demomcp.New(demomcp.Options{}).State(), demo.State()); diff != "" {
		t.Errorf("changing a snapshot changed the state (-want +got):\n%s", diff)
	}
}

func TestConcurrentCallsAreAllCounted(t *testing.T) {
	demo, srv := startDemo(t, demomcp.Options{})
	session := connect(t, srv)
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			_, _ = session.CallTool(context.Background(), &mcp.CallToolParams{
				Name: "set_forecast", Arguments: map[string]any{"city": "Rome", "summary": "Sunny", "temperature_c": 27},
			})
		})
	}
	wg.Wait()
	if got := demo.State().Calls["set_forecast"]; got != 10 {
		t.Errorf("set_forecast calls = %d, want 10", got)
	}
}

func TestHTTPEndpoints(t *testing.T) {
	demo, srv := startDemo(t, demomcp.Options{})
	demo.Reset()

	var health map[string]string
	getJSON(t, http.MethodGet, srv.URL+"/healthz", http.StatusOK, &health)
	if diff := cmp.Diff(map[string]string{"status": "ok"}, health); diff != "" {
		t.Errorf("/healthz (-want +got):\n%s", diff)
	}

	call(t, connect(t, srv), "delete_forecast", map[string]any{"city": "Oslo"})
	var st demomcp.State
	getJSON(t, http.MethodGet, srv.URL+"/state", http.StatusOK, &st)
	if diff := cmp.Diff(demo.State(), st); diff != "" {
		t.Errorf("/state (-State() +got):\n%s", diff)
	}

	var afterReset demomcp.State
	getJSON(t, http.MethodPost, srv.URL+"/reset", http.StatusOK, &afterReset)
	if _, ok := afterReset.Forecasts["Oslo"]; !ok || len(afterReset.Calls) != 0 {
		t.Errorf("POST /reset answered %+v, want the seed state", afterReset)
	}
	getJSON(t, http.MethodGet, srv.URL+"/reset", http.StatusMethodNotAllowed, nil)
}

func TestTokenIsRequiredOnMCPOnly(t *testing.T) {
	_, srv := startDemo(t, demomcp.Options{Token: "s3cret"})
	tests := []struct {
		name       string
		auth       string
		wantStatus int
	}{
		{"no header", "", http.StatusUnauthorized},
		{"wrong token", "Bearer nope", http.StatusUnauthorized},
		{"right token", "Bearer s3cret", http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := postInitialize(t, srv.URL+"/mcp", "", tt.auth)
			if resp.StatusCode != tt.wantStatus {
				t.Errorf("status = %d, want %d", resp.StatusCode, tt.wantStatus)
			}
			if tt.wantStatus == http.StatusUnauthorized {
				var body map[string]string
				if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body["error"] != "unauthorized" {
					t.Errorf("401 body = %v (%v), want a JSON error", body, err)
				}
			}
		})
	}
	getJSON(t, http.MethodGet, srv.URL+"/healthz", http.StatusOK, nil)
}

// The SDK would answer 403 to a loopback request with a non-loopback Host,
// which is how docker compose and port forwards reach the demo.
func TestMCPAcceptsAnyHostHeader(t *testing.T) {
	_, srv := startDemo(t, demomcp.Options{})
	if resp := postInitialize(t, srv.URL+"/mcp", "demo-mcp:8090", ""); resp.StatusCode != http.StatusOK {
		t.Errorf("status with Host demo-mcp:8090 = %d, want 200", resp.StatusCode)
	}
}

func postInitialize(t *testing.T, url, host, auth string) *http.Response {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if host != "" {
		req.Host = host
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

func getJSON(t *testing.T, method, url string, wantStatus int, into any) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != wantStatus {
		t.Fatalf("%s %s: status %d, want %d", method, url, resp.StatusCode, wantStatus)
	}
	if into != nil {
		if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
			t.Fatalf("%s %s: decoding: %v", method, url, err)
		}
	}
}
