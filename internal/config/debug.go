package config

import (
	"fmt"
	"net"
	"strings"
)

// debugAddr checks DEBUG_ADDR: profiles show memory contents and stacks, so
// they are served only on a loopback address (127.0.0.1:6060, [::1]:6060,
// localhost:6060), reachable through an SSH tunnel or kubectl port-forward,
// never on a public interface.
func debugAddr(raw string, errs *[]string) string {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return ""
	}
	host, _, err := net.SplitHostPort(raw)
	if err != nil {
		*errs = append(*errs, fmt.Sprintf("DEBUG_ADDR must be host:port on a loopback address, e.g. 127.0.0.1:6060 (got %q)", raw))
		return raw
	}
	if host == "localhost" {
		return raw
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		*errs = append(*errs, fmt.Sprintf("DEBUG_ADDR must be a loopback address such as 127.0.0.1:6060, because profiles expose memory and stacks (got %q); reach it through an SSH tunnel or port-forward", raw))
	}
	return raw
}
