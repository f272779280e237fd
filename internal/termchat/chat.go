// Package termchat is Toolgate's terminal client (`toolgate chat`): it
// chats with a running Toolgate over its HTTP API with a personal API token,
// streams the answers, and asks at the terminal when a tool needs approval.
//
// It speaks the API through internal/client: the JSON routes, and the
// server-sent events (docs/sse-events.md) read by the client's one reader.
package termchat

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/toolgate/toolgate/internal/client"
)

// Exit codes of Run.
const (
	ExitOK    = 0
	ExitError = 1
	ExitUsage = 2
)

// DefaultURL is where Toolgate listens by default.
const DefaultURL = "http://127.0.0.1:8080"

// maxReason is the longest reason the API takes (characters).
const maxReason = 2000

// Config is what Run needs; the command fills it from flags, environment
// and the process's terminal.
type Config struct {
	URL          string // Toolgate's base URL
	Token        string // a personal API token (tg_…)
	Conversation string // continue this conversation; empty: a new one
	Message      string // one-shot: send this, answer its approvals, exit
	In           io.Reader
	Out, Err     io.Writer
	// Interrupts receives one value per Ctrl-C (SIGINT).
	Interrupts <-chan struct{}
}

// NoTokenHelp is said when no token is given.
const NoTokenHelp = `toolgate chat: no API token. Give a personal API token (tg_…) with --token or TOOLGATE_TOKEN.
Create one at the server's terminal:   toolgate token create EMAIL
or in the web app: user menu → API tokens (the Tokens page).`

// Run runs the terminal client until the person quits (Ctrl-D, or Ctrl-C at
// the prompt), or, with a one-shot Message, until that turn is done. It
// returns the process's exit code.
func Run(ctx context.Context, cfg Config) int {
	if cfg.Token == "" {
		fmt.Fprintln(cfg.Err, NoTokenHelp)
		return ExitUsage
	}
	if cfg.URL == "" {
		cfg.URL = DefaultURL
	}
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		fmt.Fprintf(cfg.Err, "toolgate chat: --url / TOOLGATE_URL must be an http(s) URL such as %s, not %q\n", DefaultURL, cfg.URL)
		return ExitUsage
	}
	s := &session{cfg: cfg, c: newClient(cfg.URL, cfg.Token), out: &term{w: cfg.Out},
		conv: cfg.Conversation, ints: cfg.Interrupts}
	if s.ints == nil {
		s.ints = make(chan struct{})
	}
	lines := make(chan string)
	done := make(chan struct{})
	defer close(done)
	go readLines(cfg.In, lines, done)
	s.lines = lines
	return s.run(ctx)
}

// readLines sends each line of in (without its end) until in ends; then it
// closes lines.
func readLines(in io.Reader, lines chan<- string, done <-chan struct{}) {
	defer close(lines)
	r := bufio.NewReader(in)
	for {
		l, err := r.ReadString('\n')
		if l != "" || err == nil {
			select {
			case lines <- strings.TrimRight(l, "\r\n"):
			case <-done:
				return
			}
		}
		if err != nil {
			return
		}
	}
}

type session struct {
	prog string // what errors start with: "toolgate chat" unless set
	cfg  Config
	c    *client.Client
	out  *term
	conv string
	// announced is the new conversation whose id was shown.
	announced string
	lines     <-chan string
	ints      <-chan struct{}
}

// outcome is how a turn, or the questions after it, ended.
type outcome int

const (
	turnDone      outcome = iota // completed
	turnFailed                   // failed or error: said on the terminal
	turnCancelled                // Ctrl-C: said on the terminal
	turnQuit                     // the input ended while asking
	turnFatal                    // the client cannot go on (token refused)
	turnExpired                  // the approval request expired while asked
)

func (s *session) errorf(format string, args ...any) {
	s.out.newline()
	fmt.Fprintf(s.cfg.Err, cmpOr(s.prog, "toolgate chat")+": "+format+"\n", args...)
}

// explain says an API or network error in a way that says what to do.
func (s *session) explain(err error) outcome {
	var api *client.Error
	var unreachable *client.UnreachableError
	switch {
	case errors.As(err, &api) && api.Status == http.StatusUnauthorized:
		s.errorf("the token was refused: it is invalid, revoked or expired (%s).\n"+
			"Create a new one with `toolgate token create EMAIL` or in the web app (user menu → API tokens).", line(api.Message))
		return turnFatal
	case errors.As(err, &api):
		s.errorf("%s", line(api.Error()))
		return turnFailed
	case errors.As(err, &unreachable):
		s.errorf("%s (is it running? set --url or TOOLGATE_URL)", line(unreachable.Error()))
		return turnFailed // at the prompt, sending again may work
	}
	s.errorf("%s", line(err.Error()))
	return turnFailed
}

func (s *session) run(ctx context.Context) int {
	who, err := s.c.Me(ctx)
	if err != nil {
		s.explain(err)
		return ExitError
	}
	var pending []approval
	if s.conv != "" {
		st, err := conversation(ctx, s.c, s.conv)
		if err != nil {
			s.explain(err)
			return ExitError
		}
		pending = st.PendingApprovals
		if st.Conversation.Streaming {
			s.out.linef("A turn is still running in this conversation; a message sent before it ends is refused (409 turn_in_progress).")
		}
	}
	if s.cfg.Message != "" {
		switch s.send(ctx, s.cfg.Message) {
		case turnDone:
			return ExitOK
		default:
			return ExitError
		}
	}

	s.out.linef("Toolgate at %s, signed in as %s.", line(s.cfg.URL), line(who.Email))
	if s.conv != "" {
		s.out.linef("Continuing conversation %s.", line(s.conv))
	}
	s.out.linef("Enter sends. Ctrl-C cancels a running turn; Ctrl-C or Ctrl-D at the prompt quits.")
	if len(pending) > 0 {
		s.out.linef("This conversation has %d approval request(s) waiting:", len(pending))
		if s.decide(ctx, pending) == turnFatal {
			return ExitError
		}
	}
	for {
		l, o := s.readLine("you> ")
		if o != turnDone {
			return ExitOK // Ctrl-C or Ctrl-D at the prompt
		}
		if strings.TrimSpace(l) == "" {
			continue
		}
		if s.send(ctx, l) == turnFatal {
			return ExitError
		}
	}
}

// send sends a message and sees its turn through, approvals included.
func (s *session) send(ctx context.Context, msg string) outcome {
	res := s.stream(ctx, func(ctx context.Context) (*client.Stream, error) {
		return s.c.Send(ctx, client.MessageRequest{Input: msg, ConversationID: s.conv})
	})
	if res.outcome != turnDone || len(res.pending) == 0 {
		return res.outcome
	}
	return s.decide(ctx, res.pending)
}

// decide asks about each approval request, sends the decisions together, and
// does the same for any request the follow-up asks, until none is left.
func (s *session) decide(ctx context.Context, pending []approval) outcome {
	for len(pending) > 0 {
		ds, o := s.ask(pending)
		if o != turnDone {
			return o
		}
		if len(ds) == 0 {
			return turnDone // every request expired while asked
		}
		res := s.stream(ctx, func(ctx context.Context) (*client.Stream, error) {
			return s.c.Decide(ctx, client.DecisionsRequest{ConversationID: s.conv, Decisions: ds})
		})
		if res.outcome != turnDone {
			return res.outcome
		}
		pending = res.pending
	}
	return turnDone
}
