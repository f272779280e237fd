package config

import (
	"strings"
	"testing"
)

func TestLoad_OIDCNeedsAWayToChooseAdmins(t *testing.T) {
	base := map[string]string{"AUTH_MODE": "oidc", "OIDC_ISSUER": "https://idp.example.com", "OIDC_CLIENT_ID": "toolgate",
		"OPENAI_API_KEY": "sk-test", "SECRETS_KEY": "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="}
	for _, tc := range []struct {
		name, key, value string
		ok               bool
	}{
		{"neither", "", "", false},
		{"admin emails", "OIDC_ADMIN_EMAILS", "Boss@Example.com, ops@example.com", true},
		{"admin group", "OIDC_ADMIN_GROUP", "toolgate-admins", true},
		{"blank emails", "OIDC_ADMIN_EMAILS", " , ", false},
	} {
		env := map[string]string{}
		for k, v := range base {
			env[k] = v
		}
		if tc.key != "" {
			env[tc.key] = tc.value
		}
		c, err := Load(func(k string) string { return env[k] })
		if tc.ok != (err == nil) {
			t.Errorf("%s: Load error %v, want ok=%v", tc.name, err, tc.ok)
			continue
		}
		if err != nil && !strings.Contains(err.Error(), "OIDC_ADMIN_EMAILS") {
			t.Errorf("%s: the error does not say what to set: %v", tc.name, err)
		}
		if tc.key == "OIDC_ADMIN_EMAILS" && tc.ok && strings.Join(c.Auth.OIDCAdminEmails, ",") != "boss@example.com,ops@example.com" {
			t.Errorf("admin emails %v", c.Auth.OIDCAdminEmails)
		}
	}
}
