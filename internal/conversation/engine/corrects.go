package engine

import (
	"encoding/json"
	"sort"
	"strconv"

	"github.com/toolgate/toolgate/internal/conversation"
)

// corrects links a new approval request of server's tool to the request
// just before it of the same tool in the conversation, when the person
// denied that one with a correction: the model asked again, and the card
// shows what changed. storedArgs are the new request's arguments, redacted.
// Nil when there is no such denial (or it cannot be read: the card then
// only lacks the comparison).
func (k *asker) corrects(r *relay, server, tool, storedArgs string) *conversation.Corrects {
	t := r.t
	prev, ok, err := k.store.Repo().LastApproval(r.store, t.user.ID, t.conv.ID, server, tool)
	if err != nil {
		k.log.WarnContext(r.store, "reading the request a new one may correct failed", "conversation_id", t.conv.ID, "error", err)
		return nil
	}
	if !ok || prev.State != conversation.Denied || len(prev.StoredCorrection) == 0 {
		return nil
	}
	return compareCorrected(prev, storedArgs)
}

// compareCorrected compares a new request's arguments (redacted) with the
// denied request prev and its correction, as people see both.
func compareCorrected(prev conversation.Approval, storedArgs string) *conversation.Corrects {
	before, _ := conversation.Redact(prev.StoredArguments)
	after, _ := conversation.Redact(storedArgs)
	var b, a any
	_ = json.Unmarshal(before, &b)
	_ = json.Unmarshal(after, &a)
	c := &conversation.Corrects{ApprovalRequestID: prev.ID, Changes: []conversation.ArgChange{}}
	diff(b, a, "", &c.Changes)
	c.MatchesCorrection = sameJSON(shownCorrection(prev.StoredCorrection), after)
	return c
}

// diff appends the differences between before and after, leaf by leaf:
// objects member by member, arrays of the same length element by element,
// anything else as one change.
func diff(before, after any, path string, out *[]conversation.ArgChange) {
	bo, bok := before.(map[string]any)
	ao, aok := after.(map[string]any)
	if bok && aok {
		keys := map[string]bool{}
		for k := range bo {
			keys[k] = true
		}
		for k := range ao {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			p := joinPath(path, k)
			x, inB := bo[k]
			y, inA := ao[k]
			switch {
			case !inB:
				*out = append(*out, conversation.ArgChange{Path: p, After: mustJSON(y)})
			case !inA:
				*out = append(*out, conversation.ArgChange{Path: p, Before: mustJSON(x)})
			default:
				diff(x, y, p, out)
			}
		}
		return
	}
	ba, bok := before.([]any)
	aa, aok := after.([]any)
	if bok && aok && len(ba) == len(aa) {
		for i := range ba {
			diff(ba[i], aa[i], path+"["+strconv.Itoa(i)+"]", out)
		}
		return
	}
	if !jsonEqual(before, after) {
		*out = append(*out, conversation.ArgChange{Path: path, Before: mustJSON(before), After: mustJSON(after)})
	}
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}
