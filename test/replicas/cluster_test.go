package replicas_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer collects a child's output while it runs.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// tail is the last n lines written, leaving out the access log of
// requests that went well (the polling would hide everything else).
func (s *syncBuffer) tail(n int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var lines []string
	for _, line := range strings.Split(strings.TrimRight(s.b.String(), "\n"), "\n") {
		if !strings.Contains(line, "level=INFO msg=request ") {
			lines = append(lines, line)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// proc is one child process the test started: it is killed by its pid, and
// every proc still running when the test ends is killed then (cluster.add).
type proc struct {
	name string
	cmd  *exec.Cmd
	logs *syncBuffer
	done chan struct{} // closed once it exited and was reaped
}

func startProc(name, bin string, args, env []string, logs *syncBuffer) (*proc, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.SysProcAttr = dieWithTheTest()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, logs: logs, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// kill sends SIGKILL to the process (by its pid) and waits until it is gone.
func (p *proc) kill() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// cluster is everything the test runs: one emulator, one demo MCP server,
// the Toolgate replicas and HAProxy in front of them.
type cluster struct {
	t        *testing.T
	bins     string // the built binaries
	root     string // the repository
	emulator string // its base URL, …/v1/
	demo     string // the demo MCP server's base URL
	proxy    string // HAProxy's base URL: every client request goes here
	// proxyAddr is the address HAProxy listens on, chosen before the
	// replicas start (their PUBLIC_URL).
	proxyAddr string
	replicas  []*replica

	mu    sync.Mutex
	procs []*proc // every process started, for the cleanup
}

// replica is one Toolgate process; it keeps its address across restarts,
// so HAProxy finds it again.
type replica struct {
	name string // as HAProxy names it: api-1, …
	addr string
	env  []string
	logs *syncBuffer

	mu   sync.Mutex
	proc *proc
	up   bool // started and not killed since
}

func newCluster(t *testing.T) *cluster {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, root: root, bins: t.TempDir()}
	// Cleanups run last in, first out: create the database before the
	// cluster, so the processes are killed before it is dropped.
	t.Cleanup(c.killAll)
	return c
}

func (c *cluster) add(p *proc) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.procs = append(c.procs, p)
}

// killAll kills, by pid, every process the test started that still runs.
func (c *cluster) killAll() {
	c.mu.Lock()
	procs := append([]*proc{}, c.procs...)
	c.mu.Unlock()
	for _, p := range procs {
		p.kill()
	}
}

// build compiles toolgate, the emulator and the demo MCP server, as make
// build does (without the embedded web app, which this test does not use).
func (c *cluster) build(ctx context.Context) {
	c.t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		c.t.Fatalf("no go command to build the binaries with: %v", err)
	}
	cmd := exec.CommandContext(ctx, goBin, "build", "-o", c.bins+string(os.PathSeparator),
		"./cmd/api", "./cmd/emulator", "./cmd/demo-mcp")
	cmd.Dir = c.root
	if out, err := cmd.CombinedOutput(); ctx.Err() != nil {
		c.t.Fatalf("building the binaries took longer than its deadline (%v)\n%s", ctx.Err(), out)
	} else if err != nil {
		c.t.Fatalf("go build: %v\n%s", err, out)
	}
	if err := os.Rename(filepath.Join(c.bins, "api"), filepath.Join(c.bins, "toolgate")); err != nil {
		c.t.Fatal(err)
	}
}

func (c *cluster) bin(name string) string { return filepath.Join(c.bins, name) }

// baseEnv is what every child gets from the test's environment: nothing
// else leaks in (no DATABASE_URL or OPENAI_API_KEY of the caller's).
func baseEnv() []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
}

// startHelpers starts the demo MCP server and the emulator, each on a free
// loopback port, and waits until both answer.
func (c *cluster) startHelpers(ctx context.Context, behavior string) {
	c.t.Helper()
	demoAddr, emuAddr := freeAddr(c.t), freeAddr(c.t)
	demoLogs, emuLogs := &syncBuffer{}, &syncBuffer{}
	demo, err := startProc("demo-mcp", c.bin("demo-mcp"), []string{"-addr", demoAddr}, baseEnv(), demoLogs)
	if err != nil {
		c.t.Fatal(err)
	}
	c.add(demo)
	emu, err := startProc("emulator", c.bin("emulator"),
		[]string{"-addr", emuAddr, "-behavior", behavior, "-mcp-timeout", "10s"}, baseEnv(), emuLogs)
	if err != nil {
		c.t.Fatal(err)
	}
	c.add(emu)
	c.demo, c.emulator = "http://"+demoAddr, "http://"+emuAddr+"/v1/"
	waitHTTP(ctx, c.t, demo, c.demo+"/healthz")
	waitHTTP(ctx, c.t, emu, "http://"+emuAddr+"/healthz")
}

