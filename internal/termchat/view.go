package termchat

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// viewer shows one stream's events.
type viewer struct {
	s       *session
	asked   map[string]approval // approval.required, by id
	order   []string
	texting string // the message item whose deltas are being written
	shown   map[string]bool
	// running holds the calls the provider started and that have not
	// finished, by item id: if the turn ends first, they may have run.
	running map[string]string
}

// unfinished says, when a turn ends early, which started calls may have run.
func (v *viewer) unfinished() {
	for _, call := range v.running {
		v.s.out.linef("· %s may have run: the turn ended before the provider reported its result", call)
	}
	v.running = nil
}

// event shows one event; end says it was the terminal one.
func (v *viewer) event(ev Event) (streamResult, bool) {
	t := v.s.out
	switch ev.Name {
	case "conversation":
		var p struct {
			ConversationID string `json:"conversation_id"`
			Offline        bool   `json:"offline"`
		}
		if json.Unmarshal([]byte(ev.Data), &p) == nil && p.ConversationID != "" {
			v.s.conv = p.ConversationID
		}
		if p.ConversationID != "" && p.ConversationID != v.s.cfg.Conversation && p.ConversationID != v.s.announced {
			v.s.announced = p.ConversationID
			t.linef("(conversation %s; continue it later with --conversation %s)", line(p.ConversationID), line(p.ConversationID))
		}
	case "text.delta":
		var p struct {
			ItemID string `json:"item_id"`
			Delta  string `json:"delta"`
		}
		if json.Unmarshal([]byte(ev.Data), &p) != nil {
			return streamResult{}, false
		}
		t.text(p.Delta, v.texting != p.ItemID)
		v.texting = p.ItemID
		if v.shown == nil {
			v.shown = map[string]bool{}
		}
		v.shown[p.ItemID] = true
	case "tool.started":
		var p struct {
			ServerLabel string `json:"server_label"`
			ToolName    string `json:"tool_name"`
		}
		var id struct {
			ItemID string `json:"item_id"`
		}
		if json.Unmarshal([]byte(ev.Data), &p) == nil && json.Unmarshal([]byte(ev.Data), &id) == nil && p.ToolName != "" {
			t.linef("· running %s on %s…", line(p.ToolName), line(p.ServerLabel))
			v.texting = ""
			if v.running == nil {
				v.running = map[string]string{}
			}
			v.running[id.ItemID] = line(p.ToolName) + " on " + line(p.ServerLabel)
		}
	case "item.done":
		v.item(string(ev.Data))
	case "approval.required":
		var a approval
		if json.Unmarshal([]byte(ev.Data), &a) == nil && a.ID != "" {
			if _, seen := v.asked[a.ID]; !seen {
				v.order = append(v.order, a.ID)
			}
			v.asked[a.ID] = a
		}
	case "decision.recorded":
		v.decision(string(ev.Data))
	case "completed":
		var p struct {
			PendingIDs []string `json:"pending_approval_ids"`
		}
		_ = json.Unmarshal([]byte(ev.Data), &p)
		t.newline()
		return v.pending(p.PendingIDs), true
	case "failed":
		var p struct {
			Message string `json:"message"`
		}
		_ = json.Unmarshal([]byte(ev.Data), &p)
		v.unfinished()
		v.s.errorf("the model's response failed: %s", line(p.Message))
		return streamResult{outcome: turnFailed}, true
	case "error":
		var p struct {
			Code      string `json:"code"`
			Message   string `json:"message"`
			Retryable bool   `json:"retryable"`
		}
		_ = json.Unmarshal([]byte(ev.Data), &p)
		v.unfinished()
		if p.Code == "cancelled" {
			t.linef("Cancelled.")
			return streamResult{outcome: turnCancelled}, true
		}
		if p.Code == stoppedCode {
			// The person's own doing: the turn is over, the prompt is back.
			t.linef("Stopped: nothing was sent to the model. Your denials go with your next message.")
			return streamResult{outcome: turnDone}, true
		}
		hint := ""
		if p.Retryable {
			hint = " (sending it again may work)"
		}
		v.s.errorf("the turn stopped: %s [%s]%s", line(p.Message), line(p.Code), hint)
		return streamResult{outcome: turnFailed}, true
	}
	return streamResult{}, false
}

