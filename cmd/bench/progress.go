package main

import (
	"bytes"
	"fmt"
	"io"
	"time"
)

// progress writes the bench's progress lines, each after the time since
// the start ([m:ss]), so that a slow phase shows.
type progress struct {
	w     io.Writer
	start time.Time
	bol   bool // at the beginning of a line
}

func newProgress(w io.Writer) *progress { return &progress{w: w, start: time.Now(), bol: true} }

func (p *progress) Write(b []byte) (int, error) {
	n := len(b)
	for len(b) > 0 {
		if p.bol {
			d := time.Since(p.start).Round(time.Second)
			if _, err := fmt.Fprintf(p.w, "[%d:%02d] ", int(d.Minutes()), int(d.Seconds())%60); err != nil {
				return 0, err
			}
		}
		line, rest, found := bytes.Cut(b, []byte("\n"))
		if found {
			line = append(line, '\n')
		}
		if _, err := p.w.Write(line); err != nil {
			return 0, err
		}
		b, p.bol = rest, found
	}
	return n, nil
}
