package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/toolgate/toolgate/internal/client"
	"github.com/toolgate/toolgate/internal/postgres"
)

// proxyEnv, when set in the environment, makes this program the plain
// reverse proxy (a separate process, so its CPU is measured as Toolgate's
// is): it proxies to the URL in it and prints its address on stdout.
const proxyEnv = "TOOLGATE_BENCH_PROXY_TARGET"

// runProxy is the baseline: net/http/httputil.ReverseProxy flushing every
// write, with idle connections to the upstream kept for reuse.
func runProxy(target string) error {
	u, err := url.Parse(target)
	if err != nil {
		return fmt.Errorf("proxy target: %w", err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 1024
	rp.Transport = tr
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("proxy listen: %w", err)
	}
	fmt.Println(ln.Addr().String())
	srv := &http.Server{Handler: rp, ReadHeaderTimeout: 10 * time.Second}
	return srv.Serve(ln)
}

// child is a process the bench started and measures.
type child struct {
	cmd     *exec.Cmd
	base    string
	logs    *syncBuffer
	metrics string // Toolgate's METRICS_TOKEN
	dbURL   string // Toolgate's own database
	dbName  string
	baseURL string // the database it was created beside
}

func (c *child) pid() int { return c.cmd.Process.Pid }

func (c *child) stop() {
	_ = c.cmd.Process.Kill()
	_ = c.cmd.Wait()
}

func startProxy(ctx context.Context, target string) (*child, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find own executable: %w", err)
	}
	cmd := exec.CommandContext(ctx, self)
	cmd.Env = append(os.Environ(), proxyEnv+"="+target)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("proxy stdout: %w", err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start proxy: %w", err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		return nil, fmt.Errorf("proxy address: %w", err)
	}
	return &child{cmd: cmd, base: "http://" + strings.TrimSpace(line)}, nil
}

// startToolgate starts bin as Toolgate on a fresh database named after
// dbURL, with OPENAI_BASE_URL at the mock, and signs the admin in. It
// sends up to maxEntries MCP entries per request (the provider's 128 unless
// more are asked for).
func startToolgate(ctx context.Context, bin, dbURL, upstream string, maxEntries int) (*child, *client.Client, error) {
	name := "toolgate_bench_" + randHex(6)
	u, err := url.Parse(dbURL)
	if err != nil {
		return nil, nil, fmt.Errorf("database URL: %w", err)
	}
	u.Path = "/" + name
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	dir, err := os.MkdirTemp("", "toolgate-bench")
	if err != nil {
		return nil, nil, err
	}
	const email, password = "bench@toolgate.test", "bench correct horse battery"
	cmd := exec.CommandContext(ctx, bin)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
		"LISTEN_ADDR=" + addr, "DATABASE_URL=" + u.String(), "DATABASE_CREATE=true",
		"OPENAI_BASE_URL=" + upstream + "/v1/", "DEMO_MCP_ADDR=127.0.0.1:0", "OFFLINE_DEMO=true",
		"LOG_LEVEL=warn", "USER_MAX_CONCURRENT_TURNS=1000", "USER_MESSAGES_PER_MINUTE=10000",
		fmt.Sprintf("UPSTREAM_MAX_TOOL_ENTRIES=%d", max(128, maxEntries)),
		"TOOLGATE_ADMIN_EMAIL=" + email, "TOOLGATE_ADMIN_PASSWORD=" + password}
	// DEBUG_ADDR=127.0.0.1:6060 ./scripts/bench.sh profiles Toolgate while
	// it is measured; METRICS_TOKEN lets you scrape its /metrics (the bench
	// reads the Go runtime's figures there: one of its own when unset);
	// GODEBUG, GOGC and GOMEMLIMIT tune its runtime.
	metricsToken := os.Getenv("METRICS_TOKEN")
	if metricsToken == "" {
		metricsToken = randHex(16)
	}
	cmd.Env = append(cmd.Env, "METRICS_TOKEN="+metricsToken)
	for _, k := range []string{"DEBUG_ADDR", "GODEBUG", "GOGC", "GOMEMLIMIT"} {
		if v := os.Getenv(k); v != "" {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	logs := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("start toolgate: %w", err)
	}
	c := &child{cmd: cmd, base: "http://" + addr, logs: logs, metrics: metricsToken, dbURL: u.String(), dbName: name, baseURL: dbURL}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if res, err := http.Get(c.base + "/healthz"); err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			c.stop()
			return nil, nil, fmt.Errorf("toolgate not healthy in 60s:\n%s", logs)
		}
	}
	tgc, err := newToolgateClient(c.base)
	if err == nil {
		err = tgc.Login(ctx, email, password)
	}
	if err != nil {
		c.stop()
		return nil, nil, fmt.Errorf("sign in: %w", err)
	}
	return c, tgc, nil
}

// cpuTime is the user+system CPU time of process pid so far
// (/proc/<pid>/stat, in clock ticks of 10 ms).
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("read stat: %w", err)
	}
	// The command name may hold spaces: fields are counted after its ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("unexpected /proc stat format")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, errors.New("unexpected /proc stat format")
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond, nil
}

// rss is the resident set size of process pid in bytes.
func rss(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/statm", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// syncBuffer is a child's output, written by its pipes while read on failure.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// execSQL runs sql on the database at dbURL.
func execSQL(ctx context.Context, dbURL, sql string) error {
	pool, err := postgres.Open(ctx, dbURL, false, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, sql); err != nil {
		return fmt.Errorf("exec: %w", err)
	}
	return nil
}

// dropDatabase removes Toolgate's database once it has stopped.
func dropDatabase(baseURL, name string) {
	if err := execSQL(context.Background(), baseURL, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
		fmt.Fprintf(os.Stderr, "bench: drop database %s: %v\n", name, err)
	}
}
