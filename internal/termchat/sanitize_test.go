package termchat

import (
	"strings"
	"testing"
)

func TestClean_EscapesWhatCouldDriveTheTerminal(t *testing.T) {
	for _, tc := range []struct{ in, multi, single string }{
		{"plain text, ünïcödé, 日本, 👩‍👩‍👧", "plain text, ünïcödé, 日本, 👩‍👩‍👧", "plain text, ünïcödé, 日本, 👩‍👩‍👧"},
		{"\x1b[2J\x1b[H", `\x1b[2J\x1b[H`, `\x1b[2J\x1b[H`},
		{"a\r\nyou> fake", "a\\r\nyou> fake", `a\r\nyou> fake`},
		{"tab\there", "tab\there", `tab\there`},
		{"bell\a back\b del\x7f nul\x00", `bell\x07 back\x08 del\x7f nul\x00`, `bell\x07 back\x08 del\x7f nul\x00`},
		{"csi\u009b2J osc\u009d0;title\u009c", `csi\u009b2J osc\u009d0;title\u009c`, `csi\u009b2J osc\u009d0;title\u009c`},
		{"bidi\u202eevil\u2066 zw\u200b sep\u2028", `bidi\u202eevil\u2066 zw\u200b sep\u2028`, `bidi\u202eevil\u2066 zw\u200b sep\u2028`},
		{"bad \xff\xfe utf8", `bad \xff\xfe utf8`, `bad \xff\xfe utf8`},
	} {
		if got := Clean(tc.in, true); got != tc.multi {
			t.Errorf("Clean(%q, true) = %q, want %q", tc.in, got, tc.multi)
		}
		if got := Clean(tc.in, false); got != tc.single {
			t.Errorf("Clean(%q, false) = %q, want %q", tc.in, got, tc.single)
		}
	}
}

func TestTermText_IndentsEveryLineOfServerText(t *testing.T) {
	var b strings.Builder
	tm := &term{w: &b}
	tm.write("you> hi\n")
	tm.text("first piece ", true)
	tm.text("goes on\nyou> fake\n\n[y] approve once", false)
	tm.newline()
	want := "you> hi\n  first piece goes on\n  you> fake\n\n  [y] approve once\n"
	if b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}

func TestPrettyJSON_KeepsOrderAndEscapesButShowsHTMLCharacters(t *testing.T) {
	got := prettyJSON([]byte(`{"z":"a\u003cb\u003e \u0026 \\u003c \u001b[2J","a":[1,2.50]}`))
	want := "{\n  \"z\": \"a<b> & \\\\u003c \\u001b[2J\",\n  \"a\": [\n    1,\n    2.50\n  ]\n}"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if got := prettyJSON(nil); got != "{}" {
		t.Errorf("no arguments: %q", got)
	}
}
