package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/argschema"
	"github.com/toolgate/toolgate/internal/conversation"
)

// A denial with a correction is the nearest to editing a call's arguments
// that the protocol allows (an mcp_approval_response only approves or
// denies, with a reason): the reason tells the model which arguments to use
// instead, and the model asks again.
const (
	// CorrectionPrefix starts the reason of a denial with a correction; the
	// correction's compact JSON follows.
	CorrectionPrefix = "Use these arguments instead: "
	// KeptPrefix starts the line that names the arguments the person could
	// not see (redacted on the card) and left as they were: the model keeps
	// the values it sent, which Toolgate never stored.
	KeptPrefix = "Keep the values you sent for these arguments, which the user could not see: "
	// MaxCorrectionLen bounds a correction's compact JSON, in bytes.
	MaxCorrectionLen = 16000
)

// correction checks the correction of decision d on a and returns it as
// stored (compact JSON), or nil without one. A correction goes with a
// denial only; it is a JSON object that fits the tool's inputSchema where
// Toolgate knows one; "[redacted]" is allowed only where the card showed a
// hidden value, and means "keep the value the model sent".
func (dc *decider) correction(ctx context.Context, a conversation.Approval, d conversation.Decision) (json.RawMessage, error) {
	raw := bytes.TrimSpace(d.Correction)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	bad := func(field, format string, args ...any) error {
		msg := fmt.Sprintf(format, args...)
		e := apperr.Invalidf("invalid_correction", field, "%s", msg)
		e.Message = fmt.Sprintf("the correction for %s was not accepted, so nothing was recorded: %s", a.ID, msg)
		return e
	}
	switch {
	case d.Approve != nil && *d.Approve:
		return nil, bad("correction", "a correction goes with approve: false: it denies this request and asks the model to ask again with these arguments")
	case d.Remember:
		return nil, bad("correction", "a correction asks the model to call the tool again, so it cannot go with remember: true, which blocks the tool")
	}
	v, err := decodeStrict(raw)
	if err != nil {
		return nil, bad("correction", "correction must be one JSON object of arguments (%s)", err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, bad("correction", "correction must be a JSON object of arguments, like {\"city\": \"Berlin\"}")
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil || compact.Len() > MaxCorrectionLen {
		return nil, bad("correction", "correction must be at most %d bytes of JSON", MaxCorrectionLen)
	}
	shown := present(a)
	hidden := hiddenShown(shown)
	f := apperr.Fields{}
	kept := map[string]bool{}
	walk(obj, "", func(path string, x any) {
		str, isStr := x.(string)
		switch {
		case isStr && strings.ContainsRune(str, 0), strings.ContainsRune(path, 0):
			f.Add(fieldOf(path), "%s must not contain NUL characters", nameOf(path))
		case isStr && keepsHidden(hidden, path, str):
			kept[path] = true
		case isStr && str == conversation.RedactedValue:
			f.Add(fieldOf(path), "%s holds the placeholder %q, but the request had no hidden value there to keep; type the value, or remove the argument", nameOf(path), conversation.RedactedValue)
		case isStr && strings.Contains(str, conversation.RedactedValue):
			f.Add(fieldOf(path), "%s holds part of a hidden value (%q); send it back exactly as shown to keep the model's value, or type the whole value", nameOf(path), conversation.RedactedValue)
		}
	})
	if len(f) > 0 {
		return nil, f.Err("invalid_correction", fmt.Sprintf("the correction for %s was not accepted, so nothing was recorded: %s", a.ID, f.Join()))
	}
	if sameJSON(compact.Bytes(), shown.Arguments) {
		return nil, bad("correction", "the correction is the same as the request's arguments; change an argument, or deny without a correction")
	}
	if err := dc.fitsSchema(ctx, a, compact.Bytes(), kept); err != nil {
		return nil, err
	}
	return compact.Bytes(), nil
}

// fitsSchema checks the correction against the tool's inputSchema, as
// discovery stored it. Problems at a kept hidden value are not the
// person's: the model fills in the value it sent.
func (dc *decider) fitsSchema(ctx context.Context, a conversation.Approval, correction []byte, kept map[string]bool) error {
	tool, ok, err := dc.policies.DiscoveredTool(ctx, a.ServerLabel, a.ToolName)
	if err != nil {
		return err
	}
	if !ok {
		return nil // an undiscovered tool declared no schema
	}
	problems, err := argschema.Check(tool.InputSchema, correction)
	if errors.Is(err, argschema.ErrUnusable) {
		dc.log.WarnContext(ctx, "a tool's input schema cannot be used to check a correction", "server_label", a.ServerLabel,
			"tool_name", a.ToolName, "error", err)
		return nil
	}
	if err != nil {
		return err
	}
	f := apperr.Fields{}
	for _, p := range problems {
		if underKept(p.Path, kept) {
			continue
		}
		if p.Path == "" {
			f.Add("correction", "%s", p.Message)
		} else {
			f.Add(fieldOf(p.Path), "%s: %s", p.Path, p.Message)
		}
	}
	return f.Err("invalid_correction", fmt.Sprintf("the correction for %s does not fit the input schema of %s, so nothing was recorded: %s",
		a.ID, a.ToolName, f.Join()))
}

func underKept(path string, kept map[string]bool) bool {
	for k := range kept {
		if path == k || strings.HasPrefix(path, k+".") || strings.HasPrefix(path, k+"[") {
			return true
		}
	}
	return false
}

func fieldOf(path string) string { return "correction." + path }

func nameOf(path string) string {
	if path == "" {
		return "correction"
	}
	return path
}

// upstreamReason is what a decision's answer tells the model: with a
// correction, the arguments to use instead (the kept hidden ones left out
// and named, so the model keeps its own values), then the person's reason.
func upstreamReason(a conversation.Approval) string {
	reason := deref(a.DecisionReason)
	if a.Stopped {
		return strings.TrimSpace(conversation.StoppedPrefix + " " + reason)
	}
	if len(a.StoredCorrection) == 0 {
		return reason
	}
	v, err := decodeStrict(a.StoredCorrection)
	if err != nil {
		return reason
	}
	hidden := hiddenShown(present(a))
	var kept []string
	v = prune(v, "", func(path string, x any) bool {
		if str, ok := x.(string); ok && keepsHidden(hidden, path, str) {
			kept = append(kept, path)
			return true
		}
		return false
	})
	b, _ := json.Marshal(v)
	lines := []string{CorrectionPrefix + string(b)}
	if len(kept) > 0 {
		slices.Sort(kept)
		lines = append(lines, KeptPrefix+strings.Join(kept, ", "))
	}
	if reason != "" {
		lines = append(lines, reason)
	}
	return strings.Join(lines, "\n")
}

// hiddenShown maps each hidden path of a request as shown to the string
// shown there: "[redacted]", or a string with a credential hidden inside it
// ("Bearer [redacted]"). Hidden objects show as "[redacted]" too.
func hiddenShown(shown conversation.Approval) map[string]string {
	out := map[string]string{}
	hidden := map[string]bool{}
	for _, p := range shown.Redacted {
		hidden[p] = true
	}
	v, err := decodeStrict(shown.Arguments)
	if err != nil {
		return out
	}
	walk(v, "", func(path string, x any) {
		if str, ok := x.(string); ok && hidden[path] {
			out[path] = str
		}
	})
	return out
}

// keepsHidden reports whether a correction's string at path means "keep
// the value the model sent": "[redacted]" where a value was hidden, or the
// string shown there sent back unchanged.
func keepsHidden(hidden map[string]string, path, str string) bool {
	shown, ok := hidden[path]
	return ok && (str == conversation.RedactedValue || str == shown)
}

// shownCorrection is a stored correction as people see it: redacted.
func shownCorrection(stored json.RawMessage) json.RawMessage {
	if len(stored) == 0 {
		return nil
	}
	b, _ := conversation.Redact(string(stored))
	return b
}

// decodeStrict decodes one JSON value, refusing duplicate object keys (two
// readers could take different ones) and trailing data.
func decodeStrict(raw []byte) (any, error) {
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

// walk calls fn for every value in v below the top, with its path written
// as Redact writes paths.
func walk(v any, path string, fn func(path string, x any)) {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			p := joinPath(path, k)
			fn(p, x)
			walk(x, p, fn)
		}
	case []any:
		for i, x := range t {
			p := path + "[" + strconv.Itoa(i) + "]"
			fn(p, x)
			walk(x, p, fn)
		}
	}
}

// prune removes the object members for which drop says so.
func prune(v any, path string, drop func(path string, x any) bool) any {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			p := joinPath(path, k)
			if drop(p, x) {
				delete(t, k)
				continue
			}
			t[k] = prune(x, p, drop)
		}
	case []any:
		for i, x := range t {
			t[i] = prune(x, path+"["+strconv.Itoa(i)+"]", drop)
		}
	}
	return v
}

// sameJSON reports whether two JSON texts hold the same value.
func sameJSON(a, b []byte) bool {
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
