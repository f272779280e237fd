// Package argschema checks tool arguments against the JSON Schema a tool
// declared as its MCP inputSchema. It adapts santhosh-tekuri/jsonschema
// (already in the module graph through kin-openapi): every draft an MCP
// server may use, and errors that say where in the arguments they are.
package argschema

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Problem is one way the arguments break the schema: Path names the
// argument ("city", "stops[2].name"; "" for the arguments as a whole).
type Problem struct {
	Path    string
	Message string
}

// ErrUnusable says the schema cannot be used to check anything: it is not
// JSON, not a schema, or refers to another document. Callers treat the
// tool as one without a schema.
var ErrUnusable = errors.New("the tool's input schema cannot be used")

// refuseLoader loads nothing: a schema from an MCP server must not make
// Toolgate read a file or fetch a URL ($ref to "file:///etc/passwd" or to
// an internal address). The compiler's default reads files.
type refuseLoader struct{}

func (refuseLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("%s: schemas may not refer to other documents", url)
}

// Check validates args (JSON text) against schema (JSON text). It returns
// the problems, ordered by path, or ErrUnusable (wrapped) when the schema
// cannot be compiled. Empty schema: nothing to check.
func Check(schema, args []byte) ([]Problem, error) {
	if len(bytes.TrimSpace(schema)) == 0 || string(bytes.TrimSpace(schema)) == "null" {
		return nil, nil
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnusable, err)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(refuseLoader{})
	if err := c.AddResource("toolgate:input-schema", doc); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnusable, err)
	}
	sch, err := c.Compile("toolgate:input-schema")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnusable, err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return []Problem{{Message: "the arguments are not JSON"}}, nil
	}
	err = sch.Validate(inst)
	var ve *jsonschema.ValidationError
	if err == nil {
		return nil, nil
	}
	if !errors.As(err, &ve) {
		return nil, fmt.Errorf("%w: %w", ErrUnusable, err)
	}
	p := message.NewPrinter(language.English)
	var out []Problem
	seen := map[Problem]bool{}
	for _, leaf := range leaves(ve, nil) {
		pr := Problem{Path: path(inst, leaf.InstanceLocation), Message: leaf.ErrorKind.LocalizedString(p)}
		// Point at the argument itself, missing or unknown: that is where
		// a form shows it, and where a caller may know better.
		var each []string
		msg := ""
		switch k := leaf.ErrorKind.(type) {
		case *kind.Required:
			each, msg = k.Missing, "is required"
		case *kind.AdditionalProperties:
			each, msg = k.Properties, "is not an argument of this tool"
		}
		if len(each) > 0 {
			for _, m := range each {
				pr := Problem{Path: join(pr.Path, m), Message: msg}
				if !seen[pr] {
					seen[pr] = true
					out = append(out, pr)
				}
			}
			continue
		}
		if !seen[pr] {
			seen[pr] = true
			out = append(out, pr)
		}
	}
	slices.SortStableFunc(out, func(a, b Problem) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

// leaves are the innermost errors: they say what is wrong, where the outer
// ones only say that a subschema failed.
func leaves(e *jsonschema.ValidationError, out []*jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(e.Causes) == 0 {
		return append(out, e)
	}
	for _, c := range e.Causes {
		out = leaves(c, out)
	}
	return out
}

// path writes an instance location as Toolgate writes argument paths
// elsewhere (the redacted list): "a.b", "items[2].c".
func path(inst any, loc []string) string {
	var b strings.Builder
	v := inst
	for _, tok := range loc {
		switch t := v.(type) {
		case []any:
			b.WriteString("[" + tok + "]")
			if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(t) {
				v = t[i]
			} else {
				v = nil
			}
		case map[string]any:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(tok)
			v = t[tok]
		default:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(tok)
			v = nil
		}
	}
	return b.String()
}

func join(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}
