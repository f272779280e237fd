package responses

import (
	"bytes"
	"encoding/json"
	"errors"
)

// The stream's events are read with a small scanner instead of openai-go's
// event union: the union decodes every event in full by reflection, and
// response.created (like completed, failed and incomplete) echoes the
// request's tools, megabytes at scale, that a turn never reads. The scanner
// walks an object's keys and skips the values it does not want without
// decoding them.

var errBadJSON = errors.New("responses: malformed event JSON")

// eachField calls fn with every key of the JSON object obj (still quoted,
// escapes left as they are) and its raw value, until fn returns false.
func eachField(obj []byte, fn func(key, val []byte) bool) error {
	f := fields{b: obj}
	for {
		key, ok := f.next()
		if !ok {
			return f.err
		}
		val, ok := f.value()
		if !ok {
			return f.err
		}
		if !fn(key, val) {
			return nil
		}
	}
}

// fields walks the keys of a JSON object: next gives a key, then value
// reads (skips) its value, or rest hands over the value and everything
// after it, unread.
type fields struct {
	b       []byte
	i       int
	started bool
	done    bool
	err     error
}

// next returns the next key; false at the end of the object or on
// malformed JSON (err).
func (f *fields) next() ([]byte, bool) {
	if f.done {
		return nil, false
	}
	b := f.b
	i := skipSpace(b, f.i)
	if !f.started {
		f.started = true
		if i >= len(b) || b[i] != '{' {
			return f.fail()
		}
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == '}' {
			f.done = true
			return nil, false
		}
	} else {
		switch {
		case i < len(b) && b[i] == ',':
			i = skipSpace(b, i+1)
		case i < len(b) && b[i] == '}':
			f.done = true
			return nil, false
		default:
			return f.fail()
		}
	}
	if i >= len(b) || b[i] != '"' {
		return f.fail()
	}
	end, err := skipString(b, i)
	if err != nil {
		return f.fail()
	}
	key := b[i+1 : end-1]
	i = skipSpace(b, end)
	if i >= len(b) || b[i] != ':' {
		return f.fail()
	}
	f.i = skipSpace(b, i+1)
	return key, true
}

// value returns the value of the key next returned.
func (f *fields) value() ([]byte, bool) {
	end, err := skipValue(f.b, f.i)
	if err != nil {
		_, ok := f.fail()
		return nil, ok
	}
	v := f.b[f.i:end]
	f.i = end
	return v, true
}

// rest returns the value of the key next returned and all that follows it;
// the walk ends there.
func (f *fields) rest() []byte {
	f.done = true
	return f.b[f.i:]
}

func (f *fields) fail() ([]byte, bool) {
	f.done, f.err = true, errBadJSON
	return nil, false
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
		i++
	}
	return i
}

// skipString returns the index just past the string that starts at b[i].
func skipString(b []byte, i int) (int, error) {
	i++
	for {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return 0, errBadJSON
		}
		i += j
		// The quote ends the string unless an odd number of backslashes
		// escape it.
		n := 0
		for k := i - 1; k >= 0 && b[k] == '\\'; k-- {
			n++
		}
		i++
		if n%2 == 0 {
			return i, nil
		}
	}
}

// skipValue returns the index just past the value that starts at b[i]. It
// checks the nesting, not the literals: a malformed number or literal
// inside a skipped value goes unnoticed, as it is never read.
func skipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, errBadJSON
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				end, err := skipString(b, i)
				if err != nil {
					return 0, err
				}
				i = end
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, nil
				}
			}
			i++
		}
		return 0, errBadJSON
	}
	// A number or a literal: up to the next delimiter.
	start := i
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\n' && b[i] != '\r' && b[i] != '\t' {
		i++
	}
	if i == start {
		return 0, errBadJSON
	}
	return i, nil
}

// str reads a raw JSON string value; anything else (null included) is "".
// A string without escapes costs one allocation.
func str(raw []byte) string {
	if len(raw) < 2 || raw[0] != '"' {
		return ""
	}
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return string(inner)
	}
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

// isType reports whether the raw JSON string raw is name, without
// allocating (the event types and ids OpenAI sends have no escapes).
func isType(raw []byte, name string) bool {
	return len(raw) == len(name)+2 && string(raw[1:len(raw)-1]) == name
}
