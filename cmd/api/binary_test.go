package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/testdb"
)

// buildEmbeddedToolgate builds the binary as make build does (tag webapp, version
// stamped with -ldflags) into a temporary directory. The web app it embeds
// is a small stand-in laid over frontend/dist with go build -overlay, so the
// test runs the same on a clean clone (no dist) as after make build, and
// never writes into the source tree.
func buildEmbeddedToolgate(t *testing.T, page string, files map[string][]byte) string {
	t.Helper()
	goBin, err := exec.LookPath("go") // go test puts its own go first in PATH
	if err != nil {
		t.Skip("no go command to build the binary with:", err)
	}
	dist, err := filepath.Abs(filepath.Join("..", "..", "frontend", "dist"))
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	files["index.html"] = []byte(page)
	replace := map[string]string{}
	for name, body := range files {
		src := filepath.Join(tmp, "overlay", filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(src), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(src, body, 0o644); err != nil {
			t.Fatal(err)
		}
		replace[filepath.Join(dist, filepath.FromSlash(name))] = src
	}
	overlay, _ := json.Marshal(map[string]any{"Replace": replace})
	overlayFile := filepath.Join(tmp, "overlay.json")
	if err := os.WriteFile(overlayFile, overlay, 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(tmp, "bin", "toolgate")
	cmd := exec.Command(goBin, "build", "-tags", "webapp", "-overlay", overlayFile,
		"-ldflags", "-X main.version=v0.9.0-test -X main.commit=0123456789abcdef -X main.date=2026-05-04T10:11:12Z",
		"-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// runToolgate runs the built binary in dir with exactly env (nothing
// inherited: no WEB_DIR from the caller's environment).
func runToolgate(t *testing.T, bin, dir string, env map[string]string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir, cmd.Env = dir, toolgateEnv(env)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("%s %v: %v", bin, args, err)
	}
	return out.String(), errOut.String(), cmd.ProcessState.ExitCode()
}

func toolgateEnv(env map[string]string) []string {
	list := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	for k, v := range env {
		list = append(list, k+"="+v)
	}
	return list
}

// TestBinary_ServesTheEmbeddedAppFromAnyDirectory: bin/toolgate as make
// build makes it, copied to a directory with no frontend/ and started there
// with no WEB_DIR, serves the app inside it (page, precompressed assets, no
// source maps), reports its stamped version, checks its own health, and
// refuses an unknown command with the usage and exit status 2.
func TestBinary_ServesTheEmbeddedAppFromAnyDirectory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	js := bytes.Repeat([]byte(`export const embedded = "from the binary";`+"\n"), 100)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(js)
	_ = zw.Close()
	const page = `<!doctype html><title>Toolgate</title><div id="root"></div><!-- embedded by TestBinary -->`
	bin := buildEmbeddedToolgate(t, page, map[string][]byte{
		"assets/app-test.js":     js,
		"assets/app-test.js.gz":  gz.Bytes(),
		"assets/app-test.js.map": []byte(`{"sources":["src/secret.ts"]}`),
	})
	elsewhere := t.TempDir() // no frontend/dist here

	out, stderr, code := runToolgate(t, bin, elsewhere, nil, "version")
	for _, want := range []string{"toolgate v0.9.0-test\n", "commit:  0123456789abcdef\n", "built:   2026-05-04T10:11:12Z\n", "web app: embedded\n"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("toolgate version: exit %d, stdout %q (stderr %q), want %q", code, out, stderr, want)
		}
	}
	if out, stderr, code := runToolgate(t, bin, elsewhere, nil, "sideways"); code != 2 || out != "" ||
		!strings.Contains(stderr, `unknown command "sideways"`) || !strings.Contains(stderr, usage) {
		t.Errorf("toolgate sideways: exit %d, stdout %q, stderr %q; want 2 and the usage", code, out, stderr)
	}
	// chat is a client of a running server: the server's configuration is
	// not read, so a DATABASE_URL it could not use is no error for it.
	if _, stderr, _ := runToolgate(t, bin, elsewhere, map[string]string{"DATABASE_URL": "mysql://nope", "LOG_LEVEL": "loud"}, "chat", "-h"); strings.Contains(stderr, "invalid configuration") {
		t.Errorf("toolgate chat read the server's configuration: %s", stderr)
	}

	addr := freeAddr(t)
	env := map[string]string{"DATABASE_URL": testdb.URL(t), "LISTEN_ADDR": addr,
		"EMULATOR_ADDR": "127.0.0.1:0", "DEMO_MCP_ADDR": "127.0.0.1:0",
		"SECRETS_KEY_FILE":     filepath.Join(t.TempDir(), "secrets.key"),
		"TOOLGATE_ADMIN_EMAIL": testAdminEmail, "TOOLGATE_ADMIN_PASSWORD": testAdminPassword}
	server := exec.Command(bin) // no command: serve
	server.Dir, server.Env = elsewhere, toolgateEnv(env)
	logs := &syncBuffer{}
	server.Stdout, server.Stderr = logs, logs
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- server.Wait() }()
	waited := false // exited has been received from
	t.Cleanup(func() {
		if !waited { // the test failed before stopping it
			_ = server.Process.Kill()
			if err := <-exited; err != nil {
				t.Logf("toolgate killed: %v", err)
			}
		}
	})
	base := "http://" + addr
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if res, err := http.Get(base + "/healthz"); err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				break
			}
		}
		select {
		case err := <-exited:
			waited = true
			t.Fatalf("toolgate exited early: %v\n%s", err, logs)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("toolgate not healthy in time:\n%s", logs)
		}
	}
	if !strings.Contains(logs.String(), "version=v0.9.0-test") {
		t.Errorf("the start log does not name the version:\n%s", logs)
	}

	for _, path := range []string{"/", "/settings"} {
		res, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || string(body) != page {
			t.Errorf("GET %s = %d %.120q, want the embedded index.html", path, res.StatusCode, body)
		}
	}
	req, _ := http.NewRequest("GET", base+"/assets/app-test.js", nil)
	req.Header.Set("Accept-Encoding", "gzip") // set by hand: the transport then leaves the body as sent
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || res.Header.Get("Content-Encoding") != "gzip" || !bytes.Equal(body, gz.Bytes()) {
		t.Errorf("GET the asset with gzip = %d, Content-Encoding %q, %d bytes; want the embedded .gz", res.StatusCode, res.Header.Get("Content-Encoding"), len(body))
	}
	if res, err := http.Get(base + "/assets/app-test.js.map"); err != nil || res.StatusCode != 404 {
		t.Errorf("GET the source map: %v %v, want 404", res.StatusCode, err)
	} else {
		res.Body.Close()
	}
	signIn(t, base)
	if code, body := do(t, "GET", base+"/api/info", ""); code != 200 || !strings.Contains(body, `"version":"v0.9.0-test"`) {
		t.Errorf("GET /api/info = %d %s, want the stamped version", code, body)
	}

	check := map[string]string{"LISTEN_ADDR": addr}
	if out, stderr, code := runToolgate(t, bin, elsewhere, check, "healthcheck"); code != 0 {
		t.Errorf("toolgate healthcheck on a running server: exit %d, %s %s", code, out, stderr)
	}
	if err := server.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		waited = true
		if err != nil {
			t.Errorf("toolgate after SIGTERM: %v\n%s", err, logs)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("toolgate did not stop on SIGTERM:\n%s", logs)
	}
	if _, stderr, code := runToolgate(t, bin, elsewhere, check, "healthcheck"); code != 1 || !strings.Contains(stderr, "toolgate: healthcheck:") {
		t.Errorf("toolgate healthcheck with no server: exit %d, stderr %q; want 1", code, stderr)
	}
}
