package conversation

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
)

// RedactedValue replaces values under secret-looking keys.
const RedactedValue = "[redacted]"

// secretWords are matched against a key lowercased with '-', '_' and spaces
// removed. A false positive hides a harmless value from the person deciding;
// a false negative shows a secret, so the list leans towards hiding.
var secretWords = []string{"password", "passwd", "passphrase", "secret", "token", "apikey",
	"authorization", "credential", "privatekey", "cookie", "accesskey", "sessionid", "bearer", "signature"}

var secretKeys = map[string]bool{"auth": true, "pwd": true, "pass": true, "pin": true, "otp": true}

func secretKey(k string) bool {
	n := strings.NewReplacer("-", "", "_", "", " ", "").Replace(strings.ToLower(k))
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

// Redact parses tool arguments (JSON text as the model wrote them) and
// replaces every value under a secret-looking key, at any depth, with
// RedactedValue. It returns the redacted JSON and the paths it hid
// ("auth.token", "items[2].password"). Arguments that are not JSON are
// returned as a JSON string.
func Redact(raw string) (json.RawMessage, []string) {
	var v any
	if strings.TrimSpace(raw) == "" {
		return json.RawMessage("{}"), nil
	}
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		b, _ := json.Marshal(raw)
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
			if secretKey(k) && x != nil {
				t[k] = RedactedValue
				*paths = append(*paths, p)
				continue
			}
			t[k] = redact(x, p, paths)
		}
	case []any:
		for i, x := range t {
			t[i] = redact(x, path+"["+strconv.Itoa(i)+"]", paths)
		}
	}
	return v
}
