package config

import (
	"strings"
	"testing"
	"time"
)

func TestLoad_DebugAddrLoopbackOnly(t *testing.T) {
	if c, err := Load(env(nil)); err != nil || c.DebugAddr != "" {
		t.Fatalf("unset: DebugAddr %q, err %v; want off", c.DebugAddr, err)
	}
	for _, ok := range []string{"127.0.0.1:6060", "[::1]:6060", "localhost:0", "127.0.0.2:6060"} {
		if c, err := Load(env(map[string]string{"DEBUG_ADDR": ok})); err != nil || c.DebugAddr != ok {
			t.Errorf("DEBUG_ADDR=%q: DebugAddr %q, err %v", ok, c.DebugAddr, err)
		}
	}
	for _, bad := range []string{"0.0.0.0:6060", ":6060", "[::]:6060", "10.0.0.5:6060", "example.com:6060", "6060"} {
		_, err := Load(env(map[string]string{"DEBUG_ADDR": bad}))
		if err == nil || !strings.Contains(err.Error(), "DEBUG_ADDR must be") {
			t.Errorf("DEBUG_ADDR=%q: err = %v, want a DEBUG_ADDR error", bad, err)
		}
	}
}

func TestLoad_UpstreamTransport(t *testing.T) {
	c, err := Load(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if u := c.Upstream; u.MaxIdleConns != 256 || u.MaxConnsPerHost != 0 || u.IdleConnTimeout != 90*time.Second || u.MaxToolEntries != 128 {
		t.Errorf("defaults = %+v", u)
	}
	c, err = Load(env(map[string]string{"UPSTREAM_MAX_IDLE_CONNS": "1000", "UPSTREAM_MAX_CONNS_PER_HOST": "600", "UPSTREAM_IDLE_CONN_TIMEOUT": "5m",
		"UPSTREAM_MAX_TOOL_ENTRIES": "2000"}))
	if err != nil {
		t.Fatal(err)
	}
	if u := c.Upstream; u.MaxIdleConns != 1000 || u.MaxConnsPerHost != 600 || u.IdleConnTimeout != 5*time.Minute || u.MaxToolEntries != 2000 {
		t.Errorf("set = %+v", u)
	}
	for key, bad := range map[string]string{"UPSTREAM_MAX_IDLE_CONNS": "0", "UPSTREAM_MAX_CONNS_PER_HOST": "-1", "UPSTREAM_IDLE_CONN_TIMEOUT": "90",
		"UPSTREAM_MAX_TOOL_ENTRIES": "0"} {
		_, err := Load(env(map[string]string{key: bad}))
		if err == nil || !strings.Contains(err.Error(), key+" must be") {
			t.Errorf("%s=%q: err = %v", key, bad, err)
		}
	}
}
