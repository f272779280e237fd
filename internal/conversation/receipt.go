package conversation

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/toolgate/toolgate/internal/policy"
)

// Receipt is what the audit log keeps of one tool call (the After of a
// tool.call entry): what ran, with which arguments (redacted as on the
// card, and the digest of the real ones), what allowed it, who decided and how it ended. It names the
// conversation by id only, so it outlives the conversation.
type Receipt struct {
	ConversationID    string          `json:"conversation_id"`
	ResponseID        string          `json:"response_id"`
	CallID            string          `json:"call_id"`
	ApprovalRequestID *string         `json:"approval_request_id"`
	ServerLabel       string          `json:"server_label"`
	ToolName          string          `json:"tool_name"`
	Arguments         json.RawMessage `json:"arguments"`
	Redacted          []string        `json:"redacted"`
	// ArgumentsText is Arguments exactly as the transcript stores them
	// (the audit log's JSON column would reorder keys and add spaces).
	// ArgumentsSHA256 is the hex SHA-256 of the real arguments, secrets
	// included: the exact text of the provider's mcp_call item's
	// "arguments", which Toolgate does not keep. Whoever holds the real
	// arguments (the provider's response, GET /v1/responses/{response_id})
	// can check that they are what ran; the receipt does not reveal them.
	ArgumentsText   string     `json:"arguments_text"`
	ArgumentsSHA256 string     `json:"arguments_sha256"`
	AllowedBy       *AllowedBy `json:"allowed_by"`
	// DecidedBy and DecidedByID name the person who approved the call
	// (calls allowed by an approval only).
	DecidedBy   *string `json:"decided_by"`
	DecidedByID *string `json:"decided_by_id"`
	// Outcome is "output" or "error"; OutputSHA256 digests the output,
	// Error is the provider's error object as sent.
	Outcome      string          `json:"outcome"`
	OutputSHA256 *string         `json:"output_sha256"`
	Error        json.RawMessage `json:"error"`
}

// Receipt outcomes.
const (
	OutcomeOutput = "output"
	OutcomeError  = "error"
)

// storeItem appends it to the transcript; a finished call is stored
// together with its receipt, in one transaction.
func (r *relay) storeItem(it Item) (Item, error) {
	t, s := r.t, r.t.s
	if it.Type != ItemCall || it.Interrupted {
		return s.store.Repo().AppendItem(r.store, t.conv.ID, it)
	}
	var stored Item
	err := s.store.Tx(r.store, func(repo Repo) error {
		var err error
		if stored, err = repo.AppendItem(r.store, t.conv.ID, it); err != nil {
			return err
		}
		return s.recordCall(r.store, repo, t.user.ID, t.user.Email, t.conv.ID, it)
	})
	return stored, err
}

// recordCall writes the receipt of call item it in repo's transaction; a
// receipt already written for the call is kept (the insert is idempotent).
// email may be empty: the store then takes the owner's.
func (s *Service) recordCall(ctx context.Context, repo Repo, owner, email, conversationID string, it Item) error {
	if it.Type != ItemCall || it.Interrupted {
		return nil
	}
	rc := receiptOf(conversationID, it)
	if it.ApprovalRequestID != "" {
		aps, err := repo.Approvals(ctx, owner, conversationID, []string{it.ApprovalRequestID}, false)
		if err != nil {
			return err
		}
		if len(aps) == 1 {
			rc.DecidedBy, rc.DecidedByID = aps[0].DecidedBy, aps[0].DecidedByID
		}
	}
	after, err := json.Marshal(rc)
	if err != nil {
		return err
	}
	return s.policies.Audit(ctx, repo, policy.AuditEntry{Actor: email, ActorID: owner, Action: policy.ActionToolCall,
		ServerLabel: &it.ServerLabel, ToolName: &it.Name, Before: json.RawMessage("null"), After: after,
		CallID: it.ID, ConversationID: conversationID})
}

// receiptOf is the receipt of a finished call item, without the decider.
func receiptOf(conversationID string, it Item) Receipt {
	args := it.Arguments
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	sum := it.ArgumentsSHA256
	if sum == "" { // not read from the provider (cannot happen for a call that ran): the text as stored
		sum = digest(args)
	}
	rc := Receipt{ConversationID: conversationID, ResponseID: it.ResponseID, CallID: it.ID, ServerLabel: it.ServerLabel,
		ToolName: it.Name, Arguments: args, Redacted: it.Redacted, ArgumentsText: string(args), ArgumentsSHA256: sum,
		AllowedBy: it.AllowedBy, Outcome: OutcomeOutput}
	if rc.Redacted == nil {
		rc.Redacted = []string{}
	}
	if it.ApprovalRequestID != "" {
		id := it.ApprovalRequestID
		rc.ApprovalRequestID = &id
	}
	if len(it.CallError) > 0 && string(it.CallError) != "null" {
		rc.Outcome, rc.Error = OutcomeError, it.CallError
	}
	if it.Output != nil {
		d := digest([]byte(*it.Output))
		rc.OutputSHA256 = &d
	}
	return rc
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
