package postgres

import (
	"encoding/json"
	"fmt"

	"github.com/toolgate/toolgate/internal/conversation"
)

// storedCorrects is approval_requests.corrects: its own layout, so that a
// change to the API's field names does not misread stored rows.
type storedCorrects struct {
	ApprovalRequestID string             `json:"approval_request_id"`
	Changes           []storedCorrChange `json:"changes"`
	MatchesCorrection bool               `json:"matches_correction"`
}

type storedCorrChange struct {
	Path   string          `json:"path"`
	Before json.RawMessage `json:"before,omitempty"`
	After  json.RawMessage `json:"after,omitempty"`
}

// encodeCorrects is the corrects column of c: NULL for none.
func encodeCorrects(c *conversation.Corrects) any {
	if c == nil {
		return nil
	}
	s := storedCorrects{ApprovalRequestID: c.ApprovalRequestID, MatchesCorrection: c.MatchesCorrection,
		Changes: make([]storedCorrChange, len(c.Changes))}
	for i, ch := range c.Changes {
		s.Changes[i] = storedCorrChange(ch)
	}
	b, _ := json.Marshal(s)
	return string(b)
}

func decodeCorrects(b []byte) (*conversation.Corrects, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var s storedCorrects
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("decode an approval request's corrects: %w", err)
	}
	c := &conversation.Corrects{ApprovalRequestID: s.ApprovalRequestID, MatchesCorrection: s.MatchesCorrection,
		Changes: make([]conversation.ArgChange, len(s.Changes))}
	for i, ch := range s.Changes {
		c.Changes[i] = conversation.ArgChange(ch)
	}
	return c, nil
}

// nullJSON is raw for a jsonb parameter: NULL when empty.
func nullJSON(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	return string(raw)
}
