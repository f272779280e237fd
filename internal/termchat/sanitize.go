package termchat

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Clean makes text from the model, a tool or an MCP server safe to print on
// a terminal: every character that could drive the terminal instead of
// being shown is written out as an escape people can read. That is the C0
// controls (ESC, CR, BS, BEL, …), DEL, the C1 controls (U+0080–U+009F, which
// include the 8-bit CSI), Unicode format characters (bidi overrides,
// zero-width characters; the zero-width joiner of emoji stays), line and
// paragraph separators, and bytes that are not UTF-8. So an ANSI sequence
// arrives as the visible text \x1b[2J, and cannot clear the screen, move
// the cursor or overwrite a line to fake a prompt.
//
// With multiline, newlines and tabs are kept (an answer has paragraphs);
// otherwise they are escaped too (\n, \t), for fields that must stay on one
// line.
func Clean(s string, multiline bool) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size <= 1 {
			fmt.Fprintf(&b, `\x%02x`, s[i])
			i++
			continue
		}
		i += size
		switch {
		case (r == '\n' || r == '\t') && multiline:
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r >= 0x80 && r <= 0x9f, r == '\u2028', r == '\u2029',
			unicode.Is(unicode.Cf, r) && r != '\u200d':
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// line is Clean for a one-line field.
func line(s string) string { return Clean(s, false) }
