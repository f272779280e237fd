package termchat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/toolgate/toolgate/internal/client"
)

// InboxConfig is what RunInbox needs (`toolgate inbox`).
type InboxConfig struct {
	URL   string // Toolgate's base URL
	Token string // a personal API token (tg_…)
	// Watch: once nothing waits, follow the inbox and ask each new request
	// as it comes, until Ctrl-C or the end of the input.
	Watch    bool
	In       io.Reader
	Out, Err io.Writer
	// Interrupts receives one value per Ctrl-C (SIGINT).
	Interrupts <-chan struct{}
}

// waiting is a request as the inbox lists it: the card and its source.
type waiting struct {
	approval
	ConversationID string `json:"conversation_id"`
	ResponseID     string `json:"response_id"`
	State          string `json:"state"`
	Source         struct {
		Kind           string `json:"kind"`
		ConversationID string `json:"conversation_id"`
		Title          string `json:"title"`
		Client         *struct {
			Name    string `json:"name"`
			Title   string `json:"title"`
			Version string `json:"version"`
		} `json:"client"`
	} `json:"source"`
}

// sourceLine says where w came from.
func (w waiting) sourceLine() string {
	if w.Source.Kind == "agent" {
		name := "an MCP client"
		if c := w.Source.Client; c != nil {
			name = strings.TrimSpace(strings.Join([]string{cmpOr(c.Title, c.Name), c.Version}, " "))
		}
		return fmt.Sprintf("From the agent %s (session %s)", line(name), line(w.Source.ConversationID))
	}
	title := cmpOr(w.Source.Title, "untitled")
	return fmt.Sprintf("In the chat “%s” (%s)", line(title), line(w.Source.ConversationID))
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// RunInbox lists the requests waiting for the person and asks each in
// turn, sending each decision as it is made (POST
// /api/approvals/{id}/decision); with Watch it then waits for new ones. It
// returns the process's exit code.
func RunInbox(ctx context.Context, cfg InboxConfig) int {
	if cfg.Token == "" {
		fmt.Fprintln(cfg.Err, strings.Replace(NoTokenHelp, "toolgate chat:", "toolgate inbox:", 1))
		return ExitUsage
	}
	if cfg.URL == "" {
		cfg.URL = DefaultURL
	}
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		fmt.Fprintf(cfg.Err, "toolgate inbox: --url / TOOLGATE_URL must be an http(s) URL such as %s, not %q\n", DefaultURL, cfg.URL)
		return ExitUsage
	}
	s := &session{prog: "toolgate inbox", cfg: Config{Err: cfg.Err}, c: newClient(cfg.URL, cfg.Token), out: &term{w: cfg.Out}, ints: cfg.Interrupts}
	if s.ints == nil {
		s.ints = make(chan struct{})
	}
	lines := make(chan string)
	done := make(chan struct{})
	defer close(done)
	go readLines(cfg.In, lines, done)
	s.lines = lines
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var changes <-chan struct{}
	if cfg.Watch {
		changes = s.followInbox(ctx)
	}
	return s.inbox(ctx, cfg.Watch, changes)
}

// inbox asks what waits, one request at a time, until none is left (or,
// watching, until the person stops).
func (s *session) inbox(ctx context.Context, watch bool, changes <-chan struct{}) int {
	asked := map[string]bool{} // asked once: never again in this run
	idle := false
	for {
		list, err := s.waitingList(ctx)
		if err != nil {
			s.explain(err)
			return ExitError
		}
		next, rest := nextWaiting(list, asked)
		if next == nil {
			if !watch {
				if len(asked) == 0 {
					s.out.linef("Nothing waits for you.")
				}
				return ExitOK
			}
			if !idle {
				s.out.linef("Nothing waits for you now. Watching for new requests (Ctrl-C or Ctrl-D to stop)…")
				idle = true
			}
			if !s.awaitChange(changes) {
				return ExitOK
			}
			continue
		}
		idle = false
		asked[next.ID] = true
		if !s.askWaiting(ctx, *next, rest) {
			return ExitOK
		}
	}
}

