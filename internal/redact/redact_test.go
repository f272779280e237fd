package redact

import (
	"encoding/json"
	"strings"
	"testing"
)

// Credential shapes, built from parts so no scanner mistakes this file for
// a leak.
var (
	testPEM = "-----BEGIN " + "RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7x9vQm3Z\nq2Lw0Yb8=\n-----END " + "RSA PRIVATE KEY-----"
	testJWT = "eyJhbGciOiJIUzI1NiJ9" + ".eyJzdWIiOiIxMjM0NTY3ODkwIn0" + ".dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
	testSK  = "sk-" + "proj-4fQk2VbZ8uXhT1rLmN0pAe7s"
	testGHP = "ghp_" + "Zx81kQm2pL0sVb7nTr4yWc9eHu3aJf6dGi5o"
	testAWS = "AKIA" + "IOSFODNN7EXAMPLE"
)

// The detector hides credentials by what they look like, wherever they are,
// and leaves ordinary text alone.
func TestText(t *testing.T) {
	tests := []struct{ in, want string }{
		// Whole values.
		{testPEM, Marker},
		{testJWT, Marker},
		{testSK, Marker},
		{"sk-" + "abcdefghijklmnopqrstuvwx", Marker},
		{testGHP, Marker},
		{"gho_" + "abcdefghijklmnopqrstuvwx1234", Marker},
		{"ghs_" + "abcdefghijklmnopqrstuvwx1234", Marker},
		{"github_pat_" + "11ABCDEFG0123456789_abcdefghijklmnop", Marker},
		{"xoxb-" + "123456789012-1234567890123-AbCdEfGhIj", Marker},
		{"xoxp-" + "1234-5678-abcdef", Marker},
		{testAWS, Marker},
		{"ASIA" + "ABCDEFGHIJKLMNOP", Marker},
		{"sk_live_" + "51HaBcDeFgHiJkLmNo", Marker},
		{"AIza" + "SyA1bC2dE3fG4hI5jK6lM7nO8pQ9rS0tU1v", Marker},
		{"Bearer " + "abc123.def-456", "Bearer " + Marker},
		{"bearer " + "Zm9vYmFyYmF6cXV4cXV1eA==", "bearer " + Marker},
		// Inside longer text: only the credential goes.
		{"curl -H 'Authorization: Bearer " + testSK + "' https://api.example.com/v1",
			"curl -H 'Authorization: Bearer " + Marker + "' https://api.example.com/v1"},
		{"git clone https://" + testGHP + "@github.com/acme/app.git", "git clone https://" + Marker + "@github.com/acme/app.git"},
		{"export AWS_ACCESS_KEY_ID=" + testAWS + " && aws s3 ls", "export AWS_ACCESS_KEY_ID=" + Marker + " && aws s3 ls"},
		{"GITHUB_TOKEN=abc123 ./release.sh --password=hunter2 --verbose",
			"GITHUB_TOKEN=" + Marker + " ./release.sh --password=" + Marker + " --verbose"},
		{"https://api.example.com/data?city=Oslo&api_key=k3y-value&units=metric",
			"https://api.example.com/data?city=Oslo&api_key=" + Marker + "&units=metric"},
		{"psql postgres://admin:s3cr3t@db.internal:5432/app", "psql postgres://admin:" + Marker + "@db.internal:5432/app"},
		{`curl -d '{"user":"ann","password":"hunter2"}' https://x.example`, `curl -d '{"user":"ann","password":"` + Marker + `"}' https://x.example`},
		{"curl -H 'Cookie: session=abc; theme=dark' https://x.example", "curl -H 'Cookie: " + Marker + "' https://x.example"},
		{"key:\n" + testPEM + "\nend", "key:\n" + Marker + "\nend"},
		{"-----BEGIN " + "OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEA (cut short", Marker},
		{"token " + testJWT + " expires soon", "token " + Marker + " expires soon"},
		// Near misses: ordinary text stays.
		{"the bearer of bad news", ""},
		{"Bearer instruments are risky", ""},
		{"Authorization: Bearer $TOKEN", ""},
		{"curl -H \"Authorization: Bearer ${API_TOKEN}\"", ""},
		{"pip install scikit-learn sk-learn", ""},
		{"task-force-alpha-bravo-charlie-delta-echo", ""},
		{"sk-short", ""},
		{"ghp_short", ""},
		{"ghx_abcdefghijklmnopqrstuvwxyz1234", ""},
		{"xoxz-1234567890-abc", ""},
		{"AKIA1234", ""},
		{"AKIAIOSFODNN7EXAMPLEX", ""},
		{"eyJhbGciOiJIUzI1NiJ9 is a header", ""},
		{"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----", ""},
		{"-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----", ""},
		{"https://example.com/search?q=weather&city=Oslo", ""},
		{"See https://docs.example.com:8080/path", ""},
		{"city=Oslo units=metric", ""},
		{"the password policy is strict", ""},
		{"Delete the forecast for Oslo tomorrow", ""},
		{"Authorization: [redacted]", ""},
	}
	for _, tc := range tests {
		want := tc.want
		if want == "" {
			want = tc.in
		}
		got, n := Text(tc.in)
		wantN := strings.Count(want, Marker) - strings.Count(tc.in, Marker)
		if got != want || n != wantN {
			t.Errorf("Text(%q)\n = %q, %d\nwant %q, %d", tc.in, got, n, want, wantN)
		}
		// Stored arguments are redacted again when shown: nothing more goes.
		if again, n := Text(got); again != got || n != 0 {
			t.Errorf("Text(%q) again = %q, %d; want it unchanged", got, again, n)
		}
	}
}

