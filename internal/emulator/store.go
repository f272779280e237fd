package emulator

import (
	"crypto/rand"
	"encoding/hex"
	"sync"
)

// newID makes an id like the API's: a prefix and 50 hex digits.
func newID(prefix string) string {
	b := make([]byte, 25)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// stored is a response kept for previous_response_id and GET.
type stored struct {
	resp   []byte // the response object as JSON, as last sent
	prev   string
	input  []ctxItem
	output []ctxItem
}

// store keeps responses in memory, dropping the oldest beyond max.
type store struct {
	saveMu sync.Mutex // one state file write at a time
	mu     sync.RWMutex
	max    int
	byID   map[string]*stored
	items  map[string]ctxItem // every stored item by id, for item_reference
	// answeredIn maps an approval request id to the stored response whose
	// input answered it, so that a re-sent answer is not applied again.
	answeredIn map[string]string
	// madeIn maps an output item id to the stored response that made it,
	// so that approval requests of one response are told apart from a
	// later response's.
	madeIn map[string]string
	order  []string
}

func newStore(max int) *store {
	if max <= 0 {
		max = 10000
	}
	return &store{max: max, byID: map[string]*stored{}, items: map[string]ctxItem{}, answeredIn: map[string]string{}, madeIn: map[string]string{}}
}

func (s *store) put(id string, st *stored) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.byID[id]; !ok {
		s.order = append(s.order, id)
	}
	s.byID[id] = st
	for _, it := range st.output {
		if it.ID != "" {
			s.madeIn[it.ID] = id
		}
	}
	for _, it := range append(append([]ctxItem{}, st.input...), st.output...) {
		if it.ID != "" && it.Type != "item_reference" {
			s.items[it.ID] = it
		}
		if it.Type == "mcp_approval_response" {
			if _, ok := s.answeredIn[it.ApprovalRequestID]; !ok {
				s.answeredIn[it.ApprovalRequestID] = id
			}
		}
	}
	for len(s.order) > s.max {
		old := s.byID[s.order[0]]
		for _, it := range append(append([]ctxItem{}, old.input...), old.output...) {
			delete(s.items, it.ID)
			if s.madeIn[it.ID] == s.order[0] {
				delete(s.madeIn, it.ID)
			}
			if it.Type == "mcp_approval_response" && s.answeredIn[it.ApprovalRequestID] == s.order[0] {
				delete(s.answeredIn, it.ApprovalRequestID)
			}
		}
		delete(s.byID, s.order[0])
		s.order = s.order[1:]
	}
}

func (s *store) get(id string) (*stored, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	st, ok := s.byID[id]
	return st, ok
}

// answered returns the stored response whose input answered the approval
// request id, if any.
func (s *store) answered(id string) (string, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	resp, ok := s.answeredIn[id]
	return resp, ok
}

// made returns the stored response whose output has the item id, if any.
func (s *store) made(id string) (string, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	resp, ok := s.madeIn[id]
	return resp, ok
}

func (s *store) item(id string) (ctxItem, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	it, ok := s.items[id]
	return it, ok
}

// chain returns the items of previous responses, oldest first: each
// response's input, then its output.
func (s *store) chain(prevID string) ([]ctxItem, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var parts [][]ctxItem
	seen := map[string]bool{}
	for id := prevID; id != "" && !seen[id]; {
		seen[id] = true
		st, ok := s.byID[id]
		if !ok {
			if id == prevID {
				return nil, false
			}
			break // an evicted ancestor: the context is truncated
		}
		parts = append(parts, append(append([]ctxItem{}, st.input...), st.output...))
		id = st.prev
	}
	var out []ctxItem
	for i := len(parts) - 1; i >= 0; i-- {
		out = append(out, parts[i]...)
	}
	return out, true
}
