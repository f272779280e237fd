package gateway_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestFace_TypeScriptSDKClient lists and calls through the face with the
// official MCP TypeScript SDK client (frontend/scripts/mcp-face-client.mjs),
// as a provider built on it would. It needs node and the frontend's
// devDependencies (npm install in frontend/; make test installs them first).
func TestFace_TypeScriptSDKClient(t *testing.T) {
	nodeClient(t, "@modelcontextprotocol/sdk", "scripts/mcp-face-client.mjs")
}

// TestFace_OpenAIAgentsSDK does the same with the OpenAI Agents SDK's MCP
// client (MCPServerStreamableHttp, frontend/scripts/agents-face-client.mjs),
// as an agent built on it would.
func TestFace_OpenAIAgentsSDK(t *testing.T) {
	nodeClient(t, "@openai/agents", "scripts/agents-face-client.mjs")
}

func nodeClient(t *testing.T, pkg, script string) {
	frontend, _ := filepath.Abs("../../frontend")
	missing := func(what string) {
		// Under CI (make test installs the packages before the Go tests) a
		// missing client is a failure, never a silent skip.
		if os.Getenv("CI") != "" {
			t.Fatalf("%s: this test runs a third-party MCP client against the face", what)
		}
		t.Skip(what)
	}
	if _, err := os.Stat(filepath.Join(frontend, "node_modules", filepath.FromSlash(pkg))); err != nil {
		missing(pkg + " is not installed: run npm install in frontend/")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node is not installed")
	}
	h := newHarness(t, harnessOptions{})
	url, demo, rec := serveDemo(t)
	h.addServer("demo", url, map[string]string{"Authorization": "Bearer " + demoSecret})
	h.gate.hidden["send_alert"] = true
	tok := h.token("demo")
	h.gate.allow(demoTool(t, h.connect("demo", tok), "get_forecast"))

	run := func(tool, args string) (names []string, isError bool, text string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, script, h.url+"/mcp/demo", tok, tool, args)
		cmd.Dir = frontend
		out, err := cmd.Output()
		if err != nil {
			var stderr string
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = string(ee.Stderr)
			}
			t.Fatalf("node: %v\n%s", err, stderr)
		}
		var got struct {
			Tools  []string `json:"tools"`
			Result struct {
				IsError bool `json:"isError"`
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"result"`
		}
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		var b strings.Builder
		for _, c := range got.Result.Content {
			b.WriteString(c.Text)
		}
		return got.Tools, got.Result.IsError, b.String()
	}

	names, isError, text := run("get_forecast", `{"city":"Lisbon"}`)
	if !slices.Contains(names, "get_forecast") || slices.Contains(names, "send_alert") {
		t.Fatalf("listed %v", names)
	}
	if isError || !strings.Contains(text, "Forecast for Lisbon") {
		t.Fatalf("call: isError %v, %q", isError, text)
	}
	_, isError, text = run("delete_forecast", `{"city":"Lisbon"}`)
	if !isError || !strings.Contains(text, "not approved") {
		t.Fatalf("refused call: isError %v, %q", isError, text)
	}
	if calls := demo.Calls(); len(calls) != 1 || calls[0].Tool != "get_forecast" {
		t.Fatalf("the demo server ran %+v", calls)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, a := range rec.auth {
		if a != "Bearer "+demoSecret {
			t.Fatalf("the demo server got Authorization %q", a)
		}
	}
}