// nextWaiting is the first request of list not asked yet, and how many
// others of its response wait after it.
func nextWaiting(list []waiting, asked map[string]bool) (*waiting, int) {
	for i, w := range list {
		if asked[w.ID] {
			continue
		}
		rest := 0
		for _, o := range list[i+1:] {
			if o.ConversationID == w.ConversationID && o.ResponseID == w.ResponseID {
				rest++
			}
		}
		return &list[i], rest
	}
	return nil, 0
}

// askWaiting shows w's card, reads a decision and sends it; false when the
// person stopped (Ctrl-C, the end of the input).
func (s *session) askWaiting(ctx context.Context, w waiting, rest int) bool {
	s.drainLines()
	s.out.linef("%s", w.sourceLine())
	s.out.card(w.approval, 1, 1)
	s.out.linef("%s", w.keys())
	d, step, o := s.askOne(w.approval, rest)
	switch step {
	case stepExpired:
		return true
	case stepAbort:
		s.out.linef("No decision was sent: the request stays waiting.")
		return o != turnCancelled && o != turnQuit && o != turnFatal
	}
	raw, err := s.c.DecideWaiting(ctx, d)
	if err != nil {
		var api *client.Error
		if errors.As(err, &api) && api.Status == 409 {
			s.out.linef("Not recorded: %s", line(api.Message))
			return true
		}
		return s.explain(err) != turnFatal
	}
	var got waiting
	_ = json.Unmarshal(raw, &got)
	s.out.linef("%s", decidedLine(got))
	return true
}

// decidedLine says what a decision from the inbox did.
func decidedLine(w waiting) string {
	what := fmt.Sprintf("%s on %s", line(w.ToolName), line(w.ServerLabel))
	switch {
	case w.State == "approved" && w.Source.Kind == "agent":
		return "Approved " + what + ": the agent's call runs now."
	case w.State == "approved":
		return "Approved " + what + ": the chat goes on in the background (open it to follow)."
	case w.Source.Kind == "agent":
		return "Denied " + what + ": the agent is told why."
	default:
		return "Denied " + what + "."
	}
}

// waitingList reads the inbox.
func (s *session) waitingList(ctx context.Context) ([]waiting, error) {
	raws, err := s.c.Inbox(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]waiting, 0, len(raws))
	for _, raw := range raws {
		var w waiting
		if err := json.Unmarshal(raw, &w); err != nil {
			return nil, fmt.Errorf("GET /api/approvals: a request: %w", err)
		}
		out = append(out, w)
	}
	return out, nil
}

// followInbox follows the inbox stream in the background: the channel
// receives when the set waiting changed, and is closed when the stream
// cannot go on (it was refused, or the server stayed away).
func (s *session) followInbox(ctx context.Context) <-chan struct{} {
	out := make(chan struct{}, 1)
	go func() {
		defer close(out)
		for ev, err := range s.c.FollowInbox(ctx) {
			if err != nil {
				if ctx.Err() == nil { // from this goroutine: only to Err, never through the terminal's state
					fmt.Fprintf(s.cfg.Err, "toolgate inbox: following the inbox stopped: %s\n", line(err.Error()))
				}
				return
			}
			if ev.Name != "approvals.changed" {
				continue
			}
			select {
			case out <- struct{}{}:
			default: // one pending change is enough: the list is read again
			}
		}
	}()
	return out
}

// awaitChange waits, while nothing waits, for the inbox to change; false
// when the person stopped or the stream ended. Lines typed meanwhile are
// not decisions: they are dropped.
func (s *session) awaitChange(changes <-chan struct{}) bool {
	for {
		select {
		case _, ok := <-changes:
			return ok
		case <-s.ints:
			s.out.write("\n")
			return false
		case _, ok := <-s.lines:
			if !ok {
				return false
			}
		}
	}
}
