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
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

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
	fmt.Fprintf(s.cfg.Err, "toolgate chat: "+format+"\n", args...)
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

// ask shows each request and reads a decision for it. Nothing is sent
// until all are decided; a request that expires while it is asked is left
// out (the server expired it: nobody decided in time).
func (s *session) ask(pending []approval) ([]client.Decision, outcome) {
	var out []client.Decision
	for i, a := range pending {
		// Lines typed while the answer streamed were not meant for this card.
		s.drainLines()
		s.out.card(a, i+1, len(pending))
		s.out.batchLines(pending[i+1:])
		s.out.linef("%s", a.keys())
		for {
			l, o := s.readDecisionLine(a)
			if o == turnExpired {
				break
			}
			if o != turnDone {
				return nil, s.stopAsking(o, len(pending))
			}
			d := client.Decision{ApprovalRequestID: a.ID}
			key := strings.ToLower(strings.TrimSpace(l))
			if a.locked() && (key == "c" || key == "h" || key == "a" || key == "b") {
				s.out.linef("An admin locked this tool at Ask: it can only be approved once or denied.")
				key = ""
			} else if key != "" && strings.Contains("ychanbres", key) && len(key) == 1 && !a.offers(key) {
				s.out.linef("An admin limited the choices for this tool: %s is not one of them.", key)
				key = ""
			}
			switch key {
			case "y":
				d.Approve = true
			case "c":
				d.Approve, d.Scope = true, "conversation"
			case "h":
				d.Approve, d.Scope = true, "hour"
			case "a":
				d.Approve, d.Remember = true, true
			case "n":
			case "b":
				d.Remember = true
			case "r":
				reason, o := s.readReason()
				if o != turnDone {
					return nil, s.stopAsking(o, len(pending))
				}
				d.Reason = reason
			case "e":
				corr, reason, o := s.readCorrection(a)
				if o != turnDone {
					return nil, s.stopAsking(o, len(pending))
				}
				d.Correction, d.Reason = corr, reason
			case "s":
				s.out.linef("A reason for the model (optional; Enter for none):")
				reason, o := s.readReason()
				if o != turnDone {
					return nil, s.stopAsking(o, len(pending))
				}
				d.Reason, d.Stop = reason, true
				// The server denies the rest: nothing more to ask.
				s.out.linef("%s", stopLine(len(pending)-i-1))
				return append(out, d), turnDone
			default:
				s.out.linef("Please type one of %s, then Enter.", a.keyList())
				s.out.linef("%s", a.keys())
				continue
			}
			out = append(out, d)
			break
		}
	}
	return out, turnDone
}

// reminders are the times left at which the client says how long a
// request has left, while it waits for a decision.
var reminders = []time.Duration{5 * time.Minute, time.Minute, 10 * time.Second}

// readDecisionLine reads the decision key for a, counting down to its
// expiry as the card does: it says how long is left at each reminder, and
// turnExpired once the request expired.
func (s *session) readDecisionLine(a approval) (string, outcome) {
	prompt := "> "
	for {
		var tick <-chan time.Time
		if a.ExpiresAt != nil {
			left := time.Until(*a.ExpiresAt)
			if left <= 0 {
				s.out.linef("Expired: nobody decided in time. %s on %s was not run; it is left out of your decisions.", line(a.ToolName), line(a.ServerLabel))
				return "", turnExpired
			}
			next := left // the expiry itself
			for _, r := range reminders {
				if left > r {
					next = left - r
					break
				}
			}
			tick = time.After(next)
		}
		s.out.prompt(prompt)
		select {
		case <-s.ints:
			s.out.write("\n")
			return "", turnCancelled
		case l, ok := <-s.lines:
			if !ok {
				s.out.write("\n")
				return "", turnQuit
			}
			s.out.midLine = false // the terminal echoed the line and its Enter
			return l, turnDone
		case <-tick:
			if left := time.Until(*a.ExpiresAt); left > 0 {
				s.out.write("\n")
				s.out.linef("%s left to decide on %s on %s (%s).", formatLeft(left), line(a.ToolName), line(a.ServerLabel), a.ExpiresAt.Local().Format("until 15:04:05 MST"))
			} else {
				s.out.write("\n")
			}
		}
	}
}

// readCorrection reads the arguments the model should use instead (one
// JSON object on one line) and an optional reason.
func (s *session) readCorrection(a approval) (json.RawMessage, string, outcome) {
	s.out.linef("Type the arguments the model should use instead, as one JSON object on one line. Leave a hidden value as \"[redacted]\" to keep the one the model sent. Now:")
	s.out.linef("%s%s", indent, line(compactJSON(a.Arguments)))
	for {
		l, o := s.readLine("correction> ")
		if o != turnDone {
			return nil, "", o
		}
		raw := json.RawMessage(strings.TrimSpace(l))
		var obj map[string]any
		if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
			s.out.linef("That is not a JSON object, such as {\"city\": \"Hamburg\"}. Try again (Ctrl-C to stop):")
			continue
		}
		s.out.linef("A reason for the model (optional; Enter for none):")
		reason, o := s.readReason()
		if o != turnDone {
			return nil, "", o
		}
		return raw, reason, turnDone
	}
}

