package client

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"iter"
	"strconv"
	"time"
)

// Event is one server-sent event. Toolgate sends one data line holding one
// JSON object; Data joins several lines with "\n", as a browser does.
type Event struct {
	ID    string // the last id: field seen so far in the stream ("" before any)
	Name  string // "message" when the event has no event: field
	Data  []byte
	Retry time.Duration // the last retry: field seen so far; 0 when none
}

// MaxEventBytes bounds one event (and so one line), so a broken or hostile
// stream cannot fill memory.
const MaxEventBytes = 16 << 20

// ErrEventTooLarge is returned when one event is over the reader's bound.
var ErrEventTooLarge = errors.New("client: an event of the stream is over the size bound")

// Reader reads server-sent events as the HTML standard says
// (https://html.spec.whatwg.org/multipage/server-sent-events.html): lines
// end with LF, CRLF or CR; "id:", "event:", "data:" and "retry:" are the
// fields (one space after the colon is dropped), unknown fields are
// ignored, a line starting with ":" is a comment (Toolgate's heartbeat),
// and a blank line dispatches the event. An event without data is not
// dispatched; an id or retry seen in it still counts. An id counts once
// the blank line after it is read: an event cut off by a dropped
// connection does not move LastID.
type Reader struct {
	r      *bufio.Reader
	max    int
	prevCR bool   // the last line ended with CR: a following LF belongs to it
	idBuf  string // the last id: field read, dispatched or not
	lastID string // idBuf at the last blank line: what a reconnect resumes after
	retry  time.Duration
	line   []byte

	// Comments counts the comment lines read so far (heartbeats).
	Comments int
}

// NewReader reads events from r, each at most MaxEventBytes.
func NewReader(r io.Reader) *Reader { return NewReaderSize(r, MaxEventBytes) }

// NewReaderSize reads events from r, each at most max bytes.
func NewReaderSize(r io.Reader, max int) *Reader {
	return &Reader{r: bufio.NewReaderSize(r, 16<<10), max: max}
}

// LastID is the last event id the stream set: what Last-Event-ID carries
// on a reconnect.
func (s *Reader) LastID() string { return s.lastID }

// Next returns the next event. At the end of the stream it returns io.EOF;
// a stream cut inside an event returns io.ErrUnexpectedEOF (the event is
// dropped, as the standard says).
func (s *Reader) Next() (Event, error) {
	var ev pendingEvent
	size := 0
	for {
		ln, err := s.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) && (ev.hasData || ev.name != "") {
				err = io.ErrUnexpectedEOF
			}
			return Event{}, err
		}
		if size += len(ln); size > s.max {
			return Event{}, fmt.Errorf("%w (%d bytes)", ErrEventTooLarge, s.max)
		}
		if len(ln) == 0 {
			s.lastID = s.idBuf
			if ev.hasData {
				if ev.name == "" {
					ev.name = "message"
				}
				return Event{ID: s.lastID, Name: ev.name, Data: ev.data, Retry: s.retry}, nil
			}
			ev.name = ""
			continue
		}
		if ln[0] == ':' {
			s.Comments++
			continue
		}
		s.field(ln, &ev)
	}
}

// pendingEvent is the event Next is reading.
type pendingEvent struct {
	name    string
	data    []byte
	hasData bool
}

// field reads one field line into ev (event:, data:) or the reader (id:,
// retry:); other fields are ignored.
func (s *Reader) field(ln []byte, ev *pendingEvent) {
	field, value, _ := bytes.Cut(ln, []byte(":"))
	value = bytes.TrimPrefix(value, []byte(" "))
	switch string(field) {
	case "event":
		ev.name = string(value)
	case "data":
		if ev.hasData {
			ev.data = append(ev.data, '\n')
		}
		ev.data, ev.hasData = append(ev.data, value...), true
	case "id":
		if bytes.IndexByte(value, 0) < 0 {
			s.idBuf = string(value)
		}
	case "retry":
		if ms, err := strconv.ParseUint(string(value), 10, 31); err == nil {
			s.retry = time.Duration(ms) * time.Millisecond
		}
	}
}

// readLine returns the next line without its end (LF, CRLF or CR). The
// slice is valid until the next call.
func (s *Reader) readLine() ([]byte, error) {
	s.line = s.line[:0]
	if s.prevCR {
		s.prevCR = false
		if b, err := s.r.Peek(1); err == nil && b[0] == '\n' {
			_, _ = s.r.Discard(1)
		}
	}
	for {
		if _, err := s.r.Peek(1); err != nil {
			if errors.Is(err, io.EOF) && len(s.line) > 0 {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, err
		}
		buf, _ := s.r.Peek(s.r.Buffered())
		i := bytes.IndexAny(buf, "\r\n")
		if i < 0 {
			i = len(buf)
		}
		if len(s.line)+i > s.max {
			return nil, fmt.Errorf("%w (%d bytes)", ErrEventTooLarge, s.max)
		}
		s.line = append(s.line, buf[:i]...)
		if i == len(buf) {
			_, _ = s.r.Discard(i)
			continue
		}
		s.prevCR = buf[i] == '\r'
		_, _ = s.r.Discard(i + 1)
		return s.line, nil
	}
}

// ReadEvents yields the events of r until it ends (no error at a clean
// end) or fails (the error, then nothing more).
func ReadEvents(r io.Reader) iter.Seq2[Event, error] {
	return NewReader(r).All()
}

// All yields the reader's remaining events; see ReadEvents.
func (s *Reader) All() iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		for {
			ev, err := s.Next()
			if errors.Is(err, io.EOF) {
				return
			}
			if !yield(ev, err) || err != nil {
				return
			}
		}
	}
}
