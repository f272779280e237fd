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
	go readStream(ctx, open, msgs)

	w := &streamWatch{s: s, parent: parent, ctx: ctx, stop: stop, v: &viewer{s: s, asked: map[string]approval{}}}
	for {
		select {
		case m, ok := <-msgs:
			if res, end := w.message(m, ok); end {
				return res
			}
		case <-s.ints:
			if res, end := w.interrupt(); end {
				return res
			}
		case <-w.giveUp:
			stop()
			s.out.linef("The server did not confirm the cancel; stopped waiting.")
			return streamResult{outcome: turnCancelled}
		}
	}
}

// readStream opens the stream and hands its conversation id, then each
// event, then the error that ended it (not io.EOF) over msgs, until ctx
// ends; then it closes msgs.
func readStream(ctx context.Context, open func(context.Context) (*client.Stream, error), msgs chan<- streamMsg) {
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
}

// streamWatch is what stream keeps while it watches one turn: the viewer,
// and whether (and until when) a cancel is under way.
type streamWatch struct {
	s      *session
	parent context.Context
	ctx    context.Context // the stream's; stop ends it
	stop   context.CancelFunc
	v      *viewer

	cancelling bool
	giveUp     <-chan time.Time
}

// requestCancel asks the server to cancel the turn, once the conversation
// is known, and starts the wait for its confirmation.
func (w *streamWatch) requestCancel() {
	s := w.s
	if s.conv == "" {
		return // done once the conversation is known
	}
	cctx, ccancel := context.WithTimeout(context.WithoutCancel(w.parent), cancelWait)
	defer ccancel()
	err := s.c.Cancel(cctx, s.conv)
	var api *client.Error
	if err != nil && !(errors.As(err, &api) && api.Code == "no_turn_running") {
		s.errorf("cancelling: %s", line(err.Error()))
	}
	w.giveUp = time.After(cancelWait)
}

// message handles what the reader handed over (ok false: it closed msgs);
// end says the stream is over with res.
func (w *streamWatch) message(m streamMsg, ok bool) (res streamResult, end bool) {
	s := w.s
	switch {
	case !ok:
		s.out.newline()
		if w.cancelling {
			s.out.linef("Cancelled.")
			return streamResult{outcome: turnCancelled}, true
		}
		s.errorf("the stream ended before the turn did; it may still be running on the server (conversation %s)", line(s.conv))
		return streamResult{outcome: turnFailed}, true
	case m.err != nil:
		if w.cancelling && w.ctx.Err() != nil {
			s.out.linef("Cancelled.")
			return streamResult{outcome: turnCancelled}, true
		}
		return streamResult{outcome: s.explain(m.err)}, true
	case m.ev == nil:
		if m.conv != "" && s.conv == "" {
			s.conv = m.conv
		}
		if w.cancelling {
			w.requestCancel()
		}
	default:
		if res, end := w.v.event(*m.ev); end {
			if w.cancelling && res.outcome == turnDone {
				// The turn finished before the cancel reached it.
				s.out.linef("The turn had already finished; nothing was cancelled.")
			}
			return res, true
		}
	}
	return streamResult{}, false
}

// interrupt handles a Ctrl-C while the turn streams: the first cancels the
// turn, a second stops waiting (end).
func (w *streamWatch) interrupt() (res streamResult, end bool) {
	s := w.s
	if w.cancelling {
		// A second Ctrl-C: stop waiting for the server.
		w.stop()
		s.out.write("\n")
		s.out.linef("Stopped waiting; the turn may still be running on the server.")
		return streamResult{outcome: turnCancelled}, true
	}
	w.cancelling = true
	s.out.write("\n") // after the terminal's ^C
	s.out.linef("Cancelling the turn…")
	w.requestCancel()
	return streamResult{}, false
}