func (s *session) readReason() (string, outcome) {
	for {
		l, o := s.readLine("reason> ")
		if o != turnDone {
			return "", o
		}
		r := strings.TrimSpace(l)
		if n := utf8.RuneCountInString(r); n > maxReason {
			s.out.linef("That reason is %d characters long; the limit is %d. A shorter one:", n, maxReason)
			continue
		}
		return r, turnDone
	}
}

func (s *session) stopAsking(o outcome, n int) outcome {
	if o == turnCancelled {
		s.out.linef("Cancelled: no decision was sent. The request(s) stay pending; your next message denies them.")
	} else {
		s.out.linef("No decision was sent: %d approval request(s) stay pending.", n)
	}
	return o
}

// readLine prompts and reads one line; Ctrl-C is turnCancelled, the end of
// the input turnQuit.
func (s *session) readLine(prompt string) (string, outcome) {
	s.out.prompt(prompt)
	select {
	case <-s.ints:
		s.out.write("\n")
		return "", turnCancelled
	case l, ok := <-s.lines:
		if !ok {
			s.out.write("\n")
			return "", turnQuit
		}
		s.out.midLine = false // the terminal echoed the line and its Enter
		return l, turnDone
	}
}

func (s *session) drainLines() {
	for {
		select {
		case _, ok := <-s.lines:
			if !ok {
				return
			}
		default:
			return
		}
	}
}

// streamResult is how one streamed turn ended.
type streamResult struct {
	outcome outcome
	pending []approval // completed with approval requests waiting
}

// streamMsg is what the stream's reader goroutine hands over: the
// conversation id from the headers, an event, or the error that ended it.
type streamMsg struct {
	conv string
	ev   *Event
	err  error
}

// cancelWait bounds how long the client waits for the stream to confirm
// a cancelled turn before it stops listening.
const cancelWait = 10 * time.Second

// stream posts body to path and shows the turn's events until its terminal
// event. Ctrl-C cancels the turn on the server.
func (s *session) stream(parent context.Context, open func(context.Context) (*client.Stream, error)) streamResult {
	ctx, stop := context.WithCancel(parent)
	defer stop()
	msgs := make(chan streamMsg)
	go func() {
		defer close(msgs)
		send := func(m streamMsg) bool {
			select {
			case msgs <- m:
				return true
			case <-ctx.Done():
				return false
			}
		}
		res, err := open(ctx)
		if err != nil {
			send(streamMsg{err: err})
			return
		}
		defer res.Close()
		if !send(streamMsg{conv: res.ConversationID}) {
			return
		}
		for {
			ev, err := res.Next()
			if err != nil {
				if !errors.Is(err, io.EOF) {
					send(streamMsg{err: err})
				}
				return
			}
			if !send(streamMsg{ev: &ev}) {
				return
			}
		}
	}()

	v := &viewer{s: s, asked: map[string]approval{}}
	cancelling := false
	var giveUp <-chan time.Time
	requestCancel := func() {
		if s.conv == "" {
			return // done once the conversation is known
		}
		cctx, ccancel := context.WithTimeout(context.WithoutCancel(parent), cancelWait)
		defer ccancel()
		err := s.c.Cancel(cctx, s.conv)
		var api *client.Error
		if err != nil && !(errors.As(err, &api) && api.Code == "no_turn_running") {
			s.errorf("cancelling: %s", line(err.Error()))
		}
		giveUp = time.After(cancelWait)
	}
	for {
		select {
		case m, ok := <-msgs:
			switch {
			case !ok:
				s.out.newline()
				if cancelling {
					s.out.linef("Cancelled.")
					return streamResult{outcome: turnCancelled}
				}
				s.errorf("the stream ended before the turn did; it may still be running on the server (conversation %s)", line(s.conv))
				return streamResult{outcome: turnFailed}
			case m.err != nil:
				if cancelling && ctx.Err() != nil {
					s.out.linef("Cancelled.")
					return streamResult{outcome: turnCancelled}
				}
				return streamResult{outcome: s.explain(m.err)}
			case m.ev == nil:
				if m.conv != "" && s.conv == "" {
					s.conv = m.conv
				}
				if cancelling {
					requestCancel()
				}
			default:
				if res, end := v.event(*m.ev); end {
					if cancelling && res.outcome == turnDone {
						// The turn finished before the cancel reached it.
						s.out.linef("The turn had already finished; nothing was cancelled.")
					}
					return res
				}
			}
		case <-s.ints:
			if cancelling {
				// A second Ctrl-C: stop waiting for the server.
				stop()
				s.out.write("\n")
				s.out.linef("Stopped waiting; the turn may still be running on the server.")
				return streamResult{outcome: turnCancelled}
			}
			cancelling = true
			s.out.write("\n") // after the terminal's ^C
			s.out.linef("Cancelling the turn…")
			requestCancel()
		case <-giveUp:
			stop()
			s.out.linef("The server did not confirm the cancel; stopped waiting.")
			return streamResult{outcome: turnCancelled}
		}
	}
}

