package testdb

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/internal/postgres"
	"github.com/toolgate/toolgate/internal/postgres/migrate"
)

// PGServer is a Postgres server of a test's own, in a data directory under
// t.TempDir(), on a free loopback port: a database-fault test kills it
// (kill -9, as a crash or an OOM kill would) and starts it again on the
// same data directory and port, without touching the machine's shared
// server. The machine's Postgres binaries (/usr/lib/postgresql/*/bin, or
// PG_BIN) are used; initdb and postgres refuse to run as root, so as root
// they run as the postgres user. The postmaster is this process's child,
// so a kill is reaped at once and the next start finds no live lock.
type PGServer struct {
	t    testing.TB
	bin  string
	data string
	port int
	cred *syscall.Credential // the user the server runs as (nil: this process's)

	proc   *exec.Cmd     // the postmaster, a child of this process
	exited chan struct{} // closed once it exited and was reaped
}

// StartPGServer initdbs a fresh cluster and starts it; it is stopped when
// t ends.
func StartPGServer(t testing.TB) *PGServer {
	t.Helper()
	bin, err := pgBin()
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	s := &PGServer{t: t, bin: bin, port: freePort(t)}
	dir := t.TempDir()
	s.data = filepath.Join(dir, "pgdata")
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("testdb: running as root, the server must run as the postgres user: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		// t.TempDir's parent is private to root: let the postgres user
		// through to its own directory.
		for _, d := range []string{filepath.Dir(dir), dir} {
			if err := os.Chmod(d, 0o711); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Mkdir(s.data, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(s.data, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	s.run("initdb", "-D", s.data, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8", "--no-locale")
	s.Start()
	t.Cleanup(func() {
		if s.Running() {
			s.Kill()
		}
	})
	return s
}

// URL is the server's postgres database, for admin work.
func (s *PGServer) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.port)
}

// NewDatabase creates a database migrated with the project's migrations
// and returns its URL.
func (s *PGServer) NewDatabase() string {
	s.t.Helper()
	ctx := context.Background()
	name := "toolgate_" + randomHex(4)
	admin, err := pgx.Connect(ctx, s.URL())
	if err != nil {
		s.t.Fatalf("testdb: connect to the test's server: %v", err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		s.t.Fatalf("testdb: create database: %v", err)
	}
	u := withDatabase(s.URL(), name)
	pool, err := postgres.Open(ctx, u, false, slog.New(slog.DiscardHandler))
	if err != nil {
		s.t.Fatalf("testdb: open the new database: %v", err)
	}
	defer pool.Close()
	if _, err := migrate.Up(ctx, pool); err != nil {
		s.t.Fatalf("testdb: migrate: %v", err)
	}
	return u
}

// Start starts the server (again) on its data directory and port and
// waits until it takes connections (crash recovery included).
func (s *PGServer) Start() {
	s.t.Helper()
	logf, err := os.OpenFile(filepath.Join(s.data, "server.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		s.t.Fatal(err)
	}
	defer logf.Close()
	s.proc = s.cmd("postgres", "-D", s.data, "-p", strconv.Itoa(s.port), "-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories="+s.data, "-c", "fsync=off", "-c", "max_connections=200")
	s.proc.Stdout, s.proc.Stderr = logf, logf
	if err := s.proc.Start(); err != nil {
		s.t.Fatalf("testdb: start postgres: %v", err)
	}
	exited := make(chan struct{})
	s.exited = exited
	go func(c *exec.Cmd) { _ = c.Wait(); close(exited) }(s.proc)
	ctx := context.Background()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if conn, err := pgx.Connect(ctx, s.URL()); err == nil {
			conn.Close(ctx)
			return
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(filepath.Join(s.data, "server.log"))
			s.t.Fatalf("testdb: postgres exited at start:\n%s", log)
		default:
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(s.data, "server.log"))
			s.t.Fatalf("testdb: postgres takes no connections 60s after its start:\n%s", log)
		}
	}
}

// Kill kills the postmaster and every process of the server with SIGKILL,
// as a crash would, and waits until they are gone: connections break
// without a goodbye, and nothing is flushed or shut down cleanly.
func (s *PGServer) Kill() {
	s.t.Helper()
	if !s.Running() {
		s.t.Fatal("testdb: kill: the server is not running")
	}
	pid := s.proc.Process.Pid
	procs := append([]int{pid}, children(pid)...)
	for _, p := range procs {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	select {
	case <-s.exited:
	case <-time.After(20 * time.Second):
		s.t.Fatal("testdb: the postmaster outlived SIGKILL")
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, p := range procs[1:] {
		for alive(p) {
			if time.Now().After(deadline) {
				s.t.Fatalf("testdb: process %d of the server outlived SIGKILL", p)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// The lock file names a dead process; its number may be reused before
	// the next start.
	_ = os.Remove(filepath.Join(s.data, "postmaster.pid"))
}

// Running reports whether the postmaster runs.
func (s *PGServer) Running() bool {
	if s.exited == nil {
		return false
	}
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

func (s *PGServer) cmd(name string, args ...string) *exec.Cmd {
	c := exec.Command(filepath.Join(s.bin, name), args...)
	c.Dir = os.TempDir()
	if s.cred != nil {
		c.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	return c
}

func (s *PGServer) run(name string, args ...string) {
	s.t.Helper()
	c := s.cmd(name, args...)
	if out, err := c.CombinedOutput(); err != nil {
		log, _ := os.ReadFile(filepath.Join(s.data, "server.log"))
		s.t.Fatalf("testdb: %s: %v\n%s\nserver log:\n%s", name, err, out, log)
	}
}

// pgBin is the directory of the newest installed Postgres's binaries.
func pgBin() (string, error) {
	if d := os.Getenv("PG_BIN"); d != "" {
		return d, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "pg_ctl")); err == nil {
			return d, nil
		}
	}
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", fmt.Errorf("no Postgres server binaries (initdb, pg_ctl): install postgresql, or set PG_BIN to their directory")
}

func version(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

func freePort(t testing.TB) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// children are the processes whose parent is pid.
func children(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so cut at its end.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, p)
		}
	}
	return out
}

func alive(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	return len(f) > 0 && f[0] != "Z" // a zombie is dead, only not reaped
}
