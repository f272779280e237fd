// Package redact hides credentials in text and JSON by what they look
// like: the patterns the approval card hides in a call's arguments, and
// the MCP face masks in a tool's result before the model reads it. It is
// pure (no I/O), so every package can use it.
package redact

import (
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Marker replaces values under secret-looking keys, and the secret part
// of a string that carries a credential (see secretValues).
const Marker = "[redacted]"

// secretWords are matched against a key lowercased with '-', '_' and spaces
// removed. A false positive hides a harmless value from the person deciding;
// a false negative shows a secret, so the list leans towards hiding.
var secretWords = []string{"password", "passwd", "passphrase", "secret", "token", "apikey",
	"authorization", "credential", "privatekey", "privkey", "sshkey", "jwt", "cookie", "accesskey", "sessionid",
	"bearer", "signature"}

var secretKeys = map[string]bool{"auth": true, "pwd": true, "pass": true, "pin": true, "otp": true}

// SecretKey says whether a key names a credential ("password",
// "X-Api-Key", "client_secret"), case and separators ignored.
func SecretKey(k string) bool {
	n := strings.NewReplacer("-", "", "_", "", " ", "", ".", "").Replace(strings.ToLower(k))
	if secretKeys[n] {
		return true
	}
	for _, w := range secretWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// secretValue is one shape of credential found inside a string, whatever
// its key. Only the part in group (0: the whole match) is hidden, so a
// shell command keeps its readable rest: `curl -H "Authorization: Bearer
// [redacted]" https://…`. hint is a substring (lowercase when fold is set)
// every match contains, a cheap test before the expression runs; ok, when
// set, must accept the match's submatches.
type secretValue struct {
	name  string
	re    *regexp.Regexp
	group int
	hint  []string
	fold  bool
	ok    func(m []string) bool
}

// secretValues are precise on purpose: each needs a vendor prefix, a
// shape (PEM armour, a JWT's three segments) or a secret-looking name
// next to the value, so ordinary text ("bearer of bad news", "task-force",
// "sk-learn") stays readable.
var secretValues = []secretValue{
	{name: "pem private key", hint: []string{"-----BEGIN"},
		// A truncated block (no END line) is hidden to the end of the string.
		re: regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?s:.*?)(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\z)`)},
	{name: "jwt", hint: []string{"eyJ"},
		re: regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+){0,2}`)},
	{name: "openai-style key", hint: []string{"sk-"},
		re: regexp.MustCompile(`\bsk-[A-Za-z0-9_-]{20,}`)},
	{name: "stripe key", hint: []string{"k_live_", "k_test_"},
		re: regexp.MustCompile(`\b[sr]k_(?:live|test)_[A-Za-z0-9]{16,}`)},
	{name: "github token", hint: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"},
		re: regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})`)},
	{name: "slack token", hint: []string{"xox"},
		re: regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9-]{10,}`)},
	{name: "aws access key id", hint: []string{"AKIA", "ASIA"},
		re: regexp.MustCompile(`\b(?:AKIA|ASIA)[A-Z0-9]{16}\b`)},
	{name: "google api key", hint: []string{"AIza"},
		re: regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}`)},
	{name: "bearer token", hint: []string{"bearer"}, fold: true, group: 1,
		re: regexp.MustCompile(`(?i)\bbearer\s+([A-Za-z0-9._~+/-]+=*)`),
		ok: func(m []string) bool { return tokenLike(m[1]) }},
	// Header lines in a command or request text: the whole value.
	{name: "credential header", hint: []string{"authorization", "cookie", "api-key", "auth-token"}, fold: true, group: 1,
		re: regexp.MustCompile(`(?i)\b(?:proxy-)?(?:authorization|set-cookie|cookie|x-api-key|api-key|x-auth-token)\s*:\s*([^\r\n"']+)`),
		ok: func(m []string) bool { return !placeholder(m[1]) }},
	// JSON written inside a string (a request body in a command).
	{name: "quoted secret field", hint: secretHints, fold: true, group: 2,
		re: regexp.MustCompile(`"([^"\\]{1,64})"\s*:\s*"((?:[^"\\]|\\.)+)"`),
		ok: func(m []string) bool { return SecretKey(m[1]) && !placeholder(m[2]) }},
	// NAME=value, --name=value and ?name=value with a secret-looking name;
	// a shell variable ($TOKEN) is not a secret.
	{name: "secret assignment", hint: secretHints, fold: true, group: 2,
		re: regexp.MustCompile(`([A-Za-z][A-Za-z0-9_.-]*)=("[^"]*"|'[^']*'|[^\s"'&;]+)`),
		ok: func(m []string) bool { return SecretKey(m[1]) && !placeholder(strings.Trim(m[2], `"'`)) }},
	// A password in a URL: scheme://user:password@host.
	{name: "url password", hint: []string{"@"}, group: 1,
		re: regexp.MustCompile(`\b[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:([^/\s@]+)@`),
		ok: func(m []string) bool { return !placeholder(m[1]) }},
}

