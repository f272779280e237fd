// Package secrets encrypts the secrets Toolgate stores (MCP server header
// values) with AES-256-GCM under a key it is given: SECRETS_KEY, or in the
// offline demo a key file created on first run.
package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// KeyLen is the key size: 32 bytes, AES-256.
const KeyLen = 32

// GenerateHint is the sentence that says how to make a key.
const GenerateHint = "generate one with `openssl rand -base64 32`"

// Box seals and opens values with one key.
type Box struct {
	aead cipher.AEAD
	key  []byte
}

// New returns a Box for a 32-byte key.
func New(key []byte) (*Box, error) {
	if len(key) != KeyLen {
		return nil, fmt.Errorf("the secrets key must be %d bytes, got %d", KeyLen, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Box{aead: aead, key: append([]byte(nil), key...)}, nil
}

// Derive returns a 32-byte key for one purpose (such as signing capability
// tokens), derived from the box's key with HMAC-SHA256: every replica with
// the same SECRETS_KEY derives the same key, and the derived key reveals
// nothing of the box's.
func (b *Box) Derive(purpose string) []byte {
	m := hmac.New(sha256.New, b.key)
	m.Write([]byte("toolgate key derivation v1\x00" + purpose))
	return m.Sum(nil)
}

// NewRandom returns a Box with a fresh random key, for tests and for a
// process that keeps nothing beyond its own lifetime.
func NewRandom() *Box {
	key := make([]byte, KeyLen)
	_, _ = rand.Read(key) // crypto/rand.Read never fails
	b, _ := New(key)
	return b
}

// Seal encrypts plain, bound to aad (e.g. the row's id, so a value cannot
// be moved to another row), and returns nonce || ciphertext.
func (b *Box) Seal(plain, aad []byte) []byte {
	nonce := make([]byte, b.aead.NonceSize(), b.aead.NonceSize()+len(plain)+b.aead.Overhead())
	_, _ = rand.Read(nonce)
	return b.aead.Seal(nonce, nonce, plain, aad)
}

// ErrWrongKey is returned when a sealed value does not open: another key
// sealed it, or it was tampered with.
var ErrWrongKey = errors.New("the value does not decrypt with this key (another SECRETS_KEY encrypted it, or it was altered)")

// Open decrypts what Seal returned for the same aad.
func (b *Box) Open(sealed, aad []byte) ([]byte, error) {
	n := b.aead.NonceSize()
	if len(sealed) < n+b.aead.Overhead() {
		return nil, ErrWrongKey
	}
	plain, err := b.aead.Open(nil, sealed[:n], sealed[n:], aad)
	if err != nil {
		return nil, ErrWrongKey
	}
	return plain, nil
}

// ParseKey decodes a SECRETS_KEY value: base64 (standard, padded or not)
// of exactly 32 bytes.
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	key, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		key, err = base64.RawStdEncoding.DecodeString(s)
	}
	if err != nil || len(key) != KeyLen {
		return nil, fmt.Errorf("must be the base64 of %d random bytes; %s", KeyLen, GenerateHint)
	}
	return key, nil
}

// LoadOrCreateKeyFile reads the key in path, or creates path (mode 0600, its
// directory 0700) with a new random key when it does not exist. created
// reports the latter.
func LoadOrCreateKeyFile(path string) (key []byte, created bool, err error) {
	b, err := os.ReadFile(path)
	if err == nil {
		key, err := ParseKey(string(b))
		if err != nil {
			return nil, false, fmt.Errorf("the key file %s (SECRETS_KEY_FILE) %v", path, err)
		}
		return key, false, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, false, fmt.Errorf("read the key file %s (SECRETS_KEY_FILE): %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, false, fmt.Errorf("create the directory of the key file %s (SECRETS_KEY_FILE): %w", path, err)
	}
	key = make([]byte, KeyLen)
	_, _ = rand.Read(key)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) { // another process created it meanwhile
		return LoadOrCreateKeyFile(path)
	}
	if err != nil {
		return nil, false, fmt.Errorf("create the key file %s (SECRETS_KEY_FILE): %w", path, err)
	}
	_, err = f.WriteString(base64.StdEncoding.EncodeToString(key) + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
		return nil, false, fmt.Errorf("write the key file %s (SECRETS_KEY_FILE): %w", path, err)
	}
	return key, true, nil
}
