package emulator_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestEmulator_ImportsNoToolgatePackage keeps the emulator independent: a
// misreading of the protocol in Toolgate must not be mirrored here, so the
// emulator, its binary and their tests import none of Toolgate's packages
// (the demo MCP server is run as a process, like any MCP server).
func TestEmulator_ImportsNoToolgatePackage(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-test", ".", "../../cmd/emulator").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if !strings.HasPrefix(pkg, "github.com/toolgate/toolgate/") || strings.HasPrefix(pkg, "[") {
			continue
		}
		switch strings.TrimSuffix(strings.TrimSuffix(pkg, ".test"), "_test") {
		case "github.com/toolgate/toolgate/internal/emulator", "github.com/toolgate/toolgate/cmd/emulator":
		default:
			t.Errorf("the emulator depends on Toolgate's package %s", pkg)
		}
	}
}
