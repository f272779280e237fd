package policy

import (
	"bytes"
	"encoding/json"
	"time"
)

// The sources an effective policy can have beyond tool, server and global
// (see Resolve for the one precedence).
const (
	// FromUser: the person's own (personal) policy decided.
	FromUser Source = "user"
	// FromLocked: a locked workspace setting decided; personal policies
	// cannot loosen it.
	FromLocked Source = "locked"
	// FromNew: the tool appeared after its server's first discovery and
	// nobody has set its policy yet, so it asks.
	FromNew Source = "new"
	// FromChanged: the tool was allowed (never) for a definition that has
	// changed since, so it asks again.
	FromChanged Source = "changed"
	// FromAskEverything: an admin's "ask for everything" switch is on, so a
	// tool that would run without asking asks.
	FromAskEverything Source = "ask_everything"
)

// The reasons a tool asks, in AsksBecause.
const (
	ReasonPolicy      = "policy"        // a policy or default says always
	ReasonNotReadOnly = "not_read_only" // ask_unless_read_only and the tool is not declared read-only
	ReasonNewTool     = "new_tool"      // first seen after its server's first discovery
	ReasonChanged     = "changed"       // changed since it was allowed
	// ReasonReadOnlyChanged: ask_unless_read_only would run the tool because
	// it says readOnlyHint, but its definition changed after Toolgate first
	// saw it, so the hint is not trusted: a server cannot turn a tool that
	// asked into one that runs by flipping a hint.
	ReasonReadOnlyChanged = "read_only_changed"
	// ReasonReadOnlyClaimed: ask_unless_read_only would run the tool because
	// it says readOnlyHint, but nobody has accepted the server's read-only
	// hints yet (its read_only_hints is "claimed"): a hint is the server's
	// claim until an admin trusts it.
	ReasonReadOnlyClaimed = "read_only_claimed"
	// ReasonAskEverything: the admin's "ask for everything" switch is on.
	ReasonAskEverything = "ask_everything"
	// ReasonRules: argument rules apply to the tool and asked (or none
	// held and its policy asks): the card shows the rules checked.
	ReasonRules = "rules"
)

// AsksBecause says why a tool asks before it runs.
type AsksBecause struct {
	Reason string `json:"reason"`
	// Fields lists what changed, for ReasonChanged.
	Fields []string `json:"fields,omitempty"`
}

// Changed says how a tool's definition differs from the one it was allowed for.
type Changed struct {
	Fields []string   `json:"fields"`
	Since  *time.Time `json:"since"`
}

