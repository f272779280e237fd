package emulator

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"time"
)

// Stream events, with keys in the order of the recordings.
type (
	evResponse struct {
		Type     string    `json:"type"`
		Seq      int       `json:"sequence_number"`
		Response *Response `json:"response"`
	}
	evItem struct {
		Type        string `json:"type"`
		Seq         int    `json:"sequence_number"`
		OutputIndex int    `json:"output_index"`
		Item        any    `json:"item"`
	}
	evItemID struct {
		Type        string `json:"type"`
		Seq         int    `json:"sequence_number"`
		OutputIndex int    `json:"output_index"`
		ItemID      string `json:"item_id"`
	}
	evArgsDelta struct {
		Type        string `json:"type"`
		Seq         int    `json:"sequence_number"`
		OutputIndex int    `json:"output_index"`
		ItemID      string `json:"item_id"`
		Delta       string `json:"delta"`
		Obfuscation string `json:"obfuscation"`
	}
	evArgsDone struct {
		Type        string `json:"type"`
		Seq         int    `json:"sequence_number"`
		OutputIndex int    `json:"output_index"`
		ItemID      string `json:"item_id"`
		Arguments   string `json:"arguments"`
	}
	evPart struct {
		Type         string     `json:"type"`
		Seq          int        `json:"sequence_number"`
		ItemID       string     `json:"item_id"`
		OutputIndex  int        `json:"output_index"`
		ContentIndex int        `json:"content_index"`
		Part         OutputText `json:"part"`
	}
	evTextDelta struct {
		Type         string `json:"type"`
		Seq          int    `json:"sequence_number"`
		ItemID       string `json:"item_id"`
		OutputIndex  int    `json:"output_index"`
		ContentIndex int    `json:"content_index"`
		Delta        string `json:"delta"`
		Logprobs     []any  `json:"logprobs"`
		Obfuscation  string `json:"obfuscation"`
	}
	evTextDone struct {
		Type         string `json:"type"`
		Seq          int    `json:"sequence_number"`
		ItemID       string `json:"item_id"`
		OutputIndex  int    `json:"output_index"`
		ContentIndex int    `json:"content_index"`
		Text         string `json:"text"`
		Logprobs     []any  `json:"logprobs"`
	}
	evError struct {
		Type    string  `json:"type"`
		Seq     int     `json:"sequence_number"`
		Code    string  `json:"code"`
		Message string  `json:"message"`
		Param   *string `json:"param"`
	}
)

// emitter writes stream events with SSE framing, numbering them, pacing
// them and firing the selected stream faults. A client that goes away does
// not stop the turn: its tools still run and its response is still stored,
// as upstream would.
type emitter struct {
	w      http.ResponseWriter
	rc     *http.ResponseController
	ctx    context.Context // the client's request context
	beh    Behavior
	stream bool

	seq     int
	started bool // headers written
	gone    bool // the client left or a write failed
	cut     bool // a cut fired: write nothing more, abort the connection at the end
}

// send numbers ev (via set), then writes it unless the stream was cut or
// the client left.
func (e *emitter) send(set func(seq int) any) {
	ev := set(e.seq)
	if e.stream && !e.cut && !e.gone {
		e.write(ev)
	}
	e.seq++
}

func (e *emitter) write(ev any) {
	if !e.started {
		e.sleep(e.beh.FirstEventDelay)
		h := e.w.Header()
		h.Set("Content-Type", "text/event-stream; charset=utf-8")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no")
		e.w.WriteHeader(http.StatusOK)
		e.started = true
	} else {
		e.sleep(e.beh.EventDelay)
	}
	if e.gone {
		return
	}
	var buf bytes.Buffer
	data, _ := json.Marshal(ev)
	buf.WriteString("event: ")
	buf.Write(eventType(data))
	buf.WriteString("\ndata: ")
	buf.Write(data)
	buf.WriteString("\n\n")
	if _, err := e.w.Write(buf.Bytes()); err != nil {
		e.gone = true
		return
	}
	if err := e.rc.Flush(); err != nil {
		e.gone = true
	}
}

// sleep waits d, or less if the client leaves.
func (e *emitter) sleep(d time.Duration) {
	if d <= 0 || e.gone {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-e.ctx.Done():
		e.gone = true
	}
}

// eventType returns the value of the "type" key, which every event struct
// marshals first: {"type":"response.created",...}.
func eventType(data []byte) []byte {
	const prefix = `{"type":"`
	if !bytes.HasPrefix(data, []byte(prefix)) {
		return nil
	}
	rest := data[len(prefix):]
	if i := bytes.IndexByte(rest, '"'); i >= 0 {
		return rest[:i]
	}
	return nil
}

const obfuscationChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// obfuscation pads a delta like the API does, so that lengths do not leak.
func obfuscation(delta string) string {
	n := 16 - len(delta)
	if n < 2 {
		n = 2
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = obfuscationChars[rand.IntN(len(obfuscationChars))]
	}
	return string(b)
}
