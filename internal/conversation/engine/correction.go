package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
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
	v, err := conversation.DecodeStrict(raw)
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
	hidden := conversation.HiddenShown(shown)
	f := apperr.Fields{}
	kept := map[string]bool{}
	conversation.Walk(obj, "", func(path string, x any) {
		str, isStr := x.(string)
		switch {
		case isStr && strings.ContainsRune(str, 0), strings.ContainsRune(path, 0):
			f.Add(conversation.FieldOf(path), "%s must not contain NUL characters", conversation.NameOf(path))
		case isStr && conversation.KeepsHidden(hidden, path, str):
			kept[path] = true
		case isStr && str == conversation.RedactedValue:
			f.Add(conversation.FieldOf(path), "%s holds the placeholder %q, but the request had no hidden value there to keep; type the value, or remove the argument", conversation.NameOf(path), conversation.RedactedValue)
		case isStr && strings.Contains(str, conversation.RedactedValue):
			f.Add(conversation.FieldOf(path), "%s holds part of a hidden value (%q); send it back exactly as shown to keep the model's value, or type the whole value", conversation.NameOf(path), conversation.RedactedValue)
		}
	})
	if len(f) > 0 {
		return nil, f.Err("invalid_correction", fmt.Sprintf("the correction for %s was not accepted, so nothing was recorded: %s", a.ID, f.Join()))
	}
	if conversation.SameJSON(compact.Bytes(), shown.Arguments) {
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
	tool, ok, err := dc.policies.Tools.Discovered(ctx, a.ServerLabel, a.ToolName)
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
		if conversation.UnderKept(p.Path, kept) {
			continue
		}
		if p.Path == "" {
			f.Add("correction", "%s", p.Message)
		} else {
			f.Add(conversation.FieldOf(p.Path), "%s: %s", p.Path, p.Message)
		}
	}
	return f.Err("invalid_correction", fmt.Sprintf("the correction for %s does not fit the input schema of %s, so nothing was recorded: %s",
		a.ID, a.ToolName, f.Join()))
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
	v, err := conversation.DecodeStrict(a.StoredCorrection)
	if err != nil {
		return reason
	}
	hidden := conversation.HiddenShown(present(a))
	var kept []string
	v = conversation.Prune(v, "", func(path string, x any) bool {
		if str, ok := x.(string); ok && conversation.KeepsHidden(hidden, path, str) {
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
