package http

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/toolgate/toolgate/internal/apperr"
)

// decode reads the JSON body into v strictly: Content-Type application/json,
// UTF-8 text without NUL, one object, no unknown fields, no trailing data, at
// most maxBodyBytes. A typo in a field name is an error
// rather than a silently ignored change.
func (s *Server) decode(c echo.Context, v any) error {
	body := http.MaxBytesReader(c.Response(), c.Request().Body, s.maxBodyBytes)
	raw, err := io.ReadAll(body)
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return apperr.New(apperr.TooLarge, "body_too_large", "the request body is larger than %d bytes", tooBig.Limit)
	}
	if err != nil {
		return fmt.Errorf("read request body: %w", err)
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return apperr.New(apperr.Invalid, "empty_body", "the request needs a JSON object body")
	}
	// The guard (guard.go) checked /api bodies already; a body that reaches
	// decode any other way is checked here, so no route can forget it.
	if checked, _ := c.Get(bodyChecked).(bool); !checked {
		if err := checkJSONType(c.Request().Header.Get("Content-Type")); err != nil {
			return err
		}
		if err := checkJSONText(raw); err != nil {
			return err
		}
	}
	if err := checkDuplicateKeys(raw, v); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if dec.More() {
		return apperr.New(apperr.Invalid, "malformed_json", "the body must hold exactly one JSON object")
	}
	return nil
}

func jsonError(err error) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return apperr.New(apperr.Invalid, "malformed_json", "the body is not valid JSON (at byte %d): %s", syntax.Offset, syntax.Error())
	case errors.Is(err, io.ErrUnexpectedEOF):
		return apperr.New(apperr.Invalid, "malformed_json", "the body is not valid JSON: it ends too early")
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			return apperr.New(apperr.Invalid, "malformed_json", "the body must be a JSON object")
		}
		return apperr.Invalidf("invalid_type", field, "%s must be a JSON %s, not %s", field, jsonKind(typ.Type.Kind().String()), typ.Value)
	}
	if name, ok := unknownField(err); ok {
		return apperr.Invalidf("unknown_field", name, "unknown field %s; see docs/openapi.yaml for the fields this request takes", name)
	}
	return apperr.New(apperr.Invalid, "malformed_json", "the body could not be read as JSON: %s", err.Error())
}

func unknownField(err error) (string, bool) {
	const prefix = "json: unknown field "
	msg := err.Error()
	if len(msg) > len(prefix) && msg[:len(prefix)] == prefix {
		return strings.Trim(msg[len(prefix):], `"`), true
	}
	return "", false
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "string"
	case "bool":
		return "boolean"
	case "map", "struct":
		return "object"
	case "slice", "array":
		return "array"
	case "ptr":
		return "value of the right type"
	}
	return "number"
}

// checkDuplicateKeys refuses an object that names a field twice, e.g.
// {"approve": false, "approve": true}: encoding/json keeps the last one and
// matches field names regardless of case, so "approve" and "APPROVE" are
// the same field too. Something that read the first (a proxy, a log, a
// person) would see another decision than Toolgate. Keys of map fields
// (policies, headers) are data, compared exactly: tool names may differ by
// case alone.
func checkDuplicateKeys(raw []byte, v any) error {
	maps := map[string]bool{}
	mapPaths(reflect.TypeOf(v), "", maps, 0)
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	w := dupWalk{maps: maps}
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil // io.EOF, or malformed: Decode reports it
		}
		if err := w.token(tok); err != nil {
			return err
		}
	}
}

// dupFrame is an object or array open in checkDuplicateKeys's walk.
type dupFrame struct {
	object bool
	path   string          // the object's or array's field path, without indexes
	seen   map[string]bool // object: the keys so far (folded unless a map)
	key    string          // object: the current member's name
	keyNow bool            // object: the next string is a name
}

// dupWalk is checkDuplicateKeys's walk: the field paths that are maps and
// the objects and arrays open, outermost first.
type dupWalk struct {
	maps  map[string]bool
	stack []dupFrame
}

// token takes the next token; the error refuses a name given twice.
func (w *dupWalk) token(tok json.Token) error {
	top := len(w.stack) - 1
	if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
		w.stack = w.stack[:top]
		if top--; top >= 0 && w.stack[top].object {
			w.stack[top].keyNow = true
		}
		return nil
	}
	if top >= 0 && w.stack[top].object && w.stack[top].keyNow {
		return w.name(top, tok)
	}
	w.value(top, tok)
	return nil
}

// name takes a member's name in the object at top, refusing one it had.
func (w *dupWalk) name(top int, tok json.Token) error {
	name, _ := tok.(string)
	k := name
	if !w.maps[w.stack[top].path] {
		k = strings.ToLower(name)
	}
	if w.stack[top].seen[k] {
		field := name
		if w.stack[top].path != "" {
			field = w.stack[top].path + "." + name
		}
		return apperr.Invalidf("duplicate_field", field,
			"field %s is given more than once (names are case-insensitive); send each field once", field)
	}
	w.stack[top].seen[k], w.stack[top].key, w.stack[top].keyNow = true, name, false
	return nil
}

// value takes a value (or the start of one) in the object or array at top.
func (w *dupWalk) value(top int, tok json.Token) {
	// A value: its path is the member's, or the array's.
	path := ""
	if top >= 0 {
		path = w.stack[top].path
		if w.stack[top].object {
			path = strings.TrimPrefix(path+"."+w.stack[top].key, ".")
		}
	}
	if d, ok := tok.(json.Delim); ok {
		w.stack = append(w.stack, dupFrame{object: d == '{', path: path, seen: map[string]bool{}, keyNow: d == '{'})
		return
	}
	if top >= 0 && w.stack[top].object {
		w.stack[top].keyNow = true
	}
}

// mapPaths adds the JSON field paths of t that are maps (a.b, array
// elements sharing their array's path).
func mapPaths(t reflect.Type, prefix string, out map[string]bool, depth int) {
	if t == nil || depth > 8 {
		return
	}
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Map:
		out[prefix] = true
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" || !f.IsExported() {
				continue
			}
			if f.Anonymous && name == "" {
				mapPaths(f.Type, prefix, out, depth+1)
				continue
			}
			if name == "" {
				name = f.Name
			}
			mapPaths(f.Type, strings.TrimPrefix(prefix+"."+name, "."), out, depth+1)
		}
	}
}
