package conversation

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Helpers over JSON values: a correction's arguments checked, walked and
// compared (engine/correction.go).

func UnderKept(path string, kept map[string]bool) bool {
	for k := range kept {
		if path == k || strings.HasPrefix(path, k+".") || strings.HasPrefix(path, k+"[") {
			return true
		}
	}
	return false
}

func FieldOf(path string) string { return "correction." + path }

func NameOf(path string) string {
	if path == "" {
		return "correction"
	}
	return path
}

// HiddenShown maps each hidden path of a request as shown to the string
// shown there: "[redacted]", or a string with a credential hidden inside it
// ("Bearer [redacted]"). Hidden objects show as "[redacted]" too.
func HiddenShown(shown Approval) map[string]string {
	out := map[string]string{}
	hidden := map[string]bool{}
	for _, p := range shown.Redacted {
		hidden[p] = true
	}
	v, err := DecodeStrict(shown.Arguments)
	if err != nil {
		return out
	}
	Walk(v, "", func(path string, x any) {
		if str, ok := x.(string); ok && hidden[path] {
			out[path] = str
		}
	})
	return out
}

// KeepsHidden reports whether a correction's string at path means "keep
// the value the model sent": "[redacted]" where a value was hidden, or the
// string shown there sent back unchanged.
func KeepsHidden(hidden map[string]string, path, str string) bool {
	shown, ok := hidden[path]
	return ok && (str == RedactedValue || str == shown)
}

// ShownCorrection is a stored correction as people see it: redacted.
func ShownCorrection(stored json.RawMessage) json.RawMessage {
	if len(stored) == 0 {
		return nil
	}
	b, _ := Redact(string(stored))
	return b
}

// DecodeStrict decodes one JSON value, refusing duplicate object keys (two
// readers could take different ones) and trailing data.
func DecodeStrict(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // numbers keep their text when written again
	v, err := strictValue(dec, "")
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("more than one JSON value")
	}
	return v, nil
}

func strictValue(dec *json.Decoder, path string) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, errors.New("not valid JSON")
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return tok, nil
	}
	switch d {
	case '{':
		obj := map[string]any{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, errors.New("not valid JSON")
			}
			k, _ := kt.(string)
			p := joinPath(path, k)
			if _, dup := obj[k]; dup {
				return nil, fmt.Errorf("%s is given more than once", p)
			}
			if obj[k], err = strictValue(dec, p); err != nil {
				return nil, err
			}
		}
		_, err = dec.Token()
		return obj, err
	case '[':
		arr := []any{}
		for dec.More() {
			x, err := strictValue(dec, path+"["+strconv.Itoa(len(arr))+"]")
			if err != nil {
				return nil, err
			}
			arr = append(arr, x)
		}
		_, err = dec.Token()
		return arr, err
	}
	return nil, errors.New("not valid JSON")
}

func joinPath(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

// Walk calls fn for every value in v below the top, with its path written
// as Redact writes paths.
func Walk(v any, path string, fn func(path string, x any)) {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			p := joinPath(path, k)
			fn(p, x)
			Walk(x, p, fn)
		}
	case []any:
		for i, x := range t {
			p := path + "[" + strconv.Itoa(i) + "]"
			fn(p, x)
			Walk(x, p, fn)
		}
	}
}

// Prune removes the object members for which drop says so.
func Prune(v any, path string, drop func(path string, x any) bool) any {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			p := joinPath(path, k)
			if drop(p, x) {
				delete(t, k)
				continue
			}
			t[k] = Prune(x, p, drop)
		}
	case []any:
		for i, x := range t {
			t[i] = Prune(x, path+"["+strconv.Itoa(i)+"]", drop)
		}
	}
	return v
}

// SameJSON reports whether two JSON texts hold the same value.
func SameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return jsonEqual(x, y)
}

func jsonEqual(x, y any) bool {
	bx, _ := json.Marshal(x) // maps marshal with sorted keys
	by, _ := json.Marshal(y)
	return bytes.Equal(bx, by)
}
