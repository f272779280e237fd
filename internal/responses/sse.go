package responses

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// sseReader reads a text/event-stream body one event's data at a time, as
// openai-go's decoder does (data lines joined, each ending in "\n"; event
// names, ids and comments ignored; an event cut off by the end of the body
// dropped), but into one buffer reused from event to event, so a text
// delta costs no allocation to frame.
type sseReader struct {
	r    *bufio.Reader
	data []byte // the current event's data, valid until the next call
	long []byte // a line longer than r's buffer, assembled
	err  error  // the read error that ended the stream; nil at io.EOF
}

// sseBufferSize is the line buffer of a stream. The connection is read
// into the HTTP transport's own buffer (4 KiB per HTTP/1.1 connection, or
// HTTP/2's flow-control window), so this one only frames lines: a text
// delta (~150-300 bytes) fits, a longer line (an event echoing the tools,
// an item done) is assembled in long. Every open stream holds one.
const sseBufferSize = 1 << 10

// keepBuffer is the largest event buffer kept from one event to the next:
// a stream of text deltas reuses its buffers, a bigger event's are left to
// the collector rather than held for the rest of the stream.
const keepBuffer = 4 << 10

// maxEventSize bounds one line of the stream, as openai-go's decoder does.
const maxEventSize = bufio.MaxScanTokenSize << 9

var errEventTooLong = errors.New("responses: an event of the stream is longer than 32 MiB")

func newSSEReader(r io.Reader) *sseReader {
	return &sseReader{r: bufio.NewReaderSize(r, sseBufferSize)}
}

// next returns the next event's data; false at the end of the stream or
// on a read error (err).
func (s *sseReader) next() ([]byte, bool) {
	// A big event (a response echoing thousands of tools) is not kept for
	// the rest of the stream.
	if cap(s.data) > keepBuffer {
		s.data = nil
	}
	if cap(s.long) > keepBuffer {
		s.long = nil
	}
	s.data = s.data[:0]
	for {
		line, err := s.line()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				s.err = err
			}
			return nil, false
		}
		if len(line) == 0 {
			if len(s.data) == 0 {
				continue
			}
			return s.data, true
		}
		name, value, _ := bytes.Cut(line, []byte(":"))
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		if string(name) == "data" {
			s.data = append(s.data, value...)
			s.data = append(s.data, '\n')
		}
	}
}

// line reads one line without its end ("\n" or "\r\n"). A last line
// without an end is dropped with io.EOF: it cannot complete an event.
func (s *sseReader) line() ([]byte, error) {
	line, err := s.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		s.long = append(s.long[:0], line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			if len(s.long) > maxEventSize {
				return nil, errEventTooLong
			}
			line, err = s.r.ReadSlice('\n')
			s.long = append(s.long, line...)
		}
		line = s.long
	}
	if err != nil {
		return nil, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}
