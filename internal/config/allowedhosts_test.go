package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLoad_AllowedHosts(t *testing.T) {
	cases := []struct {
		name, listen, allowed string
		want                  []string
	}{
		{"default adds the listen host", "192.168.1.5:8080", "", []string{"192.168.1.5", "localhost", "127.0.0.1", "::1"}},
		{"a name as listen host", "toolgate.internal:8080", "", []string{"toolgate.internal", "localhost", "127.0.0.1", "::1"}},
		{"0.0.0.0 adds nothing", "0.0.0.0:8080", "", []string{"localhost", "127.0.0.1", "::1"}},
		{":: adds nothing", "[::]:8080", "", []string{"localhost", "127.0.0.1", "::1"}},
		{"empty listen host adds nothing", ":8080", "", []string{"localhost", "127.0.0.1", "::1"}},
		{"the list replaces the default", "0.0.0.0:8080", "localhost,127.0.0.1", []string{"localhost", "127.0.0.1"}},
		{"ports, brackets, case and spaces are dropped", "127.0.0.1:8080", " Toolgate.Example.com:443 , [::1]:8080,LOCALHOST.", []string{"toolgate.example.com", "::1", "localhost"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load(env(map[string]string{"LISTEN_ADDR": tc.listen, "ALLOWED_HOSTS": tc.allowed}))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, c.AllowedHosts); diff != "" {
				t.Errorf("AllowedHosts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoad_AllowedHostsRefusesURLs(t *testing.T) {
	for _, v := range []string{"http://toolgate.example.com", "toolgate.example.com/app", "a,,b", "*"} {
		_, err := Load(env(map[string]string{"ALLOWED_HOSTS": v}))
		if err == nil || !strings.Contains(err.Error(), "ALLOWED_HOSTS") {
			t.Errorf("ALLOWED_HOSTS=%q: err = %v, want one naming ALLOWED_HOSTS", v, err)
		}
	}
}
