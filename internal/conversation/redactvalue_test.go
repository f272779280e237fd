package conversation

import (
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
func TestHideSecrets(t *testing.T) {
	tests := []struct{ in, want string }{
		// Whole values.
		{testPEM, RedactedValue},
		{testJWT, RedactedValue},
		{testSK, RedactedValue},
		{"sk-" + "abcdefghijklmnopqrstuvwx", RedactedValue},
		{testGHP, RedactedValue},
		{"gho_" + "abcdefghijklmnopqrstuvwx1234", RedactedValue},
		{"ghs_" + "abcdefghijklmnopqrstuvwx1234", RedactedValue},
		{"github_pat_" + "11ABCDEFG0123456789_abcdefghijklmnop", RedactedValue},
		{"xoxb-" + "123456789012-1234567890123-AbCdEfGhIj", RedactedValue},
		{"xoxp-" + "1234-5678-abcdef", RedactedValue},
		{testAWS, RedactedValue},
		{"ASIA" + "ABCDEFGHIJKLMNOP", RedactedValue},
		{"sk_live_" + "51HaBcDeFgHiJkLmNo", RedactedValue},
		{"AIza" + "SyA1bC2dE3fG4hI5jK6lM7nO8pQ9rS0tU1v", RedactedValue},
		{"Bearer " + "abc123.def-456", "Bearer " + RedactedValue},
		{"bearer " + "Zm9vYmFyYmF6cXV4cXV1eA==", "bearer " + RedactedValue},
		// Inside longer text: only the credential goes.
		{"curl -H 'Authorization: Bearer " + testSK + "' https://api.example.com/v1",
			"curl -H 'Authorization: Bearer " + RedactedValue + "' https://api.example.com/v1"},
		{"git clone https://" + testGHP + "@github.com/acme/app.git", "git clone https://" + RedactedValue + "@github.com/acme/app.git"},
		{"export AWS_ACCESS_KEY_ID=" + testAWS + " && aws s3 ls", "export AWS_ACCESS_KEY_ID=" + RedactedValue + " && aws s3 ls"},
		{"GITHUB_TOKEN=abc123 ./release.sh --password=hunter2 --verbose",
			"GITHUB_TOKEN=" + RedactedValue + " ./release.sh --password=" + RedactedValue + " --verbose"},
		{"https://api.example.com/data?city=Oslo&api_key=k3y-value&units=metric",
			"https://api.example.com/data?city=Oslo&api_key=" + RedactedValue + "&units=metric"},
		{"psql postgres://admin:s3cr3t@db.internal:5432/app", "psql postgres://admin:" + RedactedValue + "@db.internal:5432/app"},
		{`curl -d '{"user":"ann","password":"hunter2"}' https://x.example`, `curl -d '{"user":"ann","password":"` + RedactedValue + `"}' https://x.example`},
		{"curl -H 'Cookie: session=abc; theme=dark' https://x.example", "curl -H 'Cookie: " + RedactedValue + "' https://x.example"},
		{"key:\n" + testPEM + "\nend", "key:\n" + RedactedValue + "\nend"},
		{"-----BEGIN " + "OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEA (cut short", RedactedValue},
		{"token " + testJWT + " expires soon", "token " + RedactedValue + " expires soon"},
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
		got, hid := hideSecrets(tc.in)
		if got != want || hid != (want != tc.in) {
			t.Errorf("hideSecrets(%q)\n = %q, %v\nwant %q, %v", tc.in, got, hid, want, want != tc.in)
		}
		// Stored arguments are redacted again when shown: nothing more goes.
		if again, hid := hideSecrets(got); again != got || hid {
			t.Errorf("hideSecrets(%q) again = %q, %v; want it unchanged", got, again, hid)
		}
	}
}

// Keys that name credentials hide their values whole; values that look
// like credentials are hidden at any depth, under any key, and their
// paths are listed.
func TestRedact_ByValueNested(t *testing.T) {
	raw := `{"ssh_key":"anything","jwt":"x.y","client_secret":"cs","private_key":{"kty":"RSA"},"cookie":"a=b",` +
		`"steps":[{"run":"curl -H 'Authorization: Bearer ` + testSK + `' https://api.example.com"},` +
		`{"env":{"NOTE":"` + testGHP + `"}},"plain text"],"deploy":{"key":"` + strings.ReplaceAll(testPEM, "\n", `\n`) + `"},"city":"Oslo"}`
	got, paths := Redact(raw)
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
	if again, p := Redact(string(got)); string(again) != want || strings.Join(p, ",") != wantPaths {
		t.Errorf("Redact again = %s %v", again, p)
	}
	// Arguments that are not JSON keep their text, without the credential.
	if got, _ := Redact("run " + testSK); string(got) != `"run [redacted]"` {
		t.Errorf("Redact(non-JSON) = %s", got)
	}
}
