package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// mock is the Responses upstream: a fixed time to first event, then one
// text delta every gap. Each delta's text is "<sent>.<arrived> " (Unix
// nanoseconds of this process's clock), so a client in this process can
// tell each event's delay and how long the request took to reach the mock.
// A message "bench approve" is answered with an mcp_approval_request; a
// request carrying an mcp_approval_response records when it arrived.
type mock struct {
	ttfe, gap time.Duration

	mu        sync.Mutex
	followUps map[string]chan time.Time
}

func newMock(ttfe, gap time.Duration) *mock {
	return &mock{ttfe: ttfe, gap: gap, followUps: map[string]chan time.Time{}}
}

// expect returns the channel that gets the arrival time of the follow-up
// answering approval request id.
func (m *mock) expect(id string) chan time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	ch, ok := m.followUps[id]
	if !ok {
		ch = make(chan time.Time, 1)
		m.followUps[id] = ch
	}
	return ch
}

// listener is one of the mock's addresses (one per variant), counting the
// TCP connections it accepts, those it accepts while another connection
// of the same client stands idle (kept alive and not serving a request: a
// connection the client could have reused), and the requests it serves.
type listener struct {
	URL      string
	conns    atomic.Int64
	needless atomic.Int64
	requests atomic.Int64
	srv      *http.Server
	mu       sync.Mutex
	idle     map[net.Conn]bool
}

// connState follows the connections: which ones stand idle, and whether a
// new one came while one did.
func (l *listener) connState(c net.Conn, s http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch s {
	case http.StateNew:
		l.conns.Add(1)
		if len(l.idle) > 0 {
			l.needless.Add(1)
		}
	case http.StateIdle:
		l.idle[c] = true
	default:
		delete(l.idle, c)
	}
}

func (m *mock) listen() (*listener, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("mock listen: %w", err)
	}
	l := &listener{URL: "http://" + ln.Addr().String(), idle: map[net.Conn]bool{}}
	l.srv = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			l.requests.Add(1)
			m.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: 10 * time.Second,
		ConnState:         l.connState,
	}
	go func() { _ = l.srv.Serve(ln) }()
	return l, nil
}

var seq atomic.Int64

func (m *mock) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	arrived := time.Now()
	body, _ := io.ReadAll(r.Body)
	if r.Method != http.MethodPost {
		http.Error(w, "POST /v1/responses only", http.StatusNotFound)
		return
	}
	if id, ok := field(body, "approval_request_id"); ok && bytes.Contains(body, []byte(`"mcp_approval_response"`)) {
		m.expect(id) <- arrived
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	rc := http.NewResponseController(w)
	s := &sse{w: w, rc: rc, id: fmt.Sprintf("resp_bench%016d", seq.Add(1))}

	timer := time.NewTimer(m.ttfe)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-r.Context().Done():
		return
	}
	s.response("response.created", "in_progress", "[]")
	s.response("response.in_progress", "in_progress", "[]")
	if bytes.Contains(body, []byte("bench approve")) && !bytes.Contains(body, []byte(`"mcp_approval_response"`)) {
		label, _ := field(body, "server_label")
		item := fmt.Sprintf(`{"id":"mcpr_%s","type":"mcp_approval_request","arguments":"{\"city\":\"Oslo\"}","name":"delete_forecast","server_label":%q}`, s.id[5:], label)
		s.event("response.output_item.added", `"output_index":0,"item":`+item)
		s.event("response.output_item.done", `"output_index":0,"item":`+item)
		s.response("response.completed", "completed", "["+item+"]")
		return
	}
	n := 3
	if v, ok := after(body, "deltas="); ok {
		n = v
	}
	msg := "msg_" + s.id[5:]
	s.event("response.output_item.added", `"output_index":0,"item":{"id":"`+msg+`","type":"message","status":"in_progress","content":[],"role":"assistant"}`)
	s.event("response.content_part.added", `"item_id":"`+msg+`","output_index":0,"content_index":0,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":""}`)
	var text bytes.Buffer
	tick := time.NewTicker(m.gap)
	defer tick.Stop()
	for i := range n {
		if i > 0 {
			select {
			case <-tick.C:
			case <-r.Context().Done():
				return
			}
		}
		d := strconv.FormatInt(time.Now().UnixNano(), 10) + "." + strconv.FormatInt(arrived.UnixNano(), 10) + " "
		text.WriteString(d)
		s.event("response.output_text.delta", `"item_id":"`+msg+`","output_index":0,"content_index":0,"delta":"`+d+`","logprobs":[],"obfuscation":""`)
	}
	s.event("response.output_text.done", `"item_id":"`+msg+`","output_index":0,"content_index":0,"text":"`+text.String()+`","logprobs":[]`)
	part := `{"type":"output_text","annotations":[],"logprobs":[],"text":"` + text.String() + `"}`
	s.event("response.content_part.done", `"item_id":"`+msg+`","output_index":0,"content_index":0,"part":`+part)
	item := `{"id":"` + msg + `","type":"message","status":"completed","content":[` + part + `],"role":"assistant"}`
	s.event("response.output_item.done", `"output_index":0,"item":`+item)
	s.response("response.completed", "completed", "["+item+"]")
}

// sse writes one event per call and flushes it.
type sse struct {
	w   io.Writer
	rc  *http.ResponseController
	id  string
	seq int
}

func (s *sse) event(typ, rest string) {
	fmt.Fprintf(s.w, "event: %s\ndata: {\"type\":%q,\"sequence_number\":%d,%s}\n\n", typ, typ, s.seq, rest)
	s.seq++
	_ = s.rc.Flush()
}

func (s *sse) response(typ, status, output string) {
	usage := "null"
	if status == "completed" {
		usage = `{"input_tokens":10,"input_tokens_details":{"cached_tokens":0},"output_tokens":10,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":20}`
	}
	s.event(typ, `"response":{"id":"`+s.id+`","object":"response","created_at":1757299965,"status":"`+status+`","background":false,"error":null,"incomplete_details":null,"instructions":null,"max_output_tokens":null,"max_tool_calls":null,"model":"gpt-5-mini","output":`+output+`,"parallel_tool_calls":true,"previous_response_id":null,"prompt_cache_key":null,"reasoning":{"effort":null,"summary":null},"safety_identifier":null,"service_tier":"auto","store":true,"temperature":1.0,"text":{"format":{"type":"text"},"verbosity":"medium"},"tool_choice":"auto","tools":[],"top_logprobs":0,"top_p":1.0,"truncation":"disabled","usage":`+usage+`,"user":null,"metadata":{}}`)
}

// field is the first string value of "key" in a JSON body.
func field(body []byte, key string) (string, bool) {
	_, rest, ok := bytes.Cut(body, []byte(`"`+key+`":"`))
	if !ok {
		return "", false
	}
	v, _, ok := bytes.Cut(rest, []byte(`"`))
	return string(v), ok
}

// after is the whole number after marker in body.
func after(body []byte, marker string) (int, bool) {
	_, rest, ok := bytes.Cut(body, []byte(marker))
	if !ok {
		return 0, false
	}
	i := 0
	for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
		i++
	}
	v, err := strconv.Atoi(string(rest[:i]))
	return v, err == nil
}
