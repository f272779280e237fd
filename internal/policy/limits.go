package policy

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ToolLimits bound what one MCP server's tool listing may hold, so that a
// broken or hostile server cannot make Toolgate store (and hand every
// member) a tool list of any size. Over a limit the server's discovery
// fails with a sentence naming the limit, and nothing is stored.
type ToolLimits struct {
	NameBytes        int // MCP_TOOL_NAME_MAX_BYTES: one tool's name
	DescriptionBytes int // MCP_TOOL_DESCRIPTION_MAX_BYTES: one tool's description (and its title)
	SchemaBytes      int // MCP_TOOL_SCHEMA_MAX_BYTES: one tool's input schema, as JSON
	ListBytes        int // MCP_TOOL_LIST_MAX_BYTES: every answer of one discovery together, as read from the wire
}

// The documented defaults of ToolLimits (docs/configuration.md).
const (
	DefaultToolNameBytes        = 256
	DefaultToolDescriptionBytes = 64 << 10
	DefaultToolSchemaBytes      = 256 << 10
	DefaultToolListBytes        = 8 << 20
)

// DefaultToolLimits are the limits without configuration.
func DefaultToolLimits() ToolLimits {
	return ToolLimits{
		NameBytes:        DefaultToolNameBytes,
		DescriptionBytes: DefaultToolDescriptionBytes,
		SchemaBytes:      DefaultToolSchemaBytes,
		ListBytes:        DefaultToolListBytes,
	}
}

// OrDefaults fills the limits left zero with their defaults.
func (l ToolLimits) OrDefaults() ToolLimits {
	d := DefaultToolLimits()
	if l.NameBytes <= 0 {
		l.NameBytes = d.NameBytes
	}
	if l.DescriptionBytes <= 0 {
		l.DescriptionBytes = d.DescriptionBytes
	}
	if l.SchemaBytes <= 0 {
		l.SchemaBytes = d.SchemaBytes
	}
	if l.ListBytes <= 0 {
		l.ListBytes = d.ListBytes
	}
	return l
}

// CheckTool says, in a sentence, why a listed tool cannot be stored, or ""
// when it can: a field over its limit, or a name that would not show what
// runs (ToolNameProblem).
func (l ToolLimits) CheckTool(t DiscoveredTool) string {
	l = l.OrDefaults()
	if len(t.Name) > l.NameBytes {
		return fmt.Sprintf("the server listed a tool whose name is %s, more than the limit of %s (MCP_TOOL_NAME_MAX_BYTES): %s",
			FormatBytes(len(t.Name)), FormatBytes(l.NameBytes), QuoteName(t.Name))
	}
	if msg := ToolNameProblem(t.Name); msg != "" {
		return msg
	}
	if n := max(len(t.Description), len(t.Title), len(t.Annotations.Title)); n > l.DescriptionBytes {
		return fmt.Sprintf("the tool %s has a description or title of %s, more than the limit of %s (MCP_TOOL_DESCRIPTION_MAX_BYTES)",
			QuoteName(t.Name), FormatBytes(n), FormatBytes(l.DescriptionBytes))
	}
	if len(t.InputSchema) > l.SchemaBytes {
		return fmt.Sprintf("the input schema of the tool %s is %s, more than the limit of %s (MCP_TOOL_SCHEMA_MAX_BYTES)",
			QuoteName(t.Name), FormatBytes(len(t.InputSchema)), FormatBytes(l.SchemaBytes))
	}
	return ""
}

// ToolNameProblem says why a tool name a server listed is refused, or ""
// when it is fine: a name must be 1-128 characters of valid UTF-8 with no
// character that shows differently from what runs (HiddenRune: control,
// bidirectional, zero-width and other invisible characters), so the name
// on an approval card is the name that runs.
func ToolNameProblem(name string) string {
	switch n := utf8.RuneCountInString(name); {
	case name == "":
		return "the server listed a tool without a name"
	case !utf8.ValidString(name):
		return "the server listed a tool whose name is not valid UTF-8: " + QuoteName(name)
	case n > MaxToolNameLen:
		return fmt.Sprintf("the server listed a tool whose name is %d characters, more than %d: %s", n, MaxToolNameLen, QuoteName(name))
	}
	for _, r := range name {
		if HiddenRune(r) {
			return fmt.Sprintf("the server listed a tool whose name holds the invisible or control character U+%04X, "+
				"so it would not show what runs: %s (the server must rename it)", r, QuoteName(name))
		}
	}
	return ""
}

// HiddenRune reports whether r shows as something other than itself, or
// not at all: C0 and C1 controls, format characters (Unicode category Cf:
// the bidirectional overrides, embeddings and isolates U+202A-U+202E and
// U+2066-U+2069, the marks U+200E, U+200F and U+061C, the zero-width
// U+200B-U+200D, U+2060 and U+FEFF, soft hyphen, tag characters ...), line
// and paragraph separators, and the invisible fillers (not variation
// selectors: emoji use them). The web app escapes the same set
// (frontend/src/chat/escape.ts).
func HiddenRune(r rune) bool {
	switch {
	case unicode.Is(unicode.Cc, r), unicode.Is(unicode.Cf, r), unicode.Is(unicode.Zl, r), unicode.Is(unicode.Zp, r):
		return true
	case r == 0x115F, r == 0x1160, r == 0x3164, r == 0xFFA0, r == 0x034F, r == 0x180E:
		return true // Hangul fillers, combining grapheme joiner, Mongolian vowel separator
	}
	return r == utf8.RuneError
}

// QuoteName quotes a name a server sent for a message: at most 64
// characters, every hidden character escaped (\u202e).
func QuoteName(name string) string {
	if r := []rune(name); len(r) > 64 {
		name = string(r[:64]) + "…"
	}
	return `"` + EscapeHidden(name) + `"`
}

// EscapeHidden writes every HiddenRune of s as \uXXXX (\U00XXXXXX beyond
// the BMP) and leaves the rest as it is.
func EscapeHidden(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == utf8.RuneError:
			b.WriteString(`\uFFFD`)
		case HiddenRune(r) && r > 0xFFFF:
			fmt.Fprintf(&b, `\U%08X`, r)
		case HiddenRune(r):
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// FormatBytes is a size for people: 512 bytes, 64 KiB, 150.0 MiB.
func FormatBytes(n int) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d bytes", n)
	case n < 1<<20:
		if n%(1<<10) == 0 {
			return fmt.Sprintf("%d KiB", n>>10)
		}
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
