package policy

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/toolgate/toolgate/internal/apperr"
)

// ActionApprovalCardSet and ActionApprovalCardDelete are the audit actions
// of a tool's approval card words and choices changed or removed.
const (
	ActionApprovalCardSet    = "approval_card.set"
	ActionApprovalCardDelete = "approval_card.delete"
)

// MaxApprovalTextLen is the longest approval text, in characters.
const MaxApprovalTextLen = 500

// Choice is one answer an approval card offers.
type Choice string

// The choices a card can offer. Remember is "always" (allow or block);
// the others are what their names say.
const (
	ChoiceApproveOnce         Choice = "approve_once"
	ChoiceApproveConversation Choice = "approve_conversation"
	ChoiceApproveHour         Choice = "approve_hour"
	ChoiceRemember            Choice = "remember"
	ChoiceDeny                Choice = "deny"
	ChoiceDenyWithCorrection  Choice = "deny_with_correction"
)

// AllChoices are every choice, in the order a card shows them: what a tool
// without limits offers.
func AllChoices() []Choice {
	return []Choice{ChoiceApproveOnce, ChoiceApproveConversation, ChoiceApproveHour, ChoiceRemember,
		ChoiceDeny, ChoiceDenyWithCorrection}
}

// LockedChoices are the choices left when an admin's lock at Ask holds the
// tool: no grant. Remember stays: with a denial it tightens (block always),
// which a lock allows; with an approval the lock refuses it (policy_locked).
// A card limited to grants alone would then offer no way to approve: it
// offers Approve once instead, which is what a lock at Ask asks for (a
// person's yes to each call), so the request can still be answered both ways.
func LockedChoices(cs []Choice) []Choice {
	out := slices.DeleteFunc(slices.Clone(cs), func(c Choice) bool {
		return c == ChoiceApproveConversation || c == ChoiceApproveHour
	})
	if len(out) < len(cs) && !slices.Contains(out, ChoiceApproveOnce) {
		out = append([]Choice{ChoiceApproveOnce}, out...)
	}
	return out
}

// ApprovalCard is what an admin set for one tool's approval card: its
// words (a template over the call's arguments) and the choices it offers.
type ApprovalCard struct {
	ServerLabel string `json:"server_label"`
	ToolName    string `json:"tool_name"`
	// Text is the approval text with {placeholders}; null without one.
	Text *string `json:"approval_text"`
	// Choices the card offers; every choice when none were limited.
	Choices   []Choice   `json:"choices"`
	UpdatedAt *time.Time `json:"updated_at,omitempty"`
	UpdatedBy string     `json:"updated_by,omitempty"`
}

// Allows reports whether c offers choice ch.
func (c ApprovalCard) Allows(ch Choice) bool {
	return c.Choices == nil || slices.Contains(c.Choices, ch)
}

// Validate checks an admin's words and choices: the text at most
// MaxApprovalTextLen characters of valid UTF-8, the choices known, without
// repeats, with at least one way to approve and one to deny.
func (c ApprovalCard) Validate() error {
	if c.Text != nil {
		t := *c.Text
		if !utf8.ValidString(t) || strings.ContainsRune(t, 0) {
			return apperr.Invalidf("invalid_approval_text", "approval_text", "approval_text must be valid UTF-8 text without NUL characters")
		}
		if n := utf8.RuneCountInString(t); n > MaxApprovalTextLen {
			return apperr.Invalidf("invalid_approval_text", "approval_text",
				"approval_text must be at most %d characters (got %d); shorten it", MaxApprovalTextLen, n)
		}
	}
	if c.Choices == nil {
		return nil
	}
	if len(c.Choices) == 0 {
		return apperr.Invalidf("invalid_choices", "choices",
			"choices must not be empty: give at least one way to approve and one to deny, e.g. [\"approve_once\", \"deny\"] (omit choices to offer every one)")
	}
	var approve, deny bool
	for i, ch := range c.Choices {
		if !slices.Contains(AllChoices(), ch) {
			return apperr.Invalidf("invalid_choices", "choices",
				"choices[%d] is %q, which is not a choice; use approve_once, approve_conversation, approve_hour, remember, deny or deny_with_correction", i, ch)
		}
		if slices.Index(c.Choices, ch) != i {
			return apperr.Invalidf("invalid_choices", "choices", "choices[%d] repeats %q; name each choice once", i, ch)
		}
		switch ch {
		case ChoiceApproveOnce, ChoiceApproveConversation, ChoiceApproveHour:
			approve = true
		case ChoiceDeny, ChoiceDenyWithCorrection:
			deny = true
		}
	}
	if !approve || !deny {
		return apperr.Invalidf("invalid_choices", "choices",
			"choices must include at least one way to approve (approve_once, approve_conversation, approve_hour) and one to deny (deny, deny_with_correction), or the card could not be answered both ways")
	}
	return nil
}

// placeholderRE is a {name} or {a.b.c} placeholder: names of letters,
// digits, '_' and '-', joined by dots (a number indexes an array).
var placeholderRE = regexp.MustCompile(`\{([A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*)\}`)

// RenderApprovalText fills text's placeholders from args (a call's
// arguments as JSON, already redacted as the card shows them, so a secret
// stays "[redacted]"). A string fills in as is, anything else as compact
// JSON; a placeholder that names no argument stays as written ("{x}"), so
// the person sees what the words expected and did not get. The result is
// plain text: whoever shows it escapes it.
func RenderApprovalText(text string, args json.RawMessage) string {
	var root any
	if err := json.Unmarshal(args, &root); err != nil {
		root = nil
	}
	return placeholderRE.ReplaceAllStringFunc(text, func(m string) string {
		v, ok := lookupPath(root, strings.Split(m[1:len(m)-1], "."))
		if !ok {
			return m
		}
		if s, isStr := v.(string); isStr {
			return s
		}
		b, err := json.Marshal(v)
		if err != nil {
			return m
		}
		return string(b)
	})
}

func lookupPath(v any, path []string) (any, bool) {
	for _, k := range path {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[k]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// ApprovalCardIn reads a tool's card in r (every choice, no text when
// none is set).
func ApprovalCardIn(ctx context.Context, r Repo, label, tool string) (ApprovalCard, error) {
	c, had, err := r.Cards.Get(ctx, label, tool)
	if err != nil {
		return ApprovalCard{}, err
	}
	if !had {
		return ApprovalCard{ServerLabel: label, ToolName: tool}, nil
	}
	return c, nil
}