// item shows a finished transcript item: the whole answer when its deltas
// did not arrive, and one line per tool call.
func (v *viewer) item(data string) {
	var p struct {
		Item struct {
			Type        string          `json:"type"`
			ID          string          `json:"id"`
			Text        string          `json:"text"`
			ServerLabel string          `json:"server_label"`
			Name        string          `json:"name"`
			Output      *string         `json:"output"`
			Error       json.RawMessage `json:"error"`
			AllowedBy   *struct {
				Kind string `json:"kind"`
			} `json:"allowed_by"`
			Call *faceCall `json:"call"`
		} `json:"item"`
	}
	if json.Unmarshal([]byte(data), &p) != nil {
		return
	}
	t := v.s.out
	it := p.Item
	switch it.Type {
	case "message":
		if !v.shown[it.ID] {
			t.text(it.Text, true)
		}
		v.texting = ""
		t.newline()
	case "mcp_call":
		why := ""
		if it.AllowedBy != nil {
			switch it.AllowedBy.Kind {
			case "approval":
				why = " (approved)"
			case "conversation":
				why = " (allowed for this conversation)"
			case "grant":
				why = " (allowed for a while)"
			case "policy":
				why = " (runs without asking)"
			}
		}
		delete(v.running, it.ID)
		if it.Call != nil {
			// Through Toolgate's MCP face: its record says what happened.
			if it.Call.State == "refused" || it.Call.State == "not_run" {
				why = ""
			}
			t.linef("%s", it.Call.callLine(line(it.Name)+" on "+line(it.ServerLabel), why))
		} else if len(it.Error) > 0 && string(it.Error) != "null" {
			t.linef("· %s on %s failed%s", line(it.Name), line(it.ServerLabel), why)
		} else {
			t.linef("· ran %s on %s%s", line(it.Name), line(it.ServerLabel), why)
		}
		v.texting = ""
	}
}

func (v *viewer) decision(data string) {
	var p struct {
		ServerLabel   string  `json:"server_label"`
		ToolName      string  `json:"tool_name"`
		State         string  `json:"state"`
		Reason        *string `json:"reason"`
		Scope         *string `json:"scope"`
		Stopped       bool    `json:"stopped"`
		PolicyChanged *struct {
			Policy string `json:"policy"`
		} `json:"policy_changed"`
	}
	if json.Unmarshal([]byte(data), &p) != nil {
		return
	}
	var b strings.Builder
	if o := decisionOutcome(p.State); o != "" {
		// Toolgate's reason repeats this; the sentence says what happened and what to do.
		v.s.out.linef("· %s on %s: %s", line(p.ToolName), line(p.ServerLabel), o)
		return
	}
	fmt.Fprintf(&b, "· %s on %s: %s", line(p.ToolName), line(p.ServerLabel), line(p.State))
	if p.Scope != nil && *p.Scope == "conversation" {
		b.WriteString(", for the rest of this conversation")
	}
	if p.Scope != nil && *p.Scope == "hour" {
		b.WriteString(", for 1 hour in all your conversations")
	}
	if p.Stopped {
		b.WriteString(" (stopped)")
	}
	if p.PolicyChanged != nil {
		switch p.PolicyChanged.Policy {
		case "never":
			b.WriteString(", and it will not ask you again (your policy is now never)")
		case "blocked":
			b.WriteString(", and it is blocked for you (your policy is now blocked)")
		default:
			fmt.Fprintf(&b, " (your policy is now %s)", line(p.PolicyChanged.Policy))
		}
	}
	if p.Reason != nil && *p.Reason != "" {
		fmt.Fprintf(&b, ": \"%s\"", line(*p.Reason))
	}
	v.s.out.linef("%s", b.String())
}

// pending are the approval requests a completed turn left waiting, in the
// order they were asked; requests this stream did not show (decided one by
// one elsewhere) are read from the conversation.
func (v *viewer) pending(ids []string) streamResult {
	if len(ids) == 0 {
		return streamResult{outcome: turnDone}
	}
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	var out []approval
	for _, id := range v.order {
		if want[id] {
			out = append(out, v.asked[id])
			delete(want, id)
		}
	}
	if len(want) > 0 && v.s.conv != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		st, err := conversation(ctx, v.s.c, v.s.conv)
		if err != nil {
			return streamResult{outcome: v.s.explain(err)}
		}
		for _, a := range st.PendingApprovals {
			if want[a.ID] {
				out = append(out, a)
			}
		}
	}
	return streamResult{outcome: turnDone, pending: out}
}