// Definition is what a person sees of a tool when they allow it: a "never"
// records it, so a later change can be shown field by field.
type Definition struct {
	Title       string          `json:"title"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
	Annotations Annotations     `json:"annotations"`
}

// DefinitionOf returns the parts of t a grant records.
func DefinitionOf(t DiscoveredTool) Definition {
	return Definition{Title: t.Title, Description: t.Description, InputSchema: t.InputSchema, Annotations: t.Annotations}
}

// ChangedFields lists, in a fixed order, the fields in which now differs
// from then: title, description, input_schema, annotations.
func ChangedFields(then, now Definition) []string {
	out := []string{}
	if then.Title != now.Title {
		out = append(out, "title")
	}
	if then.Description != now.Description {
		out = append(out, "description")
	}
	if !sameJSON(then.InputSchema, now.InputSchema) {
		out = append(out, "input_schema")
	}
	a, _ := json.Marshal(then.Annotations)
	b, _ := json.Marshal(now.Annotations)
	if !bytes.Equal(a, b) {
		out = append(out, "annotations")
	}
	return out
}

func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if len(a) > 0 {
		_ = json.Unmarshal(a, &x)
	}
	if len(b) > 0 {
		_ = json.Unmarshal(b, &y)
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return bytes.Equal(ja, jb)
}

// Explicit is an explicit tool policy in one layer (workspace or personal).
type Explicit struct {
	Policy Policy
	Locked bool // workspace layer only
	// GrantedDigest and GrantedDefinition are the tool as it was when the
	// policy was set to never ("" and nil otherwise).
	GrantedDigest     string
	GrantedDefinition *Definition
}

// ResolveInput is everything the precedence looks at for one user, one
// tool, one server.
type ResolveInput struct {
	ServerGone     bool // the server was deleted
	ServerDisabled bool
	AskEverything  bool // the admin's switch: nothing runs without asking

	Global        Policy // never|always|blocked|ask_unless_read_only
	GlobalLocked  bool
	ServerDefault *Policy // nil: the global default applies
	ServerLocked  bool
	// HintsTrusted: an admin accepted the server's read-only hints
	// (read_only_hints "trusted"); until then readOnlyHint runs nothing.
	HintsTrusted bool
	Workspace    *Explicit // the workspace tool policy (tool_policies)
	User         *Explicit // the user's personal policy (user_tool_policies)

	// The tool as discovery knows it. Digest "" means never discovered.
	ReadOnly   *bool // annotations.readOnlyHint
	New        bool  // first seen after the server's first discovery
	Digest     string
	Definition Definition
	ChangedAt  *time.Time // definition_changed_at
	FirstSeen  *time.Time // first_seen_at
}

// Resolution is a tool's effective policy for one user and why.
type Resolution struct {
	Policy Policy
	Source Source
	Locked bool // the workspace setting that applies is locked
	// AskLock is the level (tool, server, global) of an admin's lock at
	// always that the result comes from: every call asks, and nothing a
	// person or a machine does loosens it (a grant, remember, a rule, a
	// hook); "" when the tool is not locked at Ask.
	AskLock     Source
	AsksBecause *AsksBecause
	Changed     *Changed
}

// Workspace is the workspace's effective policy for the tool, before any
// personal policy: rule 3 of the precedence. The source is the level it
// came from (tool, server or global).
func Workspace(in ResolveInput) Resolution {
	var w Resolution
	switch {
	case in.Workspace != nil:
		w = Resolution{Policy: in.Workspace.Policy, Source: FromTool, Locked: in.Workspace.Locked}
	case in.ServerDefault != nil:
		w = Resolution{Policy: *in.ServerDefault, Source: FromServer, Locked: in.ServerLocked}
	default:
		w = Resolution{Policy: in.Global, Source: FromGlobal, Locked: in.GlobalLocked}
	}
	if w.Policy == AskUnlessReadOnly {
		switch {
		case in.ReadOnly != nil && *in.ReadOnly && in.HintsTrusted:
			w.Policy = Never
		case in.ReadOnly != nil && *in.ReadOnly:
			w.Policy, w.AsksBecause = Always, &AsksBecause{Reason: ReasonReadOnlyClaimed}
		default:
			w.Policy, w.AsksBecause = Always, &AsksBecause{Reason: ReasonNotReadOnly}
		}
	}
	if w.Policy == Always && w.AsksBecause == nil {
		w.AsksBecause = &AsksBecause{Reason: ReasonPolicy}
	}
	return w
}

// Resolve is the one precedence (docs/policies.md, "Policies"):
//
//  1. a disabled or deleted server blocks every tool (source server);
//  2. the workspace's effective policy W: the workspace tool policy, else
//     the server default, else the global default; ask_unless_read_only
//     resolves per tool (readOnlyHint true: never, else always);
//  3. W blocked is final;
//  4. a personal policy P applies: when W is locked only if stricter
//     (source user), else W holds (source locked); unlocked, P (source user);
//  5. no personal policy: W (source its level, or locked);
//  6. only tightening, last: a never for a new tool nobody has set a policy
//     for asks (new); a never from an explicit policy granted for another
//     definition asks again (changed); a never that only the readOnlyHint
//     gave, for a tool whose definition changed after it was first seen,
//     asks (changed, read_only_changed).
func Resolve(in ResolveInput) Resolution {
	if in.ServerGone || in.ServerDisabled {
		return Resolution{Policy: Blocked, Source: FromServer}
	}
	r := resolve(in)
	if in.AskEverything && r.Policy == Never {
		// 7. The admin's switch, last and only tightening: whatever allowed
		// the tool, it asks while the switch is on.
		r = Resolution{Policy: Always, Source: FromAskEverything, Locked: true, AsksBecause: &AsksBecause{Reason: ReasonAskEverything}}
	}
	return r
}

func resolve(in ResolveInput) Resolution {
	w := Workspace(in)
	if w.Policy == Blocked {
		return w
	}
	r := w
	var from *Explicit // the explicit never the result came from, if any
	if w.Source == FromTool {
		from = in.Workspace
	}
	switch {
	case in.User != nil && w.Locked:
		if Stricter(in.User.Policy, w.Policy) {
			r = Resolution{Policy: in.User.Policy, Source: FromUser, Locked: true}
			from = in.User
		} else {
			r.Source = FromLocked
		}
	case in.User != nil:
		r = Resolution{Policy: in.User.Policy, Source: FromUser}
		from = in.User
	case w.Locked:
		r.Source = FromLocked
	}
	if r.Policy == Always && r.AsksBecause == nil {
		r.AsksBecause = &AsksBecause{Reason: ReasonPolicy}
	}
	if r.Policy != Always {
		r.AsksBecause = nil
	}
	if r.Policy == Always && w.Locked && w.Policy == Always {
		r.AskLock = w.Source
	}
	if r.Policy != Never {
		return r
	}
	if in.New && in.Workspace == nil && in.User == nil {
		r.Policy, r.Source, r.AsksBecause = Always, FromNew, &AsksBecause{Reason: ReasonNewTool}
		return r
	}
	if from != nil && from.Policy == Never && in.Digest != "" && from.GrantedDigest != in.Digest {
		fields := []string{}
		if from.GrantedDefinition != nil {
			fields = ChangedFields(*from.GrantedDefinition, in.Definition)
		}
		r.Policy, r.Source = Always, FromChanged
		r.AsksBecause = &AsksBecause{Reason: ReasonChanged, Fields: fields}
		r.Changed = &Changed{Fields: fields, Since: in.ChangedAt}
		return r
	}
	if from == nil && hintedReadOnly(in) && in.ChangedAt != nil && in.FirstSeen != nil && in.ChangedAt.After(*in.FirstSeen) {
		r.Policy, r.Source = Always, FromChanged
		r.AsksBecause = &AsksBecause{Reason: ReasonReadOnlyChanged}
		r.Changed = &Changed{Fields: []string{}, Since: in.ChangedAt}
	}
	return r
}

// hintedReadOnly reports whether the workspace's policy for the tool is
// ask_unless_read_only (at the level it comes from), so that a never is
// the server's readOnlyHint speaking, not a person.
func hintedReadOnly(in ResolveInput) bool {
	switch {
	case in.Workspace != nil:
		return false
	case in.ServerDefault != nil:
		return *in.ServerDefault == AskUnlessReadOnly
	default:
		return in.Global == AskUnlessReadOnly
	}
}

// strictness orders the policies: never < always < blocked.
func strictness(p Policy) int {
	switch p {
	case Never:
		return 0
	case Always:
		return 1
	default:
		return 2
	}
}

// Stricter reports whether a asks more than b (never < always < blocked).
func Stricter(a, b Policy) bool { return strictness(a) > strictness(b) }
