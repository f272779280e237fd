package replicas_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"time"
)

// invariant is one property the run must hold, with what was checked.
type invariant struct {
	name       string
	checked    int
	violations []string
}

func (iv *invariant) check(ok bool, format string, args ...any) {
	iv.checked++
	if !ok {
		iv.violations = append(iv.violations, fmt.Sprintf(format, args...))
	}
}

// evidence is what the provider side did and what Toolgate shows.
type evidence struct {
	calls       map[string]int        // tool+arguments -> times the MCP server ran it
	callConv    map[string]string     // tool+arguments -> conversation tag (c3)
	transcripts map[string]transcript // by conversation id
	convTag     map[string]string     // conversation id -> c3
	responses   map[string]*upstreamResponse
	emulator    string
}

// upstreamResponse is a response as the emulator stored it.
type upstreamResponse struct {
	ID                 string  `json:"id"`
	PreviousResponseID *string `json:"previous_response_id"`
	Output             []struct {
		Type              string          `json:"type"`
		ID                string          `json:"id"`
		Name              string          `json:"name"`
		Arguments         json.RawMessage `json:"arguments"`
		Output            *string         `json:"output"`
		ApprovalRequestID *string         `json:"approval_request_id"`
	} `json:"output"`
}

// canon is a call's identity: the tool and its arguments as canonical JSON
// (OpenAI sends mcp_call arguments as a JSON string holding JSON).
func canon(tool string, raw json.RawMessage) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return tool + " " + string(raw)
	}
	if s, ok := v.(string); ok {
		var inner any
		if json.Unmarshal([]byte(s), &inner) == nil {
			v = inner
		}
	}
	b, _ := json.Marshal(v)
	return tool + " " + string(b)
}

var tagRE = regexp.MustCompile(`c\d+-t\d+`)

func convOf(key string) string {
	tag := tagRE.FindString(key)
	return strings.SplitN(tag, "-", 2)[0]
}

// gather reads the demo MCP server's call log and every transcript.
func gather(ctx context.Context, cl *cluster, c *client, convs []*conv) (*evidence, error) {
	ev := &evidence{calls: map[string]int{}, callConv: map[string]string{}, transcripts: map[string]transcript{},
		convTag: map[string]string{}, responses: map[string]*upstreamResponse{}, emulator: cl.emulator}
	var log struct {
		Calls []struct {
			Tool      string          `json:"tool"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"calls"`
	}
	if err := getJSON(ctx, cl.demo+"/calls", &log); err != nil {
		return nil, err
	}
	for _, call := range log.Calls {
		k := canon(call.Tool, call.Arguments)
		ev.calls[k]++
		ev.callConv[k] = convOf(k)
	}
	for _, cv := range convs {
		tr, err := c.transcript(ctx, cv.id)
		if err != nil {
			return nil, err
		}
		ev.transcripts[cv.id] = tr
		ev.convTag[cv.id] = fmt.Sprintf("c%d", cv.idx)
	}
	return ev, nil
}

func getJSON(ctx context.Context, url string, out any) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %d %s", url, res.StatusCode, raw)
	}
	return json.Unmarshal(raw, out)
}

// response returns the emulator's stored response id, or nil when it has none.
func (ev *evidence) response(ctx context.Context, id string) *upstreamResponse {
	if r, ok := ev.responses[id]; ok {
		return r
	}
	var r upstreamResponse
	if err := getJSON(ctx, ev.emulator+"responses/"+id, &r); err != nil {
		ev.responses[id] = nil
		return nil
	}
	ev.responses[id] = &r
	return &r
}

// callKey finds the identity of an mcp_call item: its own arguments, or,
// for an interrupted call (stored without them), the provider's.
func (ev *evidence) callKey(ctx context.Context, it item) string {
	if len(it.Arguments) > 0 && !it.Interrupted {
		return canon(it.Name, it.Arguments)
	}
	if r := ev.response(ctx, it.ResponseID); r != nil {
		for _, o := range r.Output {
			if o.ID == it.ID {
				return canon(o.Name, o.Arguments)
			}
		}
	}
	return ""
}

