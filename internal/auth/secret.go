package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/crypto/argon2"

	"github.com/toolgate/toolgate/internal/apperr"
)

// Password length limits: at least 8 characters, at most 1024 bytes (long
// enough for any passphrase, short enough that hashing stays cheap).
const (
	MinPasswordLen = 8
	MaxPasswordLen = 1024
)

// argon2id parameters (OWASP's second recommendation: 19 MiB, 2 passes).
const (
	argonTime    = 2
	argonMemory  = 19 * 1024
	argonThreads = 1
	argonKeyLen  = 32
	argonSaltLen = 16
)

// ValidatePassword says what is wrong with a new password, if anything.
func ValidatePassword(pw string) error {
	switch {
	case len(pw) > MaxPasswordLen:
		return apperr.Invalidf("password_too_long", "password", "the password must be at most %d bytes long", MaxPasswordLen)
	case utf8.RuneCountInString(pw) < MinPasswordLen:
		return apperr.Invalidf("password_too_short", "password", "the password must be at least %d characters long", MinPasswordLen)
	}
	return nil
}

// HashPassword returns the argon2id PHC string of pw.
func HashPassword(pw string) (string, error) {
	salt := make([]byte, argonSaltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("password salt: %w", err)
	}
	key := argon2.IDKey([]byte(pw), salt, argonTime, argonMemory, argonThreads, argonKeyLen)
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemory, argonTime, argonThreads,
		b64.EncodeToString(salt), b64.EncodeToString(key)), nil
}

// dummyHash is checked when there is no account, so that an unknown email
// costs the same time as a wrong password.
var dummyHash, _ = HashPassword("toolgate-no-such-account")

// CheckPassword reports whether pw matches the PHC string phc, comparing in
// constant time. A malformed or empty phc never matches.
func CheckPassword(phc, pw string) bool {
	p, err := parsePHC(phc)
	if err != nil {
		return false
	}
	key := argon2.IDKey([]byte(pw), p.salt, p.time, p.memory, p.threads, uint32(len(p.key)))
	return subtle.ConstantTimeCompare(key, p.key) == 1
}

type phcParams struct {
	time, memory uint32
	threads      uint8
	salt, key    []byte
}

func parsePHC(s string) (phcParams, error) {
	var p phcParams
	parts := strings.Split(s, "$")
	if len(parts) != 6 || parts[1] != "argon2id" || parts[2] != "v="+strconv.Itoa(argon2.Version) {
		return p, errors.New("not an argon2id PHC string")
	}
	var threads uint32
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &p.memory, &p.time, &threads); err != nil {
		return p, fmt.Errorf("argon2id parameters: %w", err)
	}
	if p.memory == 0 || p.memory > 1<<21 || p.time == 0 || p.time > 16 || threads == 0 || threads > 16 {
		return p, errors.New("argon2id parameters out of range")
	}
	p.threads = uint8(threads)
	var err error
	if p.salt, err = base64.RawStdEncoding.DecodeString(parts[4]); err != nil {
		return p, fmt.Errorf("argon2id salt: %w", err)
	}
	if p.key, err = base64.RawStdEncoding.DecodeString(parts[5]); err != nil || len(p.key) < 16 {
		return p, errors.New("argon2id key malformed")
	}
	return p, nil
}

// TokenPrefix starts every personal API token, so that a leaked one is easy
// to recognise (and to find with secret scanners).
const TokenPrefix = "tg_"

// NewSecret returns a random secret (256 bits, base64url) with prefix and
// the SHA-256 under which it is stored; the secret itself is never stored.
func NewSecret(prefix string) (secret string, hash []byte) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("crypto/rand failed: %v", err)) // never happens on supported platforms
	}
	secret = prefix + base64.RawURLEncoding.EncodeToString(b)
	return secret, HashSecret(secret)
}

// HashSecret is how a secret is looked up: its SHA-256. A random 256-bit
// secret needs no salt or slow hash.
func HashSecret(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

// newID returns prefix followed by 24 random hex digits.
func newID(prefix string) string {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("crypto/rand failed: %v", err))
	}
	return prefix + hex.EncodeToString(b)
}
