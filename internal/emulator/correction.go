package emulator

import (
	"encoding/json"
	"strconv"
	"strings"
)

// A denial whose reason says "Use these arguments instead: {...}" (how
// Toolgate denies with a correction) is an instruction: the model follows it
// by asking for the same tool again with those arguments, in a response
// shaped like any other that calls a tool. A line naming arguments to keep
// ("Keep the values you sent for these arguments, which the user could not
// see: a, b.c") takes those values from the denied request.
const (
	correctionMarker = "Use these arguments instead:"
	keepMarker       = "Keep the values you sent for these arguments"
)

// corrected is the call a denial's reason asks for instead of req: the same
// tool, if it is still offered, with the arguments the reason gives.
func corrected(req ctxItem, reason string, offers []offer) (mention, bool) {
	at := strings.Index(reason, correctionMarker)
	if at < 0 {
		return mention{}, false
	}
	rest := strings.TrimLeft(reason[at+len(correctionMarker):], " \t")
	if !strings.HasPrefix(rest, "{") {
		return mention{}, false
	}
	end, ok := objectEnd(rest, 0)
	if !ok {
		return mention{}, false
	}
	args, ok := decodeObject(rest[:end])
	if !ok {
		return mention{}, false
	}
	if orig, ok := decodeObject(req.Arguments); ok {
		for _, p := range keptPaths(rest[end:]) {
			if v, found := getPath(orig, p); found {
				setPath(args, p, v)
			}
		}
	}
	var o *offer
	for i := range offers {
		if offers[i].entry.Label == req.ServerLabel && offers[i].tool.Name == req.Name {
			o = &offers[i]
			break
		}
	}
	if o == nil {
		return mention{}, false // no longer offered: the model can only say it did not run
	}
	b, _ := json.Marshal(args)
	return mention{offer: *o, args: string(b)}, true
}

func decodeObject(s string) (map[string]any, bool) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var m map[string]any
	if dec.Decode(&m) != nil || m == nil {
		return nil, false
	}
	return m, true
}

// keptPaths reads the paths listed after the keep marker, up to the end of
// its line.
func keptPaths(text string) []string {
	at := strings.Index(text, keepMarker)
	if at < 0 {
		return nil
	}
	line := text[at:]
	if nl := strings.IndexByte(line, '\n'); nl >= 0 {
		line = line[:nl]
	}
	_, list, ok := strings.Cut(line, ":")
	if !ok {
		return nil
	}
	var out []string
	for _, p := range strings.Split(list, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// segments splits "a.b[2].c" into "a", "b", 2, "c".
func segments(path string) []any {
	var out []any
	for _, part := range strings.Split(path, ".") {
		name, idx, _ := strings.Cut(part, "[")
		if name != "" {
			out = append(out, name)
		}
		for idx != "" {
			n, tail, _ := strings.Cut(idx, "]")
			i, err := strconv.Atoi(n)
			if err != nil {
				return nil
			}
			out = append(out, i)
			idx = strings.TrimPrefix(tail, "[")
		}
	}
	return out
}

func getPath(v any, path string) (any, bool) {
	for _, s := range segments(path) {
		switch k := s.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil, false
			}
			if v, ok = m[k]; !ok {
				return nil, false
			}
		case int:
			a, ok := v.([]any)
			if !ok || k < 0 || k >= len(a) {
				return nil, false
			}
			v = a[k]
		}
	}
	return v, true
}

// setPath sets the value at path where its parent exists.
func setPath(root map[string]any, path string, val any) {
	segs := segments(path)
	if len(segs) == 0 {
		return
	}
	var v any = root
	for _, s := range segs[:len(segs)-1] {
		switch k := s.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return
			}
			v = m[k]
		case int:
			a, ok := v.([]any)
			if !ok || k < 0 || k >= len(a) {
				return
			}
			v = a[k]
		}
	}
	switch k := segs[len(segs)-1].(type) {
	case string:
		if m, ok := v.(map[string]any); ok {
			m[k] = val
		}
	case int:
		if a, ok := v.([]any); ok && k >= 0 && k < len(a) {
			a[k] = val
		}
	}
}
