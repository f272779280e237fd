package auth

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/crypto/argon2"

	"github.com/toolgate/toolgate/internal/apperr"
)

var phcRE = regexp.MustCompile(`^\$argon2id\$v=19\$m=19456,t=2,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$`)

func TestPassword_HashIsAnArgon2idPHCStringThatRoundTrips(t *testing.T) {
	const pw = "correct horse battery staple"
	h1, err := HashPassword(pw)
	if err != nil {
		t.Fatal(err)
	}
	h2, _ := HashPassword(pw)
	if !phcRE.MatchString(h1) {
		t.Fatalf("hash %q is not an argon2id PHC string with our parameters", h1)
	}
	if h1 == h2 {
		t.Error("two hashes of one password are equal: the salt is not random")
	}
	for _, h := range []string{h1, h2} {
		if !CheckPassword(h, pw) {
			t.Errorf("the password does not match its own hash %q", h)
		}
	}
	// The stored key is argon2id of the password under the stored salt and
	// parameters, so another implementation can check it.
	parts := strings.Split(h1, "$")
	salt, _ := base64.RawStdEncoding.DecodeString(parts[4])
	want := argon2.IDKey([]byte(pw), salt, 2, 19*1024, 1, 32)
	if got := base64.RawStdEncoding.EncodeToString(want); got != parts[5] {
		t.Errorf("stored key %s, argon2id gives %s", parts[5], got)
	}
}

func TestPassword_WrongPasswordsNeverMatch(t *testing.T) {
	const pw = "correct horse battery staple"
	h, _ := HashPassword(pw)
	for _, wrong := range []string{"", "correct horse battery stapl", "correct horse battery staplE",
		"Correct horse battery staple", pw + " ", pw + "\x00", strings.Repeat("a", MaxPasswordLen)} {
		if CheckPassword(h, wrong) {
			t.Errorf("%.40q (%d bytes) matches the hash of %q", wrong, len(wrong), pw)
		}
	}
}

// phc builds a PHC string from its parts.
func phc(alg, version, params string, salt, key []byte) string {
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$%s$%s$%s$%s$%s", alg, version, params, b64.EncodeToString(salt), b64.EncodeToString(key))
}

func TestPassword_TamperedOrMalformedHashesNeverMatch(t *testing.T) {
	const pw = "correct horse battery staple"
	salt := []byte("0123456789abcdef")
	key := argon2.IDKey([]byte(pw), salt, 2, 19*1024, 1, 32)
	good := phc("argon2id", "v=19", "m=19456,t=2,p=1", salt, key)
	if !CheckPassword(good, pw) {
		t.Fatalf("the reference hash %q does not match", good)
	}
	flip := func(b []byte, i int) []byte {
		c := append([]byte(nil), b...)
		c[i] ^= 1
		return c
	}
	for name, h := range map[string]string{
		// The comparison covers the whole key: a difference in its first
		// or last byte is a mismatch.
		"first key byte":   phc("argon2id", "v=19", "m=19456,t=2,p=1", salt, flip(key, 0)),
		"last key byte":    phc("argon2id", "v=19", "m=19456,t=2,p=1", salt, flip(key, len(key)-1)),
		"key cut to 16":    phc("argon2id", "v=19", "m=19456,t=2,p=1", salt, key[:16]),
		"key too short":    phc("argon2id", "v=19", "m=19456,t=2,p=1", salt, key[:8]),
		"salt":             phc("argon2id", "v=19", "m=19456,t=2,p=1", flip(salt, 3), key),
		"memory":           phc("argon2id", "v=19", "m=19457,t=2,p=1", salt, key),
		"passes":           phc("argon2id", "v=19", "m=19456,t=3,p=1", salt, key),
		"threads":          phc("argon2id", "v=19", "m=19456,t=2,p=2", salt, key),
		"argon2i":          phc("argon2i", "v=19", "m=19456,t=2,p=1", salt, key),
		"version 16":       phc("argon2id", "v=16", "m=19456,t=2,p=1", salt, key),
		"memory too large": phc("argon2id", "v=19", "m=4194304,t=2,p=1", salt, key),
		"zero passes":      phc("argon2id", "v=19", "m=19456,t=0,p=1", salt, key),
		"garbled params":   phc("argon2id", "v=19", "m=x,t=2,p=1", salt, key),
		"bad base64 key":   strings.Replace(good, good[len(good)-4:], "!!!!", 1),
		"extra segment":    good + "$x",
		"missing segment":  good[:strings.LastIndex(good, "$")],
		"empty":            "",
		"bcrypt":           "$2a$10$N9qo8uLOickgx2ZMRZoMyeIjZAgcfl7p92ldGxad68LJZdL17lhWy",
		"plain text":       pw,
	} {
		if CheckPassword(h, pw) {
			t.Errorf("%s: tampered hash %q matches", name, h)
		}
	}
}

func TestPassword_UnknownEmailsCheckAHashOfTheSameCost(t *testing.T) {
	p, err := parsePHC(dummyHash)
	if err != nil {
		t.Fatalf("dummyHash %q does not parse: %v", dummyHash, err)
	}
	if p.time != argonTime || p.memory != argonMemory || p.threads != argonThreads || len(p.key) != argonKeyLen {
		t.Errorf("dummyHash costs %+v, not what real hashes cost", p)
	}
}

