package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/testdb"
)

// slowUpstreamEnv makes TestHelperSlowUpstream serve.
const slowUpstreamEnv = "TOOLGATE_TEST_SLOW_UPSTREAM"

// TestHelperSlowUpstream is not a test of its own: started by
// startSlowUpstream as a separate process (so that its memory is not
// counted as Toolgate's), it serves POST /v1/responses as a Responses
// upstream that streams a message's first text delta (its text says when
// the request arrived, in Unix nanoseconds), then one every 200 ms until
// POST /release, and then completes; POST /release also
// starts a new round (requests after it are held again). A message saying
// "answer at once" completes after its first delta. It prints its address
// and serves until its stdin closes.
func TestHelperSlowUpstream(t *testing.T) {
	if os.Getenv(slowUpstreamEnv) != "1" {
		t.Skip("the slow upstream of TestRun_OpenPOSTStreams…, run in a process of its own")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	release := make(chan struct{})
	var seq atomic.Int64
	closed := make(chan struct{})
	close(closed)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /release", func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		close(release)
		release = make(chan struct{})
		mu.Unlock()
	})
	mux.HandleFunc("POST /v1/responses", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		held := release
		mu.Unlock()
		arrived := time.Now().UnixNano()
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte("answer at once")) {
			held = closed
		}
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		n := seq.Add(1)
		id, msg := fmt.Sprintf("resp_slow%d", n), fmt.Sprintf("msg_slow%d", n)
		seqNo := 0
		event := func(typ, fields string) {
			fmt.Fprintf(w, "event: %s\ndata: {\"type\":%q,\"sequence_number\":%d,%s}\n\n", typ, typ, seqNo, fields)
			seqNo++
		}
		response := func(typ, status, output string) {
			event(typ, fmt.Sprintf(`"response":{"id":%q,"object":"response","status":%q,"model":"gpt-5","output":%s,"tools":[]}`, id, status, output))
		}
		delta := func() {
			event("response.output_text.delta", fmt.Sprintf(`"item_id":%q,"output_index":0,"content_index":0,"delta":"arrived %d ","logprobs":[]`, msg, arrived))
			_ = rc.Flush()
		}
		response("response.created", "in_progress", "[]")
		event("response.output_item.added", fmt.Sprintf(`"output_index":0,"item":{"id":%q,"type":"message","status":"in_progress","content":[],"role":"assistant"}`, msg))
		delta()
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for done := false; !done; {
			select {
			case <-tick.C:
				delta()
			case <-held:
				done = true
			case <-r.Context().Done():
				return
			}
		}
		item := fmt.Sprintf(`{"id":%q,"type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"done","annotations":[]}]}`, msg)
		event("response.output_item.done", `"output_index":0,"item":`+item)
		response("response.completed", "completed", "["+item+"]")
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	fmt.Printf("listening on %s\n", ln.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = srv.Close()
}

// startSlowUpstream starts TestHelperSlowUpstream in a process of its own
// and returns its base URL.
func startSlowUpstream(t testing.TB) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperSlowUpstream$")
	cmd.Env = append(os.Environ(), slowUpstreamEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if err != nil || !ok {
		t.Fatalf("slow upstream: %q %v", line, err)
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return "http://" + addr
}

// postStreams starts a message turn (POST /api/responses) per stream over
// raw TCP (a client costing next to nothing, so the memory measured is the
// server's) and waits for each stream's first text delta.
func postStreams(t *testing.T, addr, cookie string, n int) []*postStream {
	t.Helper()
	readers := make([]*postStream, n)
	var wg sync.WaitGroup
	// At most 20 turns starting at once: one user's turn starts take the
	// user's lock (per-user limits) one after another, and under -race on
	// a loaded machine 200 queued at once outlasted the read deadline.
	starting := make(chan struct{}, 20)
	for i := range n {
		wg.Go(func() {
			starting <- struct{}{}
			defer func() { <-starting }()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Errorf("dial: %v", err)
				return
			}
			body := fmt.Sprintf(`{"input":"stream %d"}`, i)
			fmt.Fprintf(c, "POST /api/responses HTTP/1.1\r\nHost: %s\r\nCookie: %s\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nContent-Length: %d\r\n\r\n%s",
				addr, cookie, len(body), body)
			_ = c.SetReadDeadline(time.Now().Add(60 * time.Second))
			r := bufio.NewReaderSize(c, 512)
			status, err := r.ReadString('\n')
			if err != nil || !strings.Contains(status, " 200 ") {
				t.Errorf("stream %d: %q %v", i, status, err)
				c.Close()
				return
			}
			if err := readUntil(r, "event: text.delta"); err != nil {
				t.Errorf("stream %d: no text delta: %v", i, err)
				c.Close()
				return
			}
			readers[i] = &postStream{c: c, r: r}
		})
	}
	wg.Wait()
	return readers
}

// postStream is a message turn's stream, read up to its first delta.
type postStream struct {
	c net.Conn
	r *bufio.Reader
}

func readUntil(r *bufio.Reader, prefix string) error {
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return err
		}
		if strings.HasPrefix(line, prefix) {
			return nil
		}
	}
}