// checkAll evaluates every invariant on the evidence and the load's ledger.
func checkAll(ctx context.Context, ev *evidence, l *load) []*invariant {
	twice := &invariant{name: "no tool ran twice (calls per unique arguments at the MCP server)"}
	asked := map[string]string{} // call identity -> the conversation and its approval, for the messages
	for _, cid := range sortedKeys(ev.transcripts) {
		for _, it := range ev.transcripts[cid].Items {
			if a := it.Approval; it.Type == "mcp_approval_request" && a != nil {
				asked[canon(a.ToolName, a.Arguments)] = fmt.Sprintf("%s, approval %s %s (answered_in %s)", cid, a.ID, a.State, deref(a.AnsweredIn))
			}
		}
	}
	for _, k := range sortedKeys(ev.calls) {
		twice.check(ev.calls[k] <= 1, "%s ran %d times (%s)", k, ev.calls[k], orDash(asked[k]))
	}

	approvedRan := &invariant{name: "every approved tool ran or is outcome_unknown; none ran that was denied, superseded, expired or pending"}
	known := &invariant{name: "gateway: every approved call ran once and is recorded with its result, or is recorded as not run (outcome_unknown only for a call the face forwarded and never finished)"}
	matches := &invariant{name: "every transcript matches what the provider did (MCP call log, stored responses, response chain)"}
	for _, cid := range sortedKeys(ev.transcripts) {
		tr := ev.transcripts[cid]
		approvals := map[string]approval{} // by call identity
		byID := map[string]approval{}
		for _, it := range tr.Items {
			if it.Type != "mcp_approval_request" || it.Approval == nil {
				continue
			}
			a := *it.Approval
			k := canon(a.ToolName, a.Arguments)
			approvals[k], byID[a.ID] = a, a
			if l.plan.gateway {
				n := ev.calls[k]
				switch a.State {
				case "approved":
					// Recorded with its result: the face's record of the call is
					// done (its result stored; the card shows it, whether or not
					// the provider's own item reached the transcript).
					known.check(n == 1 && a.Call != nil && a.Call.State == "done",
						"%s: %s approved (%s), ran %d times, face record %v", cid, k, a.ID, n, a.Call)
				case "not_run":
					known.check(n == 0, "%s: %s is recorded as not run, but the MCP server ran it %d times", cid, k, n)
				case "outcome_unknown":
					known.check(a.Call != nil && a.Call.State == "running" && n <= 1,
						"%s: %s is outcome_unknown (%s), but the face's record is %v (ran %d times)", cid, k, deref(a.Reason), a.Call, n)
				}
			}
			switch n := ev.calls[k]; a.State {
			case "approved":
				approvedRan.check(n >= 1, "%s: %s approved (answered_in %s) but it never ran, and the approval does not say outcome_unknown", cid, k, deref(a.AnsweredIn))
			case "outcome_unknown":
				approvedRan.check(true, "")
			default:
				approvedRan.check(n == 0, "%s: %s ran %d times although its approval is %s", cid, k, n, a.State)
			}
		}
		shown := map[string]bool{}   // call identities the transcript shows as finished
		mayHave := map[string]bool{} // or as interrupted: "may have run"
		for _, it := range tr.Items {
			if it.Type != "mcp_call" {
				continue
			}
			k := ev.callKey(ctx, it)
			if it.Interrupted {
				mayHave[k] = true
				if a, ok := byID[it.ApprovalRequestID]; ok {
					mayHave[canon(a.ToolName, a.Arguments)] = true
				}
				continue
			}
			shown[k] = true
			if it.Output != nil {
				matches.check(ev.calls[k] >= 1, "%s: the transcript shows %s with output %q, but the MCP server never ran it", cid, k, *it.Output)
			}
			matches.check(ev.providerHas(ctx, it, k), "%s: the transcript's call %s (%s in %s) is not in the provider's stored response", cid, it.ID, k, it.ResponseID)
		}
		for _, k := range sortedKeys(ev.calls) {
			if ev.callConv[k] != ev.convTag[cid] {
				continue
			}
			a, asked := approvals[k]
			state := "none: it ran without asking"
			if asked {
				state = a.State
			}
			// Gateway mode: an approved call the face ran is shown on its
			// approval with the face's record (its result), even when the
			// provider's item never reached the transcript (a cut stream).
			recorded := l.plan.gateway && asked && a.State == "approved" && a.Call != nil && a.Call.State == "done"
			matches.check(shown[k] || mayHave[k] || recorded || (asked && a.State == "outcome_unknown") || blindlyInterrupted(tr, tagRE.FindString(k)),
				"%s: the MCP server ran %s, but the transcript neither shows the call nor says it may have run (its approval: %s)", cid, k, state)
		}
		if last := tr.Conversation.LastResponseID; last != nil {
			ids := map[string]bool{}
			for _, it := range tr.Items {
				if it.Type == "mcp_call" && !it.Interrupted {
					ids[it.ID] = true
				}
			}
			for id, hops := *last, 0; id != "" && hops < 200; hops++ {
				r := ev.response(ctx, id)
				if !matches.checkf(r != nil, "%s: its last response %s (or one before it) is not stored by the provider", cid, id) {
					break
				}
				for _, o := range r.Output {
					if o.Type == "mcp_call" {
						matches.check(ids[o.ID], "%s: the provider's context holds call %s (%s in %s), the transcript does not", cid, o.ID, canon(o.Name, o.Arguments), r.ID)
					}
				}
				id = ""
				if r.PreviousResponseID != nil {
					id = *r.PreviousResponseID
				}
			}
		}
	}

	blocked := &invariant{name: fmt.Sprintf("no conversation blocked longer than the lease (%s) plus %s after its owner died", l.plan.leaseTTL, l.plan.margin)}
	for _, b := range l.blocked {
		blocked.check(b.cleared && b.waited <= l.plan.leaseTTL+l.plan.margin,
			"%s (%s, replica %s) blocked %s%s", b.conv, b.why, orDash(b.replica), b.waited.Round(100*time.Millisecond), map[bool]string{true: "", false: " and still blocked"}[b.cleared])
	}
	for _, cid := range sortedKeys(ev.transcripts) {
		blocked.check(!ev.transcripts[cid].Conversation.Streaming, "%s still streaming at the end", cid)
	}

	decidable := &invariant{name: "every approval request of a completed turn could be decided (not superseded behind the person's back)"}
	refused := map[string]refusal{}
	for _, r := range l.refused {
		refused[r.approval] = r
	}
	for _, cv := range l.convs {
		for _, id := range sortedKeys(cv.completed) {
			r, bad := refused[id]
			decidable.check(!bad, "%s: deciding %s answered %s", r.conv, id, r.answer)
		}
	}

	usable := &invariant{name: "every conversation answers a new message at the end"}
	for _, cv := range l.convs {
		why, bad := l.unusable[cv.id]
		usable.check(!bad, "%s did not answer: %s", cv.id, why)
	}
	invs := []*invariant{twice, approvedRan, matches, blocked, decidable, usable}
	if l.plan.gateway {
		invs = append(invs, known)
	}
	return invs
}

