package secrets_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/secrets"
)

func TestSealOpensOnlyWithTheSameKeyAndAAD(t *testing.T) {
	a, b := secrets.NewRandom(), secrets.NewRandom()
	plain := []byte(`{"Authorization":"Bearer s3cret"}`)
	sealed := a.Seal(plain, []byte("crm"))
	if bytes.Contains(sealed, []byte("s3cret")) {
		t.Fatal("the sealed value holds the plaintext")
	}
	if again := a.Seal(plain, []byte("crm")); bytes.Equal(again, sealed) {
		t.Error("two seals of one value are equal: the nonce is not random")
	}
	if got, err := a.Open(sealed, []byte("crm")); err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("Open = %q, %v", got, err)
	}
	for name, open := range map[string]func() ([]byte, error){
		"another key": func() ([]byte, error) { return b.Open(sealed, []byte("crm")) },
		"another row": func() ([]byte, error) { return a.Open(sealed, []byte("billing")) },
		"altered":     func() ([]byte, error) { s := bytes.Clone(sealed); s[len(s)-1] ^= 1; return a.Open(s, []byte("crm")) },
		"truncated":   func() ([]byte, error) { return a.Open(sealed[:10], []byte("crm")) },
		"empty":       func() ([]byte, error) { return a.Open(nil, []byte("crm")) },
	} {
		if _, err := open(); !errors.Is(err, secrets.ErrWrongKey) {
			t.Errorf("%s: err %v, want ErrWrongKey", name, err)
		}
	}
}

func TestParseKeyWantsBase64Of32Bytes(t *testing.T) {
	good := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
	for _, s := range []string{good, strings.TrimRight(good, "="), " " + good + "\n"} {
		if k, err := secrets.ParseKey(s); err != nil || len(k) != 32 {
			t.Errorf("ParseKey(%q) = %d bytes, %v", s, len(k), err)
		}
	}
	for _, s := range []string{"", "not base64!", base64.StdEncoding.EncodeToString(make([]byte, 16)), "0123456789abcdef0123456789abcdef"} {
		if _, err := secrets.ParseKey(s); err == nil || !strings.Contains(err.Error(), "openssl rand -base64 32") {
			t.Errorf("ParseKey(%q) err %v, want one saying how to generate a key", s, err)
		}
	}
}

func TestKeyFileIsCreatedOnceWithMode0600(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".toolgate", "secrets.key")
	k1, created, err := secrets.LoadOrCreateKeyFile(path)
	if err != nil || !created || len(k1) != 32 {
		t.Fatalf("first run: %d bytes, created %v, %v", len(k1), created, err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v, %v; want 0600", st.Mode().Perm(), err)
	}
	if dst, _ := os.Stat(filepath.Dir(path)); dst.Mode().Perm() != 0o700 {
		t.Errorf("key directory mode %v, want 0700", dst.Mode().Perm())
	}
	k2, created, err := secrets.LoadOrCreateKeyFile(path)
	if err != nil || created || !bytes.Equal(k1, k2) {
		t.Fatalf("second run: created %v, same key %v, %v", created, bytes.Equal(k1, k2), err)
	}
	if err := os.WriteFile(path, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := secrets.LoadOrCreateKeyFile(path); err == nil || !strings.Contains(err.Error(), "SECRETS_KEY_FILE") {
		t.Errorf("a damaged key file: %v, want an error naming SECRETS_KEY_FILE", err)
	}
}