// newReplicas prepares n replicas on databaseURL, talking to the emulator
// as a real provider (an API key is set, so they are not offline).
func (c *cluster) newReplicas(n int, databaseURL string, extra map[string]string) {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	for i := 1; i <= n; i++ {
		r := &replica{name: fmt.Sprintf("api-%d", i), addr: freeAddr(c.t), logs: &syncBuffer{}}
		env := map[string]string{
			"LISTEN_ADDR":     r.addr,
			"DATABASE_URL":    databaseURL,
			"DATABASE_CREATE": "false",
			"OPENAI_API_KEY":  "sk-replica-test",
			"OPENAI_BASE_URL": c.emulator,
			// Every replica reads the header secrets the others stored.
			"SECRETS_KEY":       base64.StdEncoding.EncodeToString(key),
			"MCP_ALLOWED_HOSTS": "127.0.0.1", // the demo MCP server is on loopback
			"SHUTDOWN_TIMEOUT":  "2s",
		}
		for k, v := range extra {
			env[k] = v
		}
		r.env = baseEnv()
		for k, v := range env {
			r.env = append(r.env, k+"="+v)
		}
		c.replicas = append(c.replicas, r)
	}
}

// start starts r and waits until it is ready (its /readyz answers 200).
func (c *cluster) start(ctx context.Context, r *replica) error {
	p, err := startProc(r.name, c.bin("toolgate"), nil, r.env, r.logs)
	if err != nil {
		return err
	}
	c.add(p)
	r.mu.Lock()
	r.proc = p
	r.mu.Unlock()
	if err := ready(ctx, p, "http://"+r.addr+"/readyz", 30*time.Second); err != nil {
		p.kill()
		return fmt.Errorf("%s: %w\n%s", r.name, err, r.logs.tail(30))
	}
	r.mu.Lock()
	r.up = true
	r.mu.Unlock()
	return nil
}

// kill SIGKILLs r's process; it reports false when r was not up.
func (r *replica) kill() bool {
	r.mu.Lock()
	p, up := r.proc, r.up
	r.up = false
	r.mu.Unlock()
	if !up {
		return false
	}
	p.kill()
	return true
}

func (r *replica) isUp() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.up
}

// startProxy runs HAProxy with the repository's deploy/haproxy.cfg, the
// replicas' addresses given through its environment.
func (c *cluster) startProxy(ctx context.Context) {
	c.t.Helper()
	haproxy, err := exec.LookPath("haproxy")
	if err != nil {
		haproxy = "/usr/sbin/haproxy"
	}
	if _, err := os.Stat(haproxy); err != nil {
		c.t.Fatalf("HAProxy is not installed (%v): this test runs the replicas behind the real proxy "+
			"from Debian's packages; install it with apt-get install -y haproxy (.ci/run does)", err)
	}
	addr := c.reserveProxy()
	env := append(baseEnv(), "TOOLGATE_PROXY_BIND="+addr)
	for i, r := range c.replicas {
		env = append(env, fmt.Sprintf("TOOLGATE_API_%d=%s", i+1, r.addr))
	}
	cfg := filepath.Join(c.root, "deploy", "haproxy.cfg")
	logs := &syncBuffer{}
	p, err := startProc("haproxy", haproxy, []string{"-db", "-f", cfg}, env, logs)
	if err != nil {
		c.t.Fatal(err)
	}
	c.add(p)
	c.proxy = "http://" + addr
	waitHTTP(ctx, c.t, p, c.proxy+"/readyz")
}

// reserveProxy picks the address HAProxy will listen on, once.
func (c *cluster) reserveProxy() string {
	if c.proxyAddr == "" {
		c.proxyAddr = freeAddr(c.t)
	}
	return c.proxyAddr
}

// waitHTTP fails the test unless url answers 200 within 30 seconds.
func waitHTTP(ctx context.Context, t *testing.T, p *proc, url string) {
	t.Helper()
	if err := ready(ctx, p, url, 30*time.Second); err != nil {
		t.Fatalf("%s: %v\n%s", p.name, err, p.logs.tail(30))
	}
}

func ready(ctx context.Context, p *proc, url string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if res, err := http.DefaultClient.Do(req); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
		}
		switch {
		case p.exited():
			return fmt.Errorf("exited before %s answered", url)
		case ctx.Err() != nil:
			return fmt.Errorf("waiting for %s: %w", url, ctx.Err())
		case time.Now().After(deadline):
			return fmt.Errorf("%s did not answer 200 within %s", url, limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// token creates a personal API token for email with `toolgate token create`.
func (c *cluster) token(ctx context.Context, email string) string {
	c.t.Helper()
	cmd := exec.CommandContext(ctx, c.bin("toolgate"), "token", "create", email, "replica-test")
	cmd.Env = c.replicas[0].env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		c.t.Fatalf("toolgate token create: %v\n%s", err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}