// blindlyInterrupted says whether the turn that sent tag's message ended
// as interrupted before Toolgate learnt anything of its response: then
// nobody can know which of its calls ran, and the transcript saying the
// turn was interrupted is all it can say.
func blindlyInterrupted(tr transcript, tag string) bool {
	var seg []item
	for _, it := range tr.Items {
		if it.Type == "user_message" {
			if seg != nil {
				break
			}
			if strings.Contains(it.Text, `"`+tag+`"`) {
				seg = []item{}
			}
			continue
		}
		if seg != nil {
			seg = append(seg, it)
		}
	}
	interrupted := false
	for _, it := range seg {
		if it.ResponseID != "" {
			return false
		}
		if it.Type == "error" && it.TurnError != nil && it.TurnError.Code == "interrupted" {
			interrupted = true
		}
	}
	return interrupted
}

// checkf is check that also reports the outcome.
func (iv *invariant) checkf(ok bool, format string, args ...any) bool {
	iv.check(ok, format, args...)
	return ok
}

// providerHas says whether the provider's stored response holds the call
// as the transcript shows it (same id, tool, arguments and output).
func (ev *evidence) providerHas(ctx context.Context, it item, key string) bool {
	r := ev.response(ctx, it.ResponseID)
	if r == nil {
		return false
	}
	for _, o := range r.Output {
		if o.Type == "mcp_call" && o.ID == it.ID {
			sameOutput := it.Output == nil || (o.Output != nil && *o.Output == *it.Output)
			return canon(o.Name, o.Arguments) == key && sameOutput
		}
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func deref(s *string) string {
	if s == nil {
		return "null"
	}
	return *s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
