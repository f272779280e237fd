package termchat

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Event is one server-sent event: its name and its data (data lines joined
// with "\n"). Toolgate sends one data line holding one JSON object.
type Event struct {
	Name string
	Data string
}

// maxEventBytes bounds one event, so a broken stream cannot fill memory.
const maxEventBytes = 16 << 20

// sseReader reads server-sent events
// (https://html.spec.whatwg.org/multipage/server-sent-events.html): lines end
// with LF, CRLF or CR; "event:" names the event, "data:" lines add to its
// data, comments (":") and other fields are skipped, and a blank line
// dispatches the event. An event without data is not dispatched.
type sseReader struct {
	r      *bufio.Reader
	prevCR bool // the last line ended with CR: a following LF is part of it
}

func newSSEReader(r io.Reader) *sseReader { return &sseReader{r: bufio.NewReader(r)} }

// Next returns the next event. At the end of the stream it returns io.EOF
// (an event not finished by a blank line is dropped, as the spec says).
func (s *sseReader) Next() (Event, error) {
	var name string
	var data []string
	hasData, size := false, 0
	for {
		ln, err := s.readLine()
		if err != nil {
			return Event{}, err
		}
		size += len(ln)
		if size > maxEventBytes {
			return Event{}, fmt.Errorf("an event of the stream is over %d bytes", maxEventBytes)
		}
		if ln == "" {
			if hasData {
				if name == "" {
					name = "message"
				}
				return Event{Name: name, Data: strings.Join(data, "\n")}, nil
			}
			name = ""
			continue
		}
		if strings.HasPrefix(ln, ":") {
			continue
		}
		field, value, _ := strings.Cut(ln, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			name = value
		case "data":
			data = append(data, value)
			hasData = true
		}
	}
}

// readLine returns the next line without its end.
func (s *sseReader) readLine() (string, error) {
	var b strings.Builder
	for {
		c, err := s.r.ReadByte()
		if err != nil {
			if errors.Is(err, io.EOF) && b.Len() > 0 {
				return "", io.ErrUnexpectedEOF
			}
			return "", err
		}
		if s.prevCR {
			s.prevCR = false
			if c == '\n' {
				continue
			}
		}
		switch c {
		case '\n':
			return b.String(), nil
		case '\r':
			s.prevCR = true
			return b.String(), nil
		}
		if b.Len() >= maxEventBytes {
			return "", fmt.Errorf("a line of the stream is over %d bytes", maxEventBytes)
		}
		b.WriteByte(c)
	}
}