// finish reads each stream to its turn's end (event: completed) and closes
// it.
func finish(t *testing.T, readers []*postStream) {
	t.Helper()
	var wg sync.WaitGroup
	for i, s := range readers {
		if s == nil {
			continue
		}
		wg.Go(func() {
			if err := readUntil(s.r, "event: completed"); err != nil {
				t.Errorf("stream %d did not complete: %v", i, err)
			}
		})
	}
	wg.Wait()
}

func closeReaders(readers []*postStream) {
	for _, s := range readers {
		if s != nil {
			s.c.Close()
		}
	}
}

// TestRun_OpenPOSTStreamsCostLittleAndLeaveNothingBehind holds
// postStreamCount message turns streaming (each has relayed a first text
// delta; the upstream sends one every 200 ms) against the whole program,
// measures what they cost (heap and goroutine stacks, per stream: the
// handler and its SSE writer, the running turn, the upstream response and
// its reader; the upstream runs in a process of its own), lets them
// complete and checks that the goroutines and connections return to what
// they were before. A leak and memory check, not a speed check.
func TestRun_OpenPOSTStreamsCostLittleAndLeaveNothingBehind(t *testing.T) {
	const postStreamCount = 200
	profile := os.Getenv("TOOLGATE_TEST_HEAP_PROFILE") // where to write heap profiles before and during (debugging)
	if profile != "" {
		runtime.MemProfileRate = 512
	}
	upstream := startSlowUpstream(t)
	base, _, _ := start(t, map[string]string{"DATABASE_URL": testdb.URL(t), "OFFLINE_DEMO": "false", "SSE_HEARTBEAT": "15s",
		"OPENAI_BASE_URL": upstream + "/v1/", "USER_MAX_CONCURRENT_TURNS": "1000", "USER_MESSAGES_PER_MINUTE": "10000"})
	addr := strings.TrimPrefix(base, "http://")
	c, ok := sessions.Load(base)
	if !ok {
		t.Fatal("no session")
	}
	cookie := c.(interface{ String() string }).String()
	release := func() {
		res, err := http.Post(upstream+"/release", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
	}
	round := func() []*postStream {
		readers := postStreams(t, addr, cookie, postStreamCount)
		if t.Failed() {
			release()
			closeReaders(readers)
			t.FailNow()
		}
		return readers
	}
	// A first round grows what is shared (the database pool, the upstream
	// connections kept alive, buffers), not per stream.
	readers := round()
	release()
	finish(t, readers)
	closeReaders(readers)
	time.Sleep(300 * time.Millisecond)

	_, p, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(p)
	goroutines := runtime.NumGoroutine()
	conns0 := serverConns0(t, port)
	before := memInUse()
	var ms0 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	if profile != "" {
		writeHeapProfile(t, profile+".before")
	}

	readers = round()
	during := memInUse()
	var ms1 runtime.MemStats
	runtime.ReadMemStats(&ms1)
	start := []metrics.Sample{{Name: "/gc/stack/starting-size:bytes"}}
	metrics.Read(start)
	t.Logf("per stream: heap %.1f KiB, stacks %.1f KiB (goroutines start with %d bytes)", float64(int64(ms1.HeapAlloc)-int64(ms0.HeapAlloc))/1024/postStreamCount,
		float64(int64(ms1.StackInuse)-int64(ms0.StackInuse))/1024/postStreamCount, start[0].Value.Uint64())
	perStream := (int64(during) - int64(before)) / postStreamCount
	open := runtime.NumGoroutine()
	t.Logf("%d streaming turns: %d goroutines (%d before), %d server connections (%d before), %.1f KiB per stream (heap + stacks)",
		postStreamCount, open, goroutines, serverConns0(t, port), conns0, float64(perStream)/1024)
	if profile != "" {
		writeHeapProfile(t, profile+".during")
		var b bytes.Buffer
		_ = pprof.Lookup("goroutine").WriteTo(&b, 1)
		_ = os.WriteFile(profile+".goroutines", b.Bytes(), 0o644)
	}
	if budget := streamBudget(t); perStream > budget {
		t.Errorf("a streaming turn costs %d bytes, want at most %d", perStream, budget)
	}
	// Per stream: the connection's goroutine, which runs the turn, and its
	// background read (the upstream connections' two are kept alive from
	// the first round). A turn on a goroutine of its own is a third.
	if n := open - goroutines; n > 2*postStreamCount+postStreamCount/20 {
		t.Errorf("%d goroutines more while %d turns stream, want at most 2 per stream", n, postStreamCount)
	}

	release()
	finish(t, readers)
	closeReaders(readers)
	if n := settle(goroutines, runtime.NumGoroutine); n > goroutines {
		var b bytes.Buffer
		_ = pprof.Lookup("goroutine").WriteTo(&b, 1)
		t.Errorf("%d goroutines after the turns ended, %d before:\n%s", n, goroutines, b.String())
	}
	if n := settle(conns0, func() int { return serverConns0(t, port) }); n > conns0 {
		t.Errorf("%d server connections open after the turns ended, %d before", n, conns0)
	}
}

func writeHeapProfile(t *testing.T, path string) {
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		t.Fatal(err)
	}
}
