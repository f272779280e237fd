package record

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/policy"
)

// Receipt is what the audit log keeps of one tool call (the After of a
// tool.call entry): what ran, with which arguments (redacted as on the
// card, and the digest of the real ones), what allowed it, who decided and how it ended. It names the
// conversation by id only, so it outlives the conversation.
type Receipt struct {
	ConversationID    string  `json:"conversation_id"`
	ResponseID        string  `json:"response_id"`
	CallID            string  `json:"call_id"`
	ApprovalRequestID *string `json:"approval_request_id"`
	ServerLabel       string  `json:"server_label"`
	ToolName          string  `json:"tool_name"`
	// Client is the MCP client that made an agent's call.
	Client    *conversation.ClientInfo `json:"client,omitempty"`
	Arguments json.RawMessage          `json:"arguments"`
	Redacted  []string                 `json:"redacted"`
	// ArgumentsText is Arguments exactly as the transcript stores them
	// (the audit log's JSON column would reorder keys and add spaces).
	// ArgumentsSHA256 is the hex SHA-256 of the real arguments, secrets
	// included: the exact text of the provider's mcp_call item's
	// "arguments", which Toolgate does not keep. Whoever holds the real
	// arguments (the provider's response, GET /v1/responses/{response_id})
	// can check that they are what ran; the receipt does not reveal them.
	ArgumentsText   string                  `json:"arguments_text"`
	ArgumentsSHA256 string                  `json:"arguments_sha256"`
	AllowedBy       *conversation.AllowedBy `json:"allowed_by"`
	// DecidedBy and DecidedByID name the person who approved the call
	// (calls allowed by an approval only).
	DecidedBy   *string `json:"decided_by"`
	DecidedByID *string `json:"decided_by_id"`
	// Outcome is "output" or "error"; OutputSHA256 digests the output,
	// Error is the provider's error object as sent.
	Outcome      string          `json:"outcome"`
	OutputSHA256 *string         `json:"output_sha256"`
	Error        json.RawMessage `json:"error"`

	// What Toolgate's MCP face saw, for a call that passed it (via
	// "gateway"; absent otherwise): CallID is then the face's record
	// (gateway_calls.id) and ArgumentsSHA256 the digest of the canonical
	// arguments (gateway.ArgumentsDigest). DefinitionDigest is the tool's
	// definition as the server listed it at the call; State the call's
	// state (done, failed, not_run, refused); Result the server's result
	// with secrets hidden (OutputSHA256 digests it as it came); Refusal
	// why the face refused it; Failure why no result came back.
	Via              string           `json:"via,omitempty"`
	DefinitionDigest string           `json:"definition_digest,omitempty"`
	State            string           `json:"state,omitempty"`
	Result           json.RawMessage  `json:"result,omitempty"`
	Refusal          *gateway.Refusal `json:"refusal,omitempty"`
	Failure          string           `json:"failure,omitempty"`
	// Masked is how many secret-looking values the face masked in the
	// result before the provider read it; absent when it did not check
	// (the server's mask_results is off, or no result came).
	Masked *int `json:"masked,omitempty"`
}

// Receipt outcomes.
const (
	OutcomeOutput = "output"
	OutcomeError  = "error"
	// OutcomeRefused and OutcomeNotRun: calls through the MCP face that
	// the gate refused, or that provably never reached the server.
	OutcomeRefused = "refused"
	OutcomeNotRun  = "not_run"
)

