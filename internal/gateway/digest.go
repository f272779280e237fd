package gateway

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// ArgumentsDigest is the canonical form of a tool call's arguments and its
// hex SHA-256: what an approval is bound to and a call through the face is
// matched by. The canonical form is the JSON value with object keys sorted
// and no insignificant whitespace; numbers keep their exact text. Empty
// arguments ("" or whitespace) are the empty object. Anything that is not one
// JSON object is an error.
//
// Two argument texts that differ only in layout or key order have the same
// digest; any other difference, one byte of a value, gives another.
func ArgumentsDigest(arguments []byte) (canonical []byte, sha string, err error) {
	if len(bytes.TrimSpace(arguments)) == 0 {
		arguments = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(arguments))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, "", fmt.Errorf("the arguments are not JSON: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, "", fmt.Errorf("the arguments are more than one JSON value")
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, "", fmt.Errorf("the arguments are not a JSON object")
	}
	var b strings.Builder
	if err := canon(&b, v); err != nil {
		return nil, "", err
	}
	canonical = []byte(b.String())
	sum := sha256.Sum256(canonical)
	return canonical, hex.EncodeToString(sum[:]), nil
}

// canon writes v canonically: encoding/json sorts map keys; json.Number
// keeps the number's text; SetEscapeHTML(false) keeps <, > and & as they
// are, so that the same value always gives the same bytes.
func canon(b *strings.Builder, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	b.Write(bytes.TrimRight(buf.Bytes(), "\n"))
	return nil
}