// viewer shows one stream's events.
type viewer struct {
	s       *session
	asked   map[string]approval // approval.required, by id
	order   []string
	texting string // the message item whose deltas are being written
	shown   map[string]bool
	// running holds the calls the provider started and that have not
	// finished, by item id: if the turn ends first, they may have run.
	running map[string]string
}

// unfinished says, when a turn ends early, which started calls may have run.
func (v *viewer) unfinished() {
	for _, call := range v.running {
		v.s.out.linef("· %s may have run: the turn ended before the provider reported its result", call)
	}
	v.running = nil
}

// event shows one event; end says it was the terminal one.
func (v *viewer) event(ev Event) (streamResult, bool) {
	t := v.s.out
	switch ev.Name {
	case "conversation":
		var p struct {
			ConversationID string `json:"conversation_id"`
			Offline        bool   `json:"offline"`
		}
		if json.Unmarshal([]byte(ev.Data), &p) == nil && p.ConversationID != "" {
			v.s.conv = p.ConversationID
		}
		if p.ConversationID != "" && p.ConversationID != v.s.cfg.Conversation && p.ConversationID != v.s.announced {
			v.s.announced = p.ConversationID
			t.linef("(conversation %s; continue it later with --conversation %s)", line(p.ConversationID), line(p.ConversationID))
		}
	case "text.delta":
		var p struct {
			ItemID string `json:"item_id"`
			Delta  string `json:"delta"`
		}
		if json.Unmarshal([]byte(ev.Data), &p) != nil {
			return streamResult{}, false
		}
		t.text(p.Delta, v.texting != p.ItemID)
		v.texting = p.ItemID
		if v.shown == nil {
			v.shown = map[string]bool{}
		}
		v.shown[p.ItemID] = true
	case "tool.started":
		var p struct {
			ServerLabel string `json:"server_label"`
			ToolName    string `json:"tool_name"`
		}
		var id struct {
			ItemID string `json:"item_id"`
		}
		if json.Unmarshal([]byte(ev.Data), &p) == nil && json.Unmarshal([]byte(ev.Data), &id) == nil && p.ToolName != "" {
			t.linef("· running %s on %s…", line(p.ToolName), line(p.ServerLabel))
			v.texting = ""
			if v.running == nil {
				v.running = map[string]string{}
			}
			v.running[id.ItemID] = line(p.ToolName) + " on " + line(p.ServerLabel)
		}
	case "item.done":
		v.item(string(ev.Data))
	case "approval.required":
		var a approval
		if json.Unmarshal([]byte(ev.Data), &a) == nil && a.ID != "" {
			if _, seen := v.asked[a.ID]; !seen {
				v.order = append(v.order, a.ID)
			}
			v.asked[a.ID] = a
		}
	case "decision.recorded":
		v.decision(string(ev.Data))
	case "completed":
		var p struct {
			PendingIDs []string `json:"pending_approval_ids"`
		}
		_ = json.Unmarshal([]byte(ev.Data), &p)
		t.newline()
		return v.pending(p.PendingIDs), true
	case "failed":
		var p struct {
			Message string `json:"message"`
		}
		_ = json.Unmarshal([]byte(ev.Data), &p)
		v.unfinished()
		v.s.errorf("the model's response failed: %s", line(p.Message))
		return streamResult{outcome: turnFailed}, true
	case "error":
		var p struct {
			Code      string `json:"code"`
			Message   string `json:"message"`
			Retryable bool   `json:"retryable"`
		}
		_ = json.Unmarshal([]byte(ev.Data), &p)
		v.unfinished()
		if p.Code == "cancelled" {
			t.linef("Cancelled.")
			return streamResult{outcome: turnCancelled}, true
		}
		if p.Code == stoppedCode {
			// The person's own doing: the turn is over, the prompt is back.
			t.linef("Stopped: nothing was sent to the model. Your denials go with your next message.")
			return streamResult{outcome: turnDone}, true
		}
		hint := ""
		if p.Retryable {
			hint = " (sending it again may work)"
		}
		v.s.errorf("the turn stopped: %s [%s]%s", line(p.Message), line(p.Code), hint)
		return streamResult{outcome: turnFailed}, true
	}
	return streamResult{}, false
}