// Keys that name credentials hide their values whole; values that look
// like credentials are hidden at any depth, under any key, and their
// paths are listed.
func TestArguments_ByValueNested(t *testing.T) {
	raw := `{"ssh_key":"anything","jwt":"x.y","client_secret":"cs","private_key":{"kty":"RSA"},"cookie":"a=b",` +
		`"steps":[{"run":"curl -H 'Authorization: Bearer ` + testSK + `' https://api.example.com"},` +
		`{"env":{"NOTE":"` + testGHP + `"}},"plain text"],"deploy":{"key":"` + strings.ReplaceAll(testPEM, "\n", `\n`) + `"},"city":"Oslo"}`
	got, paths := Arguments(raw)
	want := `{"city":"Oslo","client_secret":"[redacted]","cookie":"[redacted]","deploy":{"key":"[redacted]"},"jwt":"[redacted]",` +
		`"private_key":"[redacted]","ssh_key":"[redacted]","steps":[{"run":"curl -H 'Authorization: Bearer [redacted]' https://api.example.com"},` +
		`{"env":{"NOTE":"[redacted]"}},"plain text"]}`
	if string(got) != want {
		t.Errorf("Redact =\n%s\nwant\n%s", got, want)
	}
	wantPaths := "client_secret,cookie,deploy.key,jwt,private_key,ssh_key,steps[0].run,steps[1].env.NOTE"
	if strings.Join(paths, ",") != wantPaths {
		t.Errorf("paths %v, want %s", paths, wantPaths)
	}
	for _, secret := range []string{testSK, testGHP, "MIIEowIBAAKCAQEA"} {
		if strings.Contains(string(got), secret) {
			t.Errorf("the redacted arguments still hold %q", secret)
		}
	}
	// Redacted again (as stored arguments are when shown), they stay the
	// same and list the same paths.
	if again, p := Arguments(string(got)); string(again) != want || strings.Join(p, ",") != wantPaths {
		t.Errorf("Redact again = %s %v", again, p)
	}
	// Arguments that are not JSON keep their text, without the credential.
	if got, _ := Arguments("run " + testSK); string(got) != `"run [redacted]"` {
		t.Errorf("Arguments(non-JSON) = %s", got)
	}
}

// A tool's result keeps its shape: credentials in any string are masked
// and counted, a string under a secret-looking key goes whole, numbers keep
// their digits, and a result with nothing to mask is returned as it came.
func TestValues(t *testing.T) {
	raw := `{"content":[{"type":"text","text":"key ` + testSK + ` and Bearer abc123.def-456 <ok>"}],` +
		`"structuredContent":{"api_key":"plain","tokens_used":12345678901234567890,"auth":{"user":"ann"},"next":"page2",` +
		`"list":["` + testGHP + `", "Oslo"],"password":"$PW"},"isError":false}`
	got, n, err := Values(json.RawMessage(raw))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"content":[{"text":"key [redacted] and Bearer [redacted] <ok>","type":"text"}],"isError":false,` +
		`"structuredContent":{"api_key":"[redacted]","auth":{"user":"ann"},"list":["[redacted]","Oslo"],"next":"page2",` +
		`"password":"$PW","tokens_used":12345678901234567890}}`
	if string(got) != want || n != 4 {
		t.Errorf("Values =\n%s, %d\nwant\n%s, 4", got, n, want)
	}
	if again, n, _ := Values(got); string(again) != string(got) || n != 0 {
		t.Errorf("Values again = %s, %d; want it unchanged", again, n)
	}
	clean := `{"content":[{"type":"text","text":"Oslo: 12 °C"}], "isError": false}`
	if got, n, err := Values(json.RawMessage(clean)); string(got) != clean || n != 0 || err != nil {
		t.Errorf("Values(clean) = %s, %d, %v; want it as it came", got, n, err)
	}
	if _, _, err := Values(json.RawMessage(`{"content":`)); err == nil {
		t.Error("Values of broken JSON gave no error")
	}
}
