package conversation

import (
	"encoding/json"
	"sort"
	"strconv"
)

// CompareCorrected compares a new request's arguments (redacted) with the
// denied request prev and its correction, as people see both.
func CompareCorrected(prev Approval, storedArgs string) *Corrects {
	before, _ := Redact(prev.StoredArguments)
	after, _ := Redact(storedArgs)
	var b, a any
	_ = json.Unmarshal(before, &b)
	_ = json.Unmarshal(after, &a)
	c := &Corrects{ApprovalRequestID: prev.ID, Changes: []ArgChange{}}
	diff(b, a, "", &c.Changes)
	c.MatchesCorrection = SameJSON(ShownCorrection(prev.StoredCorrection), after)
	return c
}

// diff appends the differences between before and after, leaf by leaf:
// objects member by member, arrays of the same length element by element,
// anything else as one change.
func diff(before, after any, path string, out *[]ArgChange) {
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
				*out = append(*out, ArgChange{Path: p, After: mustJSON(y)})
			case !inA:
				*out = append(*out, ArgChange{Path: p, Before: mustJSON(x)})
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
		*out = append(*out, ArgChange{Path: path, Before: mustJSON(before), After: mustJSON(after)})
	}
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}