// item shows a finished transcript item: the whole answer when its deltas
// did not arrive, and one line per tool call.
func (v *viewer) item(data string) {
	var p struct {
		Item struct {
			Type        string          `json:"type"`
			ID          string          `json:"id"`
			Text        string          `json:"text"`
			ServerLabel string          `json:"server_label"`
			Name        string          `json:"name"`
			Output      *string         `json:"output"`
			Error       json.RawMessage `json:"error"`
			AllowedBy   *struct {
				Kind string `json:"kind"`
			} `json:"allowed_by"`
			Call *faceCall `json:"call"`
		} `json:"item"`
	}
	if json.Unmarshal([]byte(data), &p) != nil {
		return
	}
	t := v.s.out
	it := p.Item
	switch it.Type {
	case "message":
		if !v.shown[it.ID] {
			t.text(it.Text, true)
		}
		v.texting = ""
		t.newline()
	case "mcp_call":
		why := ""
		if it.AllowedBy != nil {
			switch it.AllowedBy.Kind {
			case "approval":
				why = " (approved)"
			case "conversation":
				why = " (allowed for this conversation)"
			case "grant":
				why = " (allowed for a while)"
			case "policy":
				why = " (runs without asking)"
			}
		}
		delete(v.running, it.ID)
		if it.Call != nil {
			// Through Toolgate's MCP face: its record says what happened.
			if it.Call.State == "refused" || it.Call.State == "not_run" {
				why = ""
			}
			t.linef("%s", it.Call.callLine(line(it.Name)+" on "+line(it.ServerLabel), why))
		} else if len(it.Error) > 0 && string(it.Error) != "null" {
			t.linef("· %s on %s failed%s", line(it.Name), line(it.ServerLabel), why)
		} else {
			t.linef("· ran %s on %s%s", line(it.Name), line(it.ServerLabel), why)
		}
		v.texting = ""
	}
}

func (v *viewer) decision(data string) {
	var p struct {
		ServerLabel   string  `json:"server_label"`
		ToolName      string  `json:"tool_name"`
		State         string  `json:"state"`
		Reason        *string `json:"reason"`
		Scope         *string `json:"scope"`
		Stopped       bool    `json:"stopped"`
		PolicyChanged *struct {
			Policy string `json:"policy"`
		} `json:"policy_changed"`
	}
	if json.Unmarshal([]byte(data), &p) != nil {
		return
	}
	var b strings.Builder
	if o := decisionOutcome(p.State); o != "" {
		// Toolgate's reason repeats this; the sentence says what happened and what to do.
		v.s.out.linef("· %s on %s: %s", line(p.ToolName), line(p.ServerLabel), o)
		return
	}
	fmt.Fprintf(&b, "· %s on %s: %s", line(p.ToolName), line(p.ServerLabel), line(p.State))
	if p.Scope != nil && *p.Scope == "conversation" {
		b.WriteString(", for the rest of this conversation")
	}
	if p.Scope != nil && *p.Scope == "hour" {
		b.WriteString(", for 1 hour in all your conversations")
	}
	if p.Stopped {
		b.WriteString(" (stopped)")
	}
	if p.PolicyChanged != nil {
		switch p.PolicyChanged.Policy {
		case "never":
			b.WriteString(", and it will not ask you again (your policy is now never)")
		case "blocked":
			b.WriteString(", and it is blocked for you (your policy is now blocked)")
		default:
			fmt.Fprintf(&b, " (your policy is now %s)", line(p.PolicyChanged.Policy))
		}
	}
	if p.Reason != nil && *p.Reason != "" {
		fmt.Fprintf(&b, ": \"%s\"", line(*p.Reason))
	}
	v.s.out.linef("%s", b.String())
}

// pending are the approval requests a completed turn left waiting, in the
// order they were asked; requests this stream did not show (decided one by
// one elsewhere) are read from the conversation.
func (v *viewer) pending(ids []string) streamResult {
	if len(ids) == 0 {
		return streamResult{outcome: turnDone}
	}
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	var out []approval
	for _, id := range v.order {
		if want[id] {
			out = append(out, v.asked[id])
			delete(want, id)
		}
	}
	if len(want) > 0 && v.s.conv != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		st, err := conversation(ctx, v.s.c, v.s.conv)
		if err != nil {
			return streamResult{outcome: v.s.explain(err)}
		}
		for _, a := range st.PendingApprovals {
			if want[a.ID] {
				out = append(out, a)
			}
		}
	}
	return streamResult{outcome: turnDone, pending: out}
}