// secretHints are in every lowercased text that has a secret-looking name
// (SecretKey): the patterns that need one run only then.
var secretHints = []string{"pass", "pwd", "secret", "token", "key", "auth", "cred", "cookie", "session", "signature",
	"bearer", "jwt", "pin", "otp"}

// tokenLike tells a bearer token from a word: at least 8 characters with a
// digit or a symbol in them, or 20 or more.
func tokenLike(s string) bool {
	if len(s) >= 20 {
		return true
	}
	return len(s) >= 8 && strings.ContainsAny(s, "0123456789-._~+/=")
}

// placeholder is a value that hides nothing: empty, ending in a variable
// reference ("Bearer $TOKEN") or already holding the marker.
func placeholder(v string) bool {
	f := strings.Fields(v)
	return len(f) == 0 || strings.HasPrefix(f[len(f)-1], "$") || strings.Contains(v, Marker)
}

// Text replaces the credentials in s (secretValues) with Marker and
// says how many it hid.
func Text(s string) (string, int) {
	if len(s) < 5 { // pin=1 is the shortest
		return s, 0
	}
	out, lower, n := s, "", 0
	for i := range secretValues {
		p := &secretValues[i]
		in := out
		if p.fold {
			if lower == "" {
				lower = strings.ToLower(out)
			}
			in = lower
		}
		if !slices.ContainsFunc(p.hint, func(h string) bool { return strings.Contains(in, h) }) {
			continue
		}
		if r, k := replaceGroup(out, p); k > 0 {
			out, lower, n = r, "", n+k
		}
	}
	return out, n
}

// replaceGroup hides p's matches in s and says how many it hid.
func replaceGroup(s string, p *secretValue) (string, int) {
	n := 0
	var b strings.Builder
	last := 0
	for _, loc := range p.re.FindAllStringSubmatchIndex(s, -1) {
		start, end := loc[2*p.group], loc[2*p.group+1]
		if start < 0 || start < last {
			continue
		}
		if p.ok != nil {
			m := make([]string, len(loc)/2)
			for i := range m {
				if loc[2*i] >= 0 {
					m[i] = s[loc[2*i]:loc[2*i+1]]
				}
			}
			if !p.ok(m) {
				continue
			}
		}
		b.WriteString(s[last:start])
		b.WriteString(Marker)
		last, n = end, n+1
	}
	if n == 0 {
		return s, 0
	}
	b.WriteString(s[last:])
	return b.String(), n
}

// Arguments parses tool arguments (JSON text as the model wrote them) and
// hides their secrets, at any depth: every value under a secret-looking
// key is replaced with Marker, and so is every credential found in
// a string value (secretValues), only that part of a longer string. It
// returns the redacted JSON and the paths it hid ("auth.token",
// "items[2].password"). Arguments that are not JSON are returned as a JSON
// string, their credentials hidden the same way.
func Arguments(raw string) (json.RawMessage, []string) {
	var v any
	if strings.TrimSpace(raw) == "" {
		return json.RawMessage("{}"), nil
	}
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		s, _ := Text(raw)
		b, _ := json.Marshal(s)
		return b, nil
	}
	var paths []string
	v = redact(v, "", &paths)
	slices.Sort(paths) // map order is random; the person sees a stable list
	b, err := json.Marshal(v)
	if err != nil { // cannot happen for decoded JSON
		return json.RawMessage("{}"), paths
	}
	return b, paths
}

func redact(v any, path string, paths *[]string) any {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			p := k
			if path != "" {
				p = path + "." + k
			}
			if SecretKey(k) && x != nil {
				t[k] = Marker
				*paths = append(*paths, p)
				continue
			}
			t[k] = redact(x, p, paths)
		}
	case []any:
		for i, x := range t {
			t[i] = redact(x, path+"["+strconv.Itoa(i)+"]", paths)
		}
	case string:
		// A string already holding the marker counts as hidden: arguments
		// stored redacted are redacted again to list their paths.
		s, hid := Text(t)
		if (hid > 0 || strings.Contains(t, Marker)) && path != "" { // a bare string has no path to name; the marker shows
			*paths = append(*paths, path)
		}
		return s
	}
	return v
}
