package redact

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Values masks the credentials in every string of the JSON document raw
// (a tool's result: text blocks, structuredContent, _meta): the shapes Text
// hides, and a whole string under a secret-looking key (SecretKey), as the
// pattern for a quoted secret field does in text. Keys, numbers, booleans
// and nulls stay, so a result keeps its shape and its output schema; a
// number under "tokens_used" is not a secret. It returns the masked
// document (raw itself when nothing was masked) and how many values it
// masked. Numbers keep their text (no float rounding).
func Values(raw json.RawMessage) (json.RawMessage, int, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return raw, 0, fmt.Errorf("redact: the result is not JSON: %w", err)
	}
	n := 0
	v = maskValue(v, false, &n)
	if n == 0 {
		return raw, 0, nil
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil { // cannot happen for decoded JSON
		return raw, 0, fmt.Errorf("redact: %w", err)
	}
	return bytes.TrimRight(b.Bytes(), "\n"), n, nil
}

// maskValue masks v in place; secret says v is under a secret-looking key.
func maskValue(v any, secret bool, n *int) any {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			t[k] = maskValue(x, SecretKey(k), n)
		}
	case []any:
		for i, x := range t {
			t[i] = maskValue(x, secret, n)
		}
	case string:
		if secret && !placeholder(t) {
			*n++
			return Marker
		}
		s, k := Text(t)
		*n += k
		return s
	}
	return v
}
