package emulator

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"
)

// Config configures an emulator.
type Config struct {
	// Behavior is applied to every request, refined key by key by the
	// X-Emulator-Behavior header and by an [emulator: ...] directive in the
	// user's message. See ParseBehavior for the syntax.
	Behavior string
	// APIKey, when set, must arrive as "Authorization: Bearer <APIKey>";
	// when empty any key (or none) is accepted.
	APIKey string
	// MCPTimeout bounds each MCP exchange (connect, tools/list, tools/call).
	// Default 30s.
	MCPTimeout time.Duration
	// MaxStored is how many responses are kept for previous_response_id and
	// GET; the oldest are dropped first. Default 10000.
	MaxStored int
	// StateFile, when set, keeps the stored responses across restarts: it is
	// read by New and rewritten atomically (a temporary file, then a
	// rename) after each stored response. A missing file is an empty state;
	// a file that is not valid JSON of this version is ignored with a
	// warning and replaced on the next write.
	StateFile string
	// StateKeep is how many of the newest responses the state file keeps.
	// Default 1000.
	StateKeep int
	// Logger gets one line per request. Default: discard.
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Server is an emulated OpenAI Responses API.
type Server struct {
	cfg      Config
	defaults Behavior
	store    *store
	faults   faultCounter
	log      *slog.Logger
}

// New checks cfg and returns an emulator.
func New(cfg Config) (*Server, error) {
	def, err := ParseBehavior(cfg.Behavior)
	if err != nil {
		return nil, fmt.Errorf("emulator behavior: %w", err)
	}
	if cfg.MCPTimeout <= 0 {
		cfg.MCPTimeout = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.StateKeep <= 0 {
		cfg.StateKeep = defaultStateKeep
	}
	s := &Server{cfg: cfg, defaults: def, store: newStore(cfg.MaxStored), log: cfg.Logger}
	if cfg.StateFile != "" {
		if err := s.store.load(cfg.StateFile, s.log); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (s *Server) now() time.Time { return s.cfg.Now() }

// Handler serves POST /v1/responses, GET /v1/responses/{id} and GET /healthz.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/responses", s.authed(s.create))
	mux.HandleFunc("GET /v1/responses/{id}", s.authed(s.get))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"status":"ok"}`+"\n")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeAPIError(w, &apiError{Status: http.StatusNotFound, Type: "invalid_request_error",
			Message: fmt.Sprintf("Invalid URL (%s %s): the Toolgate emulator serves POST /v1/responses and GET /v1/responses/{id}.", r.Method, r.URL.Path)})
	})
	return mux
}

func (s *Server) authed(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Request-Id", newID("req_")[:36])
		if s.cfg.APIKey == "" {
			next(w, r)
			return
		}
		auth := r.Header.Get("Authorization")
		if auth == "" {
			writeAPIError(w, &apiError{Status: http.StatusUnauthorized, Type: "invalid_request_error",
				Message: "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY)."})
			return
		}
		if strings.TrimPrefix(auth, "Bearer ") != s.cfg.APIKey {
			writeAPIError(w, statusError(http.StatusUnauthorized, ""))
			return
		}
		next(w, r)
	}
}

func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	st, ok := s.store.get(id)
	if !ok {
		writeAPIError(w, &apiError{Status: http.StatusNotFound, Type: "invalid_request_error", Param: strp("response_id"),
			Message: fmt.Sprintf("No response found with id '%s'.", id)})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(st.resp, '\n'))
}

const maxBody = 16 << 20

func (s *Server) create(w http.ResponseWriter, hr *http.Request) {
	start := time.Now()
	status, outcome := http.StatusOK, "completed"
	var r *request
	var beh Behavior
	defer func() {
		attrs := []any{slog.Int("status", status), slog.String("outcome", outcome), slog.Duration("duration", time.Since(start))}
		if r != nil {
			attrs = append(attrs, slog.String("model", r.Model), slog.Bool("stream", r.Stream), slog.Int("tools", len(r.Tools)))
		}
		if beh.spec != "" {
			attrs = append(attrs, slog.String("behavior", beh.spec))
		}
		s.log.Info("POST /v1/responses", attrs...)
	}()
	fail := func(e *apiError) {
		status, outcome = e.Status, "error"
		writeAPIError(w, e)
	}

	body, err := io.ReadAll(io.LimitReader(hr.Body, maxBody+1))
	if err != nil {
		fail(invalid("", "", "Could not read the request body: %v", err))
		return
	}
	if len(body) > maxBody {
		fail(&apiError{Status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error", Message: "The request body is too large."})
		return
	}
	r, ae := parseRequest(body)
	if ae != nil {
		fail(ae)
		return
	}
	beh, ae = s.behavior(hr, r)
	if ae != nil {
		fail(ae)
		return
	}
	res, ae := s.resolve(r)
	if ae != nil {
		fail(ae)
		return
	}
	if beh.Status != 0 {
		sleepCtx(hr.Context(), beh.FirstEventDelay)
		if beh.Quota {
			fail(quotaError())
		} else {
			fail(statusError(beh.Status, beh.RetryAfter))
		}
		return
	}

	// The turn runs on a context the client cannot cancel: like upstream, a
	// response whose client left still runs its tools and is stored.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(hr.Context()), 10*time.Minute)
	defer cancel()
	t := &turn{ctx: ctx, s: s, r: r, res: res, beh: beh, resp: s.newResponse(r), conns: map[string]*mcpConn{}}
	defer t.close()
	t.em = &emitter{w: w, rc: http.NewResponseController(w), ctx: hr.Context(), beh: beh, stream: r.Stream}
	if ae := t.listAll(); ae != nil {
		fail(ae)
		return
	}
	if !r.Stream {
		t.em.sleep(beh.FirstEventDelay + beh.Stall)
	}
	var final []byte
	t.persist = func() {
		if final != nil {
			return
		}
		billing := t.resp.Billing
		t.resp.Billing = &Billing{Payer: "developer"} // in bodies, not in events
		final, _ = json.Marshal(t.resp)
		t.resp.Billing = billing
		if r.Store {
			s.store.put(t.resp.ID, &stored{resp: final, prev: r.PreviousResponseID, input: res.input, output: t.out})
			if s.cfg.StateFile != "" {
				if err := s.store.save(s.cfg.StateFile, s.cfg.StateKeep); err != nil {
					s.log.Warn("could not write the emulator state file; stored responses will not survive a restart", "file", s.cfg.StateFile, "error", err.Error())
				}
			}
		}
	}
	t.run()
	t.persist() // a turn that ended without a terminal event of its own
	t.resp.Billing = &Billing{Payer: "developer"}
	outcome = t.resp.Status
	switch {
	case r.Stream && t.em.cut:
		outcome = "cut"
		panic(http.ErrAbortHandler) // drop the connection: no terminal event, no clean end
	case r.Stream:
		if !t.em.started { // nothing was sent (a fault at event 0 ended it): still answer
			t.em.write(evError{Type: "error", Seq: 0, Code: "server_error", Message: "The stream ended before any event."})
		}
	case beh.ErrorEv != "":
		fail(statusError(http.StatusInternalServerError, ""))
	case beh.Cut:
		outcome = "cut"
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", fmt.Sprint(len(final)+1))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(final[:len(final)/2])
		_ = http.NewResponseController(w).Flush()
		panic(http.ErrAbortHandler)
	default:
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(append(final, '\n'))
	}
}

// behavior combines the binary's defaults, the request header and a
// directive in the user's message, then decides whether the faults apply to
// this request (times=N).
func (s *Server) behavior(hr *http.Request, r *request) (Behavior, *apiError) {
	b := s.defaults
	if h := hr.Header.Get(BehaviorHeader); h != "" {
		hb, err := ParseBehavior(h)
		if err != nil {
			return Behavior{}, invalid("", "", "Invalid %s header: %v", BehaviorHeader, err)
		}
		b = b.merge(hb)
	}
	for i := len(r.Input) - 1; i >= 0; i-- {
		it := r.Input[i]
		if it.Type != "message" || it.Role != "user" {
			continue
		}
		for _, m := range directiveRE.FindAllStringSubmatch(it.Text, -1) {
			db, err := ParseBehavior(m[1])
			if err != nil {
				return Behavior{}, invalid(it.Param, "", "Invalid [emulator: ...] directive in the message: %v", err)
			}
			b = b.merge(db)
		}
		break
	}
	if b.HasFault() && !s.faults.take(b) {
		b = b.withoutFaults()
	}
	return b, nil
}

func sleepCtx(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
