package engine

import (
	"github.com/toolgate/toolgate/internal/conversation/recovery"
)

// turnsHere is what recovery sees of the turns running on this replica.
type turnsHere struct{ *Service }

var _ recovery.Turns = turnsHere{}

// Turns is what recovery (recovery.New) needs of the turns running here.
func (s *Service) Turns() recovery.Turns { return turnsHere{s} }

func (h turnsHere) Running() []string {
	s := h.Service
	s.mu.Lock()
	defer s.mu.Unlock()
	turns := make([]string, 0, len(s.running))
	for _, r := range s.running {
		turns = append(turns, r.turn)
	}
	return turns
}

func (h turnsHere) Ending() []string { return h.endingTurns() }

func (h turnsHere) Here(conversationID, turn string) bool {
	return h.lookup(conversationID) != nil || h.isEnding(turn)
}

func (h turnsHere) StopTurn(turn string, cause error) {
	s := h.Service
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.running {
		if r.turn == turn {
			r.cancel(cause)
		}
	}
}

func (h turnsHere) StopAll(cause error) {
	s := h.Service
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.running {
		r.cancel(cause)
	}
}

func (h turnsHere) Stopping() <-chan struct{} { return h.stopping }

func (h turnsHere) Poke(conversationID string) { h.hub.Poke(conversationID, false) }