func TestPassword_LengthLimits(t *testing.T) {
	for _, tc := range []struct {
		pw   string
		code string
	}{
		{"1234567", "password_too_short"},
		{"12345678", ""},
		{"ééééééé", "password_too_short"}, // 7 characters, 14 bytes
		{"éééééééé", ""},                  // characters count, not bytes
		{strings.Repeat("x", MaxPasswordLen), ""},
		{strings.Repeat("x", MaxPasswordLen+1), "password_too_long"},
	} {
		err := ValidatePassword(tc.pw)
		e, _ := apperr.As(err)
		if (tc.code == "" && err != nil) || (tc.code != "" && (e == nil || e.Code != tc.code)) {
			t.Errorf("ValidatePassword(%d bytes) = %v, want %q", len(tc.pw), err, tc.code)
		}
	}
}

func TestSecret_TokensArePrefixedRandomAndStoredAsSHA256(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		secret, hash := NewSecret(TokenPrefix)
		if !regexp.MustCompile(`^tg_[A-Za-z0-9_-]{43}$`).MatchString(secret) {
			t.Fatalf("token %q: want tg_ and 43 base64url characters (256 bits)", secret)
		}
		sum := sha256.Sum256([]byte(secret))
		if string(hash) != string(sum[:]) || string(HashSecret(secret)) != string(sum[:]) {
			t.Fatalf("hash of %q is not its SHA-256", secret)
		}
		if seen[secret] {
			t.Fatalf("token %q twice", secret)
		}
		seen[secret] = true
	}
	if s, _ := NewSecret(""); strings.HasPrefix(s, TokenPrefix) || len(s) != 43 {
		t.Errorf("session secret %q", s)
	}
	if HashSecret("tg_a") == nil || string(HashSecret("tg_a")) == string(HashSecret("tg_b")) {
		t.Error("different secrets hash alike")
	}
}

func TestSecret_IDsMatchTheDatabaseFormat(t *testing.T) {
	re := regexp.MustCompile(`^usr_[0-9a-f]{24}$`) // the users.id CHECK
	a, b := newID("usr_"), newID("usr_")
	if !re.MatchString(a) || a == b {
		t.Errorf("ids %q %q", a, b)
	}
	if validUserID(a) != nil || validUserID("usr_x") == nil || validUserID("tok_"+a[4:]) == nil {
		t.Error("validUserID does not follow the id format")
	}
}

func TestTokenUser_RefusesABearerThatIsNotAToolgateToken(t *testing.T) {
	s := New(Stores{}, Options{}, nil).SignIn // no stores: refused before any lookup
	for _, b := range []string{"", "ghp_abc", "Bearer tg_x", "TG_abc"} {
		_, err := s.TokenUser(t.Context(), b)
		if e, _ := apperr.As(err); e == nil || e.Kind != apperr.Unauthenticated || !strings.Contains(e.Message, "tg_") {
			t.Errorf("TokenUser(%q) = %v", b, err)
		}
	}
}

func TestOIDC_AdminByEmailOrGroupsClaim(t *testing.T) {
	o := NewOIDC(OIDCConfig{AdminEmails: []string{"boss@example.com"}, AdminGroup: "toolgate-admins"})
	custom := NewOIDC(OIDCConfig{AdminGroup: "ops", GroupsClaim: "roles"})
	none := NewOIDC(OIDCConfig{})
	for _, tc := range []struct {
		name       string
		o          *OIDC
		email      string
		claims     map[string]any
		want       bool
		unverified bool // the provider does not say it verified the email
	}{
		{"listed email", o, "boss@example.com", nil, true, false},
		{"listed email, not verified", o, "boss@example.com", nil, false, true},
		{"not verified, but in the group", o, "boss@example.com", map[string]any{"groups": []any{"toolgate-admins"}}, true, true},
		{"listed email, other case", o, "Boss@Example.com", nil, true, false},
		{"group in a list", o, "a@example.com", map[string]any{"groups": []any{"staff", "toolgate-admins"}}, true, false},
		{"group as a string", o, "a@example.com", map[string]any{"groups": "toolgate-admins"}, true, false},
		{"other groups", o, "a@example.com", map[string]any{"groups": []any{"staff"}}, false, false},
		{"group name is exact", o, "a@example.com", map[string]any{"groups": []any{"toolgate-admins-x", "Toolgate-Admins"}}, false, false},
		{"no groups claim", o, "a@example.com", map[string]any{}, false, false},
		{"groups claim of another shape", o, "a@example.com", map[string]any{"groups": map[string]any{"toolgate-admins": true}}, false, false},
		{"custom claim", custom, "a@example.com", map[string]any{"roles": []any{"ops"}}, true, false},
		{"custom claim, default name ignored", custom, "a@example.com", map[string]any{"groups": []any{"ops"}}, false, false},
		{"no group configured", none, "a@example.com", map[string]any{"groups": []any{""}}, false, false},
	} {
		if got := tc.o.isAdmin(tc.email, !tc.unverified, tc.claims); got != tc.want {
			t.Errorf("%s: isAdmin = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// BenchmarkCheckPassword is the cost of one sign-in's password check
// (argon2id, 19 MiB, 2 passes): what the rate limit multiplies.
func BenchmarkCheckPassword(b *testing.B) {
	phc, err := HashPassword("correct horse battery")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if !CheckPassword(phc, "correct horse battery") {
			b.Fatal("the right password did not match")
		}
	}
}
