package http

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
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
