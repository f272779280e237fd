package argschema_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/internal/argschema"
)

const forecast = `{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer","minimum":1},
	"stops":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}},
	"unit":{"enum":["c","f"]}},"required":["city"],"additionalProperties":false}`

func TestCheck_NamesEachArgumentThatBreaksTheSchema(t *testing.T) {
	tests := []struct {
		name, args string
		want       []argschema.Problem
	}{
		{"valid", `{"city":"Berlin","days":2,"stops":[{"name":"a"}],"unit":"c"}`, nil},
		{"missing required", `{"days":2}`, []argschema.Problem{{Path: "city", Message: "is required"}}},
		{"wrong type", `{"city":5}`, []argschema.Problem{{Path: "city", Message: "got number, want string"}}},
		{"below minimum", `{"city":"x","days":0}`, []argschema.Problem{{Path: "days", Message: "minimum: got 0, want 1"}}},
		{"nested in an array", `{"city":"x","stops":[{"name":"a"},{}]}`, []argschema.Problem{{Path: "stops[1].name", Message: "is required"}}},
		{"enum", `{"city":"x","unit":"k"}`, []argschema.Problem{{Path: "unit", Message: "value must be one of 'c', 'f'"}}},
		{"additional", `{"city":"x","town":"y"}`, []argschema.Problem{{Path: "town", Message: "is not an argument of this tool"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := argschema.Check([]byte(forecast), []byte(tt.args))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheck_NoSchemaChecksNothing(t *testing.T) {
	for _, s := range []string{"", "null", " "} {
		got, err := argschema.Check([]byte(s), []byte(`{"anything":1}`))
		if err != nil || got != nil {
			t.Errorf("schema %q: got %v, %v; want nothing", s, got, err)
		}
	}
}

// A schema from an MCP server must not make Toolgate read files or fetch
// URLs: the compiler's default loader reads file: URLs.
func TestCheck_RefusesSchemasThatReferToOtherDocuments(t *testing.T) {
	// A file that is itself a valid schema: a loader that reads files
	// would compile it.
	local := filepath.Join(t.TempDir(), "schema.json")
	if err := os.WriteFile(local, []byte(`{"type":"string"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		`{"$ref":"file://` + filepath.ToSlash(local) + `"}`,
		`{"type":"object","properties":{"a":{"$ref":"file://` + filepath.ToSlash(local) + `"}}}`,
		`{"$ref":"file:///etc/passwd"}`,
		`{"type":"object","properties":{"a":{"$ref":"http://127.0.0.1:1/x.json"}}}`,
		`{"$schema":"file:///etc/hostname"}`,
		`not json`,
	} {
		_, err := argschema.Check([]byte(s), []byte(`{}`))
		if !errors.Is(err, argschema.ErrUnusable) {
			t.Errorf("schema %s: err = %v, want ErrUnusable", s, err)
		}
	}
}
