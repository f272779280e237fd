package http_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

type openAPIDoc struct {
	OpenAPI string                    `yaml:"openapi"`
	Paths   map[string]map[string]any `yaml:"paths"`
}

func loadOpenAPI(t *testing.T) openAPIDoc {
	t.Helper()
	raw, err := os.ReadFile("../../docs/openapi.yaml")
	if err != nil {
		t.Fatalf("read docs/openapi.yaml: %v", err)
	}
	var doc openAPIDoc
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("docs/openapi.yaml is not valid YAML: %v", err)
	}
	return doc
}

var echoParam = regexp.MustCompile(`:([A-Za-z]+)`)

// TestOpenAPI_DescribesEveryRoute fails when a route exists that
// docs/openapi.yaml does not describe, or the document describes one that
// does not exist.
func TestOpenAPI_DescribesEveryRoute(t *testing.T) {
	doc := loadOpenAPI(t)
	if doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi = %q, want 3.1.0", doc.OpenAPI)
	}
	e := newAPI(t)
	served := map[string]bool{}
	for _, r := range e.api.Routes() {
		if strings.HasPrefix(r.Path, "/api/") || strings.HasPrefix(r.Path, "/mcp/") || r.Path == "/healthz" || r.Path == "/readyz" {
			served[strings.ToLower(r.Method)+" "+echoParam.ReplaceAllString(r.Path, "{$1}")] = true
		}
	}
	documented := map[string]bool{}
	for path, ops := range doc.Paths {
		for method, op := range ops {
			if method == "parameters" || method == "summary" || method == "description" {
				continue
			}
			documented[method+" "+path] = true
			if m, ok := op.(map[string]any); !ok || m["responses"] == nil {
				t.Errorf("%s %s has no responses", method, path)
			}
		}
	}
	for _, r := range sortedKeys(served) {
		if !documented[r] {
			t.Errorf("route %s is served but not described in docs/openapi.yaml", r)
		}
	}
	for _, r := range sortedKeys(documented) {
		if !served[r] {
			t.Errorf("docs/openapi.yaml describes %s, which is not served", r)
		}
	}
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
