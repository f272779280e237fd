package termchat

import (
	"encoding/json"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/toolgate/toolgate/internal/client"
)

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
		d, step, o := s.askOne(a, len(pending)-i-1)
		switch step {
		case stepExpired:
			continue
		case stepAbort:
			return nil, s.stopAsking(o, len(pending))
		case stepStop:
			return append(out, d), turnDone
		}
		out = append(out, d)
	}
	return out, turnDone
}

// askStep is what ask does once a key for a request was read.
type askStep int

const (
	stepNext    askStep = iota // the decision is made: on to the next request
	stepAgain                  // no valid key: read another
	stepExpired                // the request expired while asked: leave it out
	stepAbort                  // the asking ended (the outcome says how)
	stepStop                   // stop: this decision is the last
)

// askOne reads keys for a until one decides it; rest is the number of
// requests after it.
func (s *session) askOne(a approval, rest int) (client.Decision, askStep, outcome) {
	for {
		l, o := s.readDecisionLine(a)
		if o == turnExpired {
			return client.Decision{}, stepExpired, o
		}
		if o != turnDone {
			return client.Decision{}, stepAbort, o
		}
		d, step, o := s.decisionFor(a, l, rest)
		if step != stepAgain {
			return d, step, o
		}
	}
}

// decisionFor makes the decision the key line l says for a, reading a
// reason or a correction where the key asks for one.
func (s *session) decisionFor(a approval, l string, rest int) (client.Decision, askStep, outcome) {
	d := client.Decision{ApprovalRequestID: a.ID}
	key := s.offeredKey(a, strings.ToLower(strings.TrimSpace(l)))
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
			return d, stepAbort, o
		}
		d.Reason = reason
	case "e":
		corr, reason, o := s.readCorrection(a)
		if o != turnDone {
			return d, stepAbort, o
		}
		d.Correction, d.Reason = corr, reason
	case "s":
		s.out.linef("A reason for the model (optional; Enter for none):")
		reason, o := s.readReason()
		if o != turnDone {
			return d, stepAbort, o
		}
		d.Reason, d.Stop = reason, true
		// The server denies the rest: nothing more to ask.
		s.out.linef("%s", stopLine(rest))
		return d, stepStop, turnDone
	default:
		s.out.linef("Please type one of %s, then Enter.", a.keyList())
		s.out.linef("%s", a.keys())
		return d, stepAgain, turnDone
	}
	return d, stepNext, turnDone
}

// offeredKey is key when a's card offers it; otherwise it says why not
// and is "" (not a key).
func (s *session) offeredKey(a approval, key string) string {
	if a.locked() && (key == "c" || key == "h" || key == "a" || key == "b") {
		s.out.linef("An admin locked this tool at Ask: it can only be approved once or denied.")
		key = ""
	} else if key != "" && strings.Contains("ychanbres", key) && len(key) == 1 && !a.offers(key) {
		s.out.linef("An admin limited the choices for this tool: %s is not one of them.", key)
		key = ""
	}
	return key
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
