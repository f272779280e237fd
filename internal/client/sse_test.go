package client_test

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/toolgate/toolgate/internal/client"
)

// events reads every event of in, and the error that ended the stream.
func events(in io.Reader, max int) ([]client.Event, error) {
	r := client.NewReaderSize(in, max)
	var out []client.Event
	for {
		ev, err := r.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			return out, err
		}
		out = append(out, ev)
	}
}

func TestReader_ParsesFieldsAsTheStandardSays(t *testing.T) {
	in := ": heartbeat\n\n" +
		"id: 1\nevent: conversation\ndata: {\"a\":1}\n\n" +
		"event: text.delta\r\ndata:{\"delta\":\"x\"}\r\n\r\n" + // CRLF, no space after the colon
		"event: two\rdata: a\rdata: b\r\r" + // CR, two data lines
		"id: 7\nevent: nodata\n\n" + // not dispatched, but its id counts
		"retry: 2500\nunknown: field\ndata:  spaced\n\n" + // no name: "message"; one space dropped
		"data\n\n" + // a field without a colon: empty data
		"event: cut\ndata: {\"half"
	for name, r := range map[string]io.Reader{
		"whole":       strings.NewReader(in),
		"byte a read": iotest.OneByteReader(strings.NewReader(in)),
	} {
		got, err := events(r, client.MaxEventBytes)
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("%s: a stream cut mid-event: err = %v, want unexpected EOF", name, err)
		}
		want := []client.Event{
			{ID: "1", Name: "conversation", Data: []byte(`{"a":1}`)},
			{ID: "1", Name: "text.delta", Data: []byte(`{"delta":"x"}`)},
			{ID: "1", Name: "two", Data: []byte("a\nb")},
			{ID: "7", Name: "message", Data: []byte(" spaced"), Retry: 2500 * time.Millisecond},
			{ID: "7", Name: "message", Data: []byte(""), Retry: 2500 * time.Millisecond},
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d events %q, want %d", name, len(got), got, len(want))
		}
		for i := range want {
			g, w := got[i], want[i]
			if g.ID != w.ID || g.Name != w.Name || string(g.Data) != string(w.Data) || g.Retry != w.Retry {
				t.Errorf("%s: event %d = %+v (data %q), want %+v (data %q)", name, i, g, g.Data, w, w.Data)
			}
		}
	}
}

func TestReader_CountsCommentsAndEndsCleanly(t *testing.T) {
	r := client.NewReader(strings.NewReader(":\n: ping\n\nevent: x\ndata: y\n\n:tail\n"))
	var n int
	for ev, err := range r.All() {
		if err != nil || ev.Name != "x" {
			t.Fatalf("event %+v, err %v", ev, err)
		}
		n++
	}
	if n != 1 || r.Comments != 3 {
		t.Errorf("%d events, %d comments; want 1 and 3", n, r.Comments)
	}
}

// A CRLF split across two reads is one line end, not two.
func TestReader_CRLFSplitAcrossReads(t *testing.T) {
	in := io.MultiReader(strings.NewReader("data: a\r"), strings.NewReader("\ndata: b\r"), strings.NewReader("\n\r\n"))
	got, err := events(in, client.MaxEventBytes)
	if err != nil || len(got) != 1 || string(got[0].Data) != "a\nb" {
		t.Errorf("events %q, err %v; want one with data a\\nb", got, err)
	}
}

func TestReader_RefusesAnEventOverTheBound(t *testing.T) {
	long := strings.Repeat("x", 100)
	for name, in := range map[string]string{
		"one line":    "data: " + long + "\n\n",
		"many lines":  strings.Repeat("data: "+long[:40]+"\n", 3) + "\n",
		"no line end": "data: " + long,
	} {
		_, err := events(strings.NewReader(in), 64)
		if !errors.Is(err, client.ErrEventTooLarge) {
			t.Errorf("%s: err %v, want ErrEventTooLarge", name, err)
		}
	}
	// At the bound it passes.
	got, err := events(strings.NewReader("data: "+long[:58]+"\n\n"), 64)
	if err != nil || len(got) != 1 {
		t.Errorf("an event of 64 bytes: %d events, err %v", len(got), err)
	}
}

// An id in an event the stream cut off is not where a reconnect resumes.
func TestReader_LastIDMovesOnlyWithADispatch(t *testing.T) {
	r := client.NewReader(strings.NewReader("id: 1\ndata: a\n\nid: 2\ndata: b"))
	if ev, err := r.Next(); err != nil || ev.ID != "1" {
		t.Fatalf("first event %+v, %v", ev, err)
	}
	if _, err := r.Next(); !errors.Is(err, io.ErrUnexpectedEOF) || r.LastID() != "1" {
		t.Errorf("after a cut event: err %v, LastID %q; want unexpected EOF and 1", err, r.LastID())
	}
}

func TestReadEvents_StopsAtTheFirstError(t *testing.T) {
	in := io.MultiReader(strings.NewReader("data: 1\n\n"), iotest.ErrReader(io.ErrClosedPipe))
	var names []string
	var errs []error
	for ev, err := range client.ReadEvents(in) {
		names, errs = append(names, string(ev.Data)), append(errs, err)
	}
	if len(errs) != 2 || errs[0] != nil || !errors.Is(errs[1], io.ErrClosedPipe) || names[0] != "1" {
		t.Errorf("got %q, errors %v; want the event, then the read error", names, errs)
	}
}
