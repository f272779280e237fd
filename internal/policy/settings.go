package policy

import (
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/toolgate/toolgate/internal/apperr"
)

// Settings are Toolgate's global settings.
type Settings struct {
	// DefaultPolicy applies to tools with no policy of their own on a server
	// with no default. It starts as never, so a fresh install behaves as if
	// approvals were off until someone asks for them.
	DefaultPolicy Policy    `json:"default_policy"`
	LocalUser     string    `json:"local_user"` // the actor recorded in the audit log until there is auth
	UpdatedAt     time.Time `json:"updated_at"`
}

// SettingsPatch changes some settings; absent fields stay as they are.
type SettingsPatch struct {
	DefaultPolicy *Policy `json:"default_policy"`
	LocalUser     *string `json:"local_user"`
}

// Apply validates p and returns the changed settings.
func (p SettingsPatch) Apply(s Settings) (Settings, error) {
	f := apperr.Fields{}
	if p.DefaultPolicy != nil {
		if !p.DefaultPolicy.Valid() {
			f.Add("default_policy", "default_policy must be one of always, never, blocked (got %q)", *p.DefaultPolicy)
		}
		s.DefaultPolicy = *p.DefaultPolicy
	}
	if p.LocalUser != nil {
		if !validUserName(*p.LocalUser) {
			f.Add("local_user", "local_user must be 1-64 printable characters without leading or trailing spaces")
		}
		s.LocalUser = *p.LocalUser
	}
	code := "invalid_local_user"
	if _, ok := f["default_policy"]; ok {
		code = "invalid_policy"
	}
	if err := f.Err(code, "the settings are not valid: "+f.Join()); err != nil {
		return s, err
	}
	return s, nil
}

func validUserName(s string) bool {
	n := utf8.RuneCountInString(s)
	if n == 0 || n > 64 || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	r0, _ := utf8.DecodeRuneInString(s)
	rN, _ := utf8.DecodeLastRuneInString(s)
	return !unicode.IsSpace(r0) && !unicode.IsSpace(rN)
}
