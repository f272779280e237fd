package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/testdb"
)

// openStreams opens GET /api/conversations/{id}/events on each conversation
// over raw TCP (a client costing next to nothing, so the memory measured is
// the server's) and waits for each stream's first heartbeat.
func openStreams(t *testing.T, addr string, convs []string, cookie string) []net.Conn {
	t.Helper()
	conns := make([]net.Conn, len(convs))
	var wg sync.WaitGroup
	for i, id := range convs {
		wg.Go(func() {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Errorf("dial: %v", err)
				return
			}
			conns[i] = c
			fmt.Fprintf(c, "GET /api/conversations/%s/events HTTP/1.1\r\nHost: %s\r\nCookie: %s\r\nAccept: text/event-stream\r\n\r\n", id, addr, cookie)
			_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
			r := bufio.NewReaderSize(c, 512)
			status, err := r.ReadString('\n')
			if err != nil || !strings.Contains(status, " 200 ") {
				t.Errorf("stream %s: %q %v", id, status, err)
				return
			}
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					t.Errorf("stream %s: %v", id, err)
					return
				}
				if strings.Contains(line, ": ping") {
					return
				}
			}
		})
	}
	wg.Wait()
	return conns
}

// memInUse is the live heap and the goroutine stacks, after a collection.
func memInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc + m.StackInuse
}

// serverConns counts the TCP connections the server has open on port
// (from /proc/net/tcp: every socket whose local port it is, except the
// listener and those already closed and waiting out TIME_WAIT).
func serverConns(t *testing.T, port int) int {
	t.Helper()
	n := 0
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for line := range strings.Lines(string(data)) {
			fs := strings.Fields(line)
			if len(fs) < 4 || fs[0] == "sl" {
				continue
			}
			_, local, _ := strings.Cut(fs[1], ":")
			p, err := strconv.ParseInt(local, 16, 32)
			if err == nil && int(p) == port && fs[3] != "0A" && fs[3] != "06" {
				n++
			}
		}
	}
	return n
}

// serverConns0 is serverConns, checked to see the streams: it fails the
// test when /proc/net/tcp is unreadable.
func serverConns0(t *testing.T, port int) int {
	t.Helper()
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		t.Fatalf("count connections: %v", err)
	}
	return serverConns(t, port)
}

// settle waits until now() is at most want, and returns what it last was.
func settle(want int, now func() int) int {
	deadline := time.Now().Add(15 * time.Second)
	n := now()
	for n > want && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		n = now()
	}
	return n
}

// maxStreamBytes is the memory an open event stream may cost the server.
// Under the race detector (make test's go test -race) stacks and heap are
// inflated, so there the bound is streamBudget's looser one; scripts/test.sh
// also runs the memory tests without -race, where 64 KiB is asserted.
const maxStreamBytes = 64 << 10

// streamBudget is maxStreamBytes, or 1.5 times it under the race detector.
func streamBudget(t testing.TB) int64 {
	if raceEnabled {
		t.Logf("race detector on: the per-stream bound is %d bytes (1.5 × %d); the run without -race asserts %d", maxStreamBytes*3/2, maxStreamBytes, maxStreamBytes)
		return maxStreamBytes * 3 / 2
	}
	return maxStreamBytes
}

// TestRun_OpenStreamsCostLittleAndLeaveNothingBehind opens streamCount
// event streams on as many conversations against the whole program,
// measures what they cost (heap and goroutine stacks, per stream), closes
// them and checks that the goroutines and descriptors (connections) return
// to what they were before. A leak and memory check, not a speed check.
func TestRun_OpenStreamsCostLittleAndLeaveNothingBehind(t *testing.T) {
	const streamCount = 200
	base, _, _ := start(t, map[string]string{"DATABASE_URL": testdb.URL(t), "OFFLINE_DEMO": "false", "SSE_HEARTBEAT": "15s"})
	addr := strings.TrimPrefix(base, "http://")
	c, ok := sessions.Load(base)
	if !ok {
		t.Fatal("no session")
	}
	cookie := c.(interface{ String() string }).String()
	convs := make([]string, streamCount)
	for i := range convs {
		code, body := do(t, "POST", base+"/api/conversations", "")
		var conv struct {
			ID string `json:"id"`
		}
		if code != 201 || json.Unmarshal([]byte(body), &conv) != nil {
			t.Fatalf("create conversation: %d %s", code, body)
		}
		convs[i] = conv.ID
	}
	closeAll := func(conns []net.Conn) {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}
	// A first round grows what is shared (the database pool, buffers),
	// not per stream.
	closeAll(openStreams(t, addr, convs, cookie))
	time.Sleep(200 * time.Millisecond)
	goroutines := runtime.NumGoroutine()
	_, p, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(p)
	conns0 := serverConns0(t, port)
	before := memInUse()

	conns := openStreams(t, addr, convs, cookie)
	if t.Failed() {
		closeAll(conns)
		t.FailNow()
	}
	during := memInUse()
	perStream := (int64(during) - int64(before)) / streamCount
	t.Logf("%d open streams: %d goroutines (%d before), %d server connections (%d before), %.1f KiB per stream (heap + stacks)",
		streamCount, runtime.NumGoroutine(), goroutines, serverConns0(t, port), conns0, float64(perStream)/1024)
	if budget := streamBudget(t); perStream > budget {
		t.Errorf("an open stream costs %d bytes, want at most %d", perStream, budget)
	}

	closeAll(conns)
	if n := settle(goroutines, runtime.NumGoroutine); n > goroutines {
		var b bytes.Buffer
		_ = pprof.Lookup("goroutine").WriteTo(&b, 1)
		t.Errorf("%d goroutines after the streams closed, %d before:\n%s", n, goroutines, b.String())
	}
	if n := settle(conns0, func() int { return serverConns0(t, port) }); n > conns0 {
		t.Errorf("%d server connections open after the streams closed, %d before", n, conns0)
	}
}