// GatewayReceipt is the receipt of a call through the MCP face, as its
// record stands (refused or finished), without the decider.
func GatewayReceipt(c conversation.GatewayCall) Receipt {
	c = ShownCall(c)
	rc := Receipt{ConversationID: c.ConversationID, ResponseID: c.ResponseID, CallID: c.ID, ApprovalRequestID: c.ApprovalRequestID,
		ServerLabel: c.ServerLabel, ToolName: c.ToolName, Arguments: c.Arguments, Redacted: c.Redacted,
		ArgumentsText: c.StoredArguments, ArgumentsSHA256: c.ArgumentsSHA256, AllowedBy: c.AllowedBy, Outcome: OutcomeOutput,
		OutputSHA256: c.OutputSHA256, Via: conversation.ViaGateway, DefinitionDigest: c.DefinitionDigest, State: c.State,
		Result: c.Result, Refusal: c.Refusal, Failure: c.Failure, Masked: c.Masked, Client: c.Client}
	// The audit log's column is jsonb, which refuses the escape \u0000 (a
	// tool's output may hold it): the receipt's copies show U+FFFD there;
	// output_sha256 digests the result as it came.
	rc.Arguments, rc.Result = jsonbSafe(rc.Arguments), jsonbSafe(rc.Result)
	switch {
	case c.State == conversation.CallRefused:
		rc.Outcome = OutcomeRefused
	case c.State == conversation.CallNotRun:
		rc.Outcome = OutcomeNotRun
	case c.State == conversation.CallFailed || c.IsError:
		rc.Outcome = OutcomeError
		if c.Failure != "" {
			rc.Error, _ = json.Marshal(map[string]string{"message": c.Failure})
		}
	}
	return rc
}

// linkCall, in gateway mode, finds the MCP face's record of the call the
// provider reports in item it (same turn, or any when turn is "", server,
// tool and canonical arguments digest, not yet reported by another item),
// records that it reported it, and adds to it what the face saw. false
// when there is none: the call did not pass the face.
func (k *Keeper) LinkCall(ctx context.Context, repo conversation.Repo, conversationID, turn string, it *conversation.Item) (bool, error) {
	if !k.gateway || it.Type != conversation.ItemCall || it.Interrupted || it.CanonicalSHA256 == "" {
		return false, nil
	}
	key := conversation.CallKey{ConversationID: conversationID, TurnID: turn, ServerLabel: it.ServerLabel, ToolName: it.Name, ArgumentsSHA256: it.CanonicalSHA256}
	c, ok, err := repo.Calls.Link(ctx, key, it.ID, it.ResponseID)
	if err != nil || !ok {
		return false, err
	}
	it.Via, it.GatewayCallID, it.DefinitionDigest, it.Result = conversation.ViaGateway, c.ID, c.DefinitionDigest, c.Result
	it.AllowedBy, it.Refusal = c.AllowedBy, c.Refusal
	if c.ApprovalRequestID != nil {
		it.ApprovalRequestID = *c.ApprovalRequestID
	}
	return true, nil
}

// RecordCall writes the receipt of call item it in repo's transaction; a
// receipt already written for the call is kept (the insert is idempotent).
// email may be empty: the store then takes the owner's.
func (k *Keeper) RecordCall(ctx context.Context, repo conversation.Repo, owner, email, conversationID string, it conversation.Item) error {
	if it.Type != conversation.ItemCall || it.Interrupted {
		return nil
	}
	rc := receiptOf(conversationID, it)
	if it.ApprovalRequestID != "" {
		aps, err := repo.Approvals.List(ctx, owner, conversationID, []string{it.ApprovalRequestID}, false)
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
	return k.policies.Decisions.Audit(ctx, repo, policy.AuditEntry{Actor: email, ActorID: owner, Action: policy.ActionToolCall,
		ServerLabel: &it.ServerLabel, ToolName: &it.Name, Before: json.RawMessage("null"), After: after,
		CallID: it.ID, ConversationID: conversationID})
}

// receiptOf is the receipt of a finished call item, without the decider.
func receiptOf(conversationID string, it conversation.Item) Receipt {
	args := it.Arguments
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	sum := it.ArgumentsSHA256
	if sum == "" { // not read from the provider (cannot happen for a call that ran): the text as stored
		sum = Digest(args)
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
		d := Digest([]byte(*it.Output))
		rc.OutputSHA256 = &d
	}
	return rc
}

// jsonbSafe is JSON text raw with every \u0000 escape replaced by \ufffd.
func jsonbSafe(raw json.RawMessage) json.RawMessage {
	if !bytes.Contains(raw, []byte(`\u0000`)) {
		return raw
	}
	return bytes.ReplaceAll(raw, []byte(`\u0000`), []byte(`\ufffd`))
}

func Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
