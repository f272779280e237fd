package responses

import (
	"io"
	"net/http"
	"sync"

	"github.com/openai/openai-go/v3/option"
)

// pieces is a request body as the slices it is made of, in order: the
// parameters, each tools entry's label, head and cached fragment (shared
// with the cache and never changed), the end. Nothing is copied into one
// buffer until it is written.
type pieces struct {
	segs [][]byte
	n    int
}

func (p *pieces) add(b []byte) {
	if len(b) > 0 {
		p.segs = append(p.segs, b)
		p.n += len(b)
	}
}

// bytes is the whole body in one slice.
func (p pieces) bytes() []byte {
	if p.segs == nil {
		return nil
	}
	out := make([]byte, 0, p.n)
	for _, s := range p.segs {
		out = append(out, s...)
	}
	return out
}

// letGo sends body in a form that lets go of its pieces once they are sent:
// the HTTP transport keeps the request it sent until the answer's body
// ends. The transport gets the body again (to send the request again on
// another connection) by building it again: the same bytes. openai-go was
// given an empty body: the request's length is set here.
func letGo(body pieces, build func() (pieces, error)) option.Middleware {
	return func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		req.Body, req.ContentLength = &sentBody{p: body}, int64(body.n)
		req.GetBody = func() (io.ReadCloser, error) {
			b, err := build()
			if err != nil {
				return nil, err
			}
			return &sentBody{p: b}, nil
		}
		return next(req)
	}
}

// sentBody is a request body that drops its pieces once they are read or
// it is closed.
type sentBody struct {
	mu  sync.Mutex
	p   pieces
	off int // into p.segs[0]
}

// held is how many bytes it still holds.
func (s *sentBody) held() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.p.n
}

func (s *sentBody) Read(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for n < len(b) && len(s.p.segs) > 0 {
		c := copy(b[n:], s.p.segs[0][s.off:])
		n, s.off, s.p.n = n+c, s.off+c, s.p.n-c
		if s.off == len(s.p.segs[0]) {
			// The slice of pieces is shared with the request sent again
			// (a retry): left as it is.
			s.p.segs, s.off = s.p.segs[1:], 0
		}
	}
	if len(s.p.segs) == 0 {
		s.p = pieces{}
		if n == 0 {
			return 0, io.EOF
		}
	}
	return n, nil
}

func (s *sentBody) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.p = pieces{}
	return nil
}
