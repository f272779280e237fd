package termchat

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/toolgate/toolgate/internal/client"
)

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
