package policy

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func ptr[T any](v T) *T { return &v }

var (
	readOnlyTool = DiscoveredTool{Name: "get_forecast", Description: "Reads a forecast",
		Annotations: Annotations{ReadOnlyHint: ptr(true)}}
	writeTool = DiscoveredTool{Name: "delete_forecast", Description: "Deletes a forecast",
		Annotations: Annotations{ReadOnlyHint: ptr(false), DestructiveHint: ptr(true)}}
	noHintsTool = DiscoveredTool{Name: "send_alert", Description: "Sends an alert"}
	changedAt   = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
)

// forTool fills in what discovery knows about d, on a server whose
// read-only hints an admin accepted (claimedTool: not yet).
func forTool(in ResolveInput, d DiscoveredTool) ResolveInput {
	in.ReadOnly, in.Digest, in.Definition, in.ChangedAt = d.Annotations.ReadOnlyHint, d.Digest(), DefinitionOf(d), &changedAt
	in.HintsTrusted = true
	return in
}

func claimedTool(in ResolveInput, d DiscoveredTool) ResolveInput {
	in = forTool(in, d)
	in.HintsTrusted = false
	return in
}

// grantedFor is an explicit never granted for d as it was.
func grantedFor(d DiscoveredTool, locked bool) *Explicit {
	def := DefinitionOf(d)
	return &Explicit{Policy: Never, Locked: locked, GrantedDigest: d.Digest(), GrantedDefinition: &def}
}

func explicit(p Policy, locked bool) *Explicit { return &Explicit{Policy: p, Locked: locked} }

var (
	asksPolicy      = &AsksBecause{Reason: ReasonPolicy}
	asksNotReadOnly = &AsksBecause{Reason: ReasonNotReadOnly}
	asksNew         = &AsksBecause{Reason: ReasonNewTool}
)

func TestResolve_Precedence(t *testing.T) {
	ro, rw, none := forTool(ResolveInput{Global: Never}, readOnlyTool), forTool(ResolveInput{Global: Never}, writeTool),
		forTool(ResolveInput{Global: Never}, noHintsTool)
	with := func(in ResolveInput, f func(*ResolveInput)) ResolveInput { f(&in); return in }
	edited := writeTool
	edited.Description = "Deletes every forecast"
	edited.InputSchema = json.RawMessage(`{"type":"object","properties":{"all":{"type":"boolean"}}}`)
	cases := []struct {
		name string
		in   ResolveInput
		want Resolution
	}{
		// 1. A disabled or deleted server blocks everything, whatever else says.
		{"server deleted", with(ro, func(in *ResolveInput) { in.ServerGone = true; in.User = explicit(Never, false) }),
			Resolution{Policy: Blocked, Source: FromServer}},
		{"server disabled beats a personal never", with(ro, func(in *ResolveInput) { in.ServerDisabled = true; in.User = explicit(Never, false) }),
			Resolution{Policy: Blocked, Source: FromServer}},
		// 2-4. The workspace's effective policy: tool, else server, else global.
		{"global never", ro, Resolution{Policy: Never, Source: FromGlobal}},
		{"global always", with(ro, func(in *ResolveInput) { in.Global = Always }),
			Resolution{Policy: Always, Source: FromGlobal, AsksBecause: asksPolicy}},
		{"global blocked", with(ro, func(in *ResolveInput) { in.Global = Blocked }), Resolution{Policy: Blocked, Source: FromGlobal}},
		{"server default beats global", with(ro, func(in *ResolveInput) { in.ServerDefault = ptr(Always) }),
			Resolution{Policy: Always, Source: FromServer, AsksBecause: asksPolicy}},
		{"workspace tool policy beats server", with(ro, func(in *ResolveInput) {
			in.ServerDefault, in.Workspace = ptr(Blocked), grantedFor(readOnlyTool, false)
		}), Resolution{Policy: Never, Source: FromTool}},
		{"workspace tool blocked", with(ro, func(in *ResolveInput) { in.Workspace = explicit(Blocked, false) }),
			Resolution{Policy: Blocked, Source: FromTool}},
		// ask_unless_read_only, global and server, readOnlyHint true/false/absent.
		{"ask_unless_read_only global, readOnlyHint true", with(ro, func(in *ResolveInput) { in.Global = AskUnlessReadOnly }),
			Resolution{Policy: Never, Source: FromGlobal}},
		{"ask_unless_read_only global, readOnlyHint false", with(rw, func(in *ResolveInput) { in.Global = AskUnlessReadOnly }),
			Resolution{Policy: Always, Source: FromGlobal, AsksBecause: asksNotReadOnly}},
		{"ask_unless_read_only global, no hints", with(none, func(in *ResolveInput) { in.Global = AskUnlessReadOnly }),
			Resolution{Policy: Always, Source: FromGlobal, AsksBecause: asksNotReadOnly}},
		{"ask_unless_read_only server, readOnlyHint true", with(ro, func(in *ResolveInput) { in.Global, in.ServerDefault = Blocked, ptr(AskUnlessReadOnly) }),
			Resolution{Policy: Never, Source: FromServer}},
		{"ask_unless_read_only server, readOnlyHint false", with(rw, func(in *ResolveInput) { in.ServerDefault = ptr(AskUnlessReadOnly) }),
			Resolution{Policy: Always, Source: FromServer, AsksBecause: asksNotReadOnly}},
		{"ask_unless_read_only server, no hints", with(none, func(in *ResolveInput) { in.ServerDefault = ptr(AskUnlessReadOnly) }),
			Resolution{Policy: Always, Source: FromServer, AsksBecause: asksNotReadOnly}},
		{"ask_unless_read_only, tool never discovered", ResolveInput{Global: AskUnlessReadOnly},
			Resolution{Policy: Always, Source: FromGlobal, AsksBecause: asksNotReadOnly}},
		// 5. Personal policies, unlocked: they apply either way.
		{"personal never loosens unlocked always", with(rw, func(in *ResolveInput) {
			in.Global, in.User = Always, grantedFor(writeTool, false)
		}), Resolution{Policy: Never, Source: FromUser}},
		{"personal never loosens unlocked not-read-only", with(rw, func(in *ResolveInput) {
			in.Global, in.User = AskUnlessReadOnly, grantedFor(writeTool, false)
		}), Resolution{Policy: Never, Source: FromUser}},
		{"personal always tightens unlocked never", with(ro, func(in *ResolveInput) { in.User = explicit(Always, false) }),
			Resolution{Policy: Always, Source: FromUser, AsksBecause: asksPolicy}},
		{"personal blocked", with(ro, func(in *ResolveInput) { in.User = explicit(Blocked, false) }),
			Resolution{Policy: Blocked, Source: FromUser}},
		{"personal policy beats workspace tool policy when unlocked", with(rw, func(in *ResolveInput) {
			in.Workspace, in.User = explicit(Always, false), grantedFor(writeTool, false)
		}), Resolution{Policy: Never, Source: FromUser}},
		// 3-4. An admin's block is final at every level, locked or not.
		{"admin's tool block beats personal never", with(ro, func(in *ResolveInput) {
			in.Workspace, in.User = explicit(Blocked, false), grantedFor(readOnlyTool, false)
		}), Resolution{Policy: Blocked, Source: FromTool}},
		{"server default blocked beats personal always", with(ro, func(in *ResolveInput) {
			in.ServerDefault, in.User = ptr(Blocked), explicit(Always, false)
		}), Resolution{Policy: Blocked, Source: FromServer}},
		{"global blocked beats personal never", with(ro, func(in *ResolveInput) { in.Global, in.User = Blocked, explicit(Never, false) }),
			Resolution{Policy: Blocked, Source: FromGlobal}},
		// 5. Locks at each level: personal can tighten, not loosen.
		{"locked tool always: personal never cannot loosen", with(rw, func(in *ResolveInput) {
			in.Workspace, in.User = explicit(Always, true), grantedFor(writeTool, false)
		}), Resolution{Policy: Always, Source: FromLocked, Locked: true, AskLock: FromTool, AsksBecause: asksPolicy}},
		{"locked tool always: personal blocked tightens", with(rw, func(in *ResolveInput) {
			in.Workspace, in.User = explicit(Always, true), explicit(Blocked, false)
		}), Resolution{Policy: Blocked, Source: FromUser, Locked: true}},
		{"locked tool never: personal always tightens", with(rw, func(in *ResolveInput) {
			in.Workspace, in.User = grantedFor(writeTool, true), explicit(Always, false)
		}), Resolution{Policy: Always, Source: FromUser, Locked: true, AsksBecause: asksPolicy}},
		{"locked tool never: personal never is the same", with(rw, func(in *ResolveInput) {
			in.Workspace, in.User = grantedFor(writeTool, true), grantedFor(writeTool, false)
		}), Resolution{Policy: Never, Source: FromLocked, Locked: true}},
		{"locked server default always: personal never cannot loosen", with(rw, func(in *ResolveInput) {
			in.ServerDefault, in.ServerLocked, in.User = ptr(Always), true, grantedFor(writeTool, false)
		}), Resolution{Policy: Always, Source: FromLocked, Locked: true, AskLock: FromServer, AsksBecause: asksPolicy}},
		{"locked server default never: personal blocked tightens", with(rw, func(in *ResolveInput) {
			in.ServerDefault, in.ServerLocked, in.User = ptr(Never), true, explicit(Blocked, false)
		}), Resolution{Policy: Blocked, Source: FromUser, Locked: true}},
		{"locked global always: personal never cannot loosen", with(rw, func(in *ResolveInput) {
			in.Global, in.GlobalLocked, in.User = Always, true, grantedFor(writeTool, false)
		}), Resolution{Policy: Always, Source: FromLocked, Locked: true, AskLock: FromGlobal, AsksBecause: asksPolicy}},
		{"locked global ask_unless_read_only, not read-only: personal never cannot loosen", with(rw, func(in *ResolveInput) {
			in.Global, in.GlobalLocked, in.User = AskUnlessReadOnly, true, grantedFor(writeTool, false)
		}), Resolution{Policy: Always, Source: FromLocked, Locked: true, AskLock: FromGlobal, AsksBecause: asksNotReadOnly}},
		{"locked global ask_unless_read_only, read-only: personal never is fine", with(ro, func(in *ResolveInput) {
			in.Global, in.GlobalLocked, in.User = AskUnlessReadOnly, true, grantedFor(readOnlyTool, false)
		}), Resolution{Policy: Never, Source: FromLocked, Locked: true}},
		// 6. No personal policy: a locked workspace setting says locked.
		{"locked global, no personal", with(ro, func(in *ResolveInput) { in.GlobalLocked = true }),
			Resolution{Policy: Never, Source: FromLocked, Locked: true}},
		{"locked server, no personal", with(rw, func(in *ResolveInput) { in.ServerDefault, in.ServerLocked = ptr(Always), true }),
			Resolution{Policy: Always, Source: FromLocked, Locked: true, AskLock: FromServer, AsksBecause: asksPolicy}},
		{"lock on a level that does not apply", with(ro, func(in *ResolveInput) {
			in.GlobalLocked, in.ServerDefault = true, ptr(Never)
		}), Resolution{Policy: Never, Source: FromServer}},
		{"locked blocked global", with(ro, func(in *ResolveInput) { in.Global, in.GlobalLocked = Blocked, true }),
			Resolution{Policy: Blocked, Source: FromGlobal, Locked: true}},
		// 7. New tools ask until someone sets their policy.
		{"new tool with default never asks", with(ro, func(in *ResolveInput) { in.New = true }),
			Resolution{Policy: Always, Source: FromNew, AsksBecause: asksNew}},
		{"new read-only tool under ask_unless_read_only asks", with(ro, func(in *ResolveInput) { in.New, in.Global = true, AskUnlessReadOnly }),
			Resolution{Policy: Always, Source: FromNew, AsksBecause: asksNew}},
		{"new tool under a locked never asks", with(ro, func(in *ResolveInput) { in.New, in.GlobalLocked = true, true }),
			Resolution{Policy: Always, Source: FromNew, Locked: true, AsksBecause: asksNew}},
		{"new tool with a workspace never runs", with(ro, func(in *ResolveInput) { in.New, in.Workspace = true, grantedFor(readOnlyTool, false) }),
			Resolution{Policy: Never, Source: FromTool}},
		{"new tool with a personal never runs", with(ro, func(in *ResolveInput) { in.New, in.User = true, grantedFor(readOnlyTool, false) }),
			Resolution{Policy: Never, Source: FromUser}},
		{"new tool with a personal always, default never: always from the user", with(ro, func(in *ResolveInput) {
			in.New, in.User = true, explicit(Always, false)
		}), Resolution{Policy: Always, Source: FromUser, AsksBecause: asksPolicy}},
		{"new tool blocked by default stays blocked", with(ro, func(in *ResolveInput) { in.New, in.Global = true, Blocked }),
			Resolution{Policy: Blocked, Source: FromGlobal}},
		{"new tool with a workspace never for another definition: changed", with(forTool(ResolveInput{Global: Never}, edited), func(in *ResolveInput) {
			in.New, in.Workspace = true, grantedFor(writeTool, false)
		}), Resolution{Policy: Always, Source: FromChanged, AsksBecause: &AsksBecause{Reason: ReasonChanged, Fields: []string{"description", "input_schema"}},
			Changed: &Changed{Fields: []string{"description", "input_schema"}, Since: &changedAt}}},
		// 7. A never granted for another definition asks again.
		{"workspace never, tool changed since", with(forTool(ResolveInput{Global: Never}, edited), func(in *ResolveInput) {
			in.Workspace = grantedFor(writeTool, false)
		}), Resolution{Policy: Always, Source: FromChanged, AsksBecause: &AsksBecause{Reason: ReasonChanged, Fields: []string{"description", "input_schema"}},
			Changed: &Changed{Fields: []string{"description", "input_schema"}, Since: &changedAt}}},
		{"personal never, tool changed since", with(forTool(ResolveInput{Global: Always}, edited), func(in *ResolveInput) {
			in.User = grantedFor(writeTool, false)
		}), Resolution{Policy: Always, Source: FromChanged, AsksBecause: &AsksBecause{Reason: ReasonChanged, Fields: []string{"description", "input_schema"}},
			Changed: &Changed{Fields: []string{"description", "input_schema"}, Since: &changedAt}}},
		{"locked workspace never, tool changed since", with(forTool(ResolveInput{Global: Never}, edited), func(in *ResolveInput) {
			in.Workspace = grantedFor(writeTool, true)
		}), Resolution{Policy: Always, Source: FromChanged, Locked: true, AsksBecause: &AsksBecause{Reason: ReasonChanged, Fields: []string{"description", "input_schema"}},
			Changed: &Changed{Fields: []string{"description", "input_schema"}, Since: &changedAt}}},
		{"unchanged never runs", with(rw, func(in *ResolveInput) { in.Workspace = grantedFor(writeTool, false) }),
			Resolution{Policy: Never, Source: FromTool}},
		{"a never with no recorded grant, tool discovered: changed, fields unknown", with(rw, func(in *ResolveInput) { in.Workspace = explicit(Never, false) }),
			Resolution{Policy: Always, Source: FromChanged, AsksBecause: &AsksBecause{Reason: ReasonChanged, Fields: []string{}},
				Changed: &Changed{Fields: []string{}, Since: &changedAt}}},
		{"a never for a tool not discovered runs (nothing to compare)", ResolveInput{Global: Always, Workspace: explicit(Never, false)},
			Resolution{Policy: Never, Source: FromTool}},
		{"a default never is not a grant: a changed tool keeps running", rw, Resolution{Policy: Never, Source: FromGlobal}},
		{"changed tool, personal never stale but workspace never current and locked: locked holds", with(forTool(ResolveInput{Global: Never}, edited), func(in *ResolveInput) {
			in.Workspace, in.User = grantedFor(edited, true), grantedFor(writeTool, false)
		}), Resolution{Policy: Never, Source: FromLocked, Locked: true}},
		{"changed tool under a stale personal never, workspace always unlocked", with(forTool(ResolveInput{Global: Never}, edited), func(in *ResolveInput) {
			in.Workspace, in.User = explicit(Always, false), grantedFor(writeTool, false)
		}), Resolution{Policy: Always, Source: FromChanged, AsksBecause: &AsksBecause{Reason: ReasonChanged, Fields: []string{"description", "input_schema"}},
			Changed: &Changed{Fields: []string{"description", "input_schema"}, Since: &changedAt}}},
		// 7c. A never that only the readOnlyHint gave is not trusted once the
		// tool changed after it was first seen: a server cannot make a tool
		// that asked run by flipping its hint.
		{"read-only hint, tool unchanged since first seen: runs", with(forTool(ResolveInput{Global: AskUnlessReadOnly}, readOnlyTool), func(in *ResolveInput) {
			in.FirstSeen = &changedAt
		}), Resolution{Policy: Never, Source: FromGlobal}},
		{"read-only hint, tool changed after first seen: asks", with(forTool(ResolveInput{Global: AskUnlessReadOnly}, readOnlyTool), func(in *ResolveInput) {
			in.FirstSeen = ptr(changedAt.Add(-time.Hour))
		}), Resolution{Policy: Always, Source: FromChanged, AsksBecause: &AsksBecause{Reason: ReasonReadOnlyChanged},
			Changed: &Changed{Fields: []string{}, Since: &changedAt}}},
		{"read-only hint through a locked server default, tool changed: asks", with(forTool(ResolveInput{Global: Never}, readOnlyTool), func(in *ResolveInput) {
			in.ServerDefault, in.ServerLocked, in.FirstSeen = ptr(AskUnlessReadOnly), true, ptr(changedAt.Add(-time.Hour))
		}), Resolution{Policy: Always, Source: FromChanged, Locked: true, AsksBecause: &AsksBecause{Reason: ReasonReadOnlyChanged},
			Changed: &Changed{Fields: []string{}, Since: &changedAt}}},
		{"changed tool, a person's never (not the hint) holds", with(forTool(ResolveInput{Global: AskUnlessReadOnly}, readOnlyTool), func(in *ResolveInput) {
			in.FirstSeen, in.User = ptr(changedAt.Add(-time.Hour)), grantedFor(readOnlyTool, false)
		}), Resolution{Policy: Never, Source: FromUser}},
		{"changed tool, a default of never (not the hint) keeps running", with(forTool(ResolveInput{Global: Never}, readOnlyTool), func(in *ResolveInput) {
			in.FirstSeen = ptr(changedAt.Add(-time.Hour))
		}), Resolution{Policy: Never, Source: FromGlobal}},
		// A read-only hint is the server's claim until an admin accepts it.
		{"read-only hint, claimed: asks", claimedTool(ResolveInput{Global: AskUnlessReadOnly}, readOnlyTool),
			Resolution{Policy: Always, Source: FromGlobal, AsksBecause: &AsksBecause{Reason: ReasonReadOnlyClaimed}}},
		{"read-only hint, claimed, server default: asks", with(claimedTool(ResolveInput{Global: Never}, readOnlyTool), func(in *ResolveInput) {
			in.ServerDefault = ptr(AskUnlessReadOnly)
		}), Resolution{Policy: Always, Source: FromServer, AsksBecause: &AsksBecause{Reason: ReasonReadOnlyClaimed}}},
		{"read-only hint, claimed, an explicit never still runs", with(claimedTool(ResolveInput{Global: AskUnlessReadOnly}, readOnlyTool), func(in *ResolveInput) {
			in.Workspace = grantedFor(readOnlyTool, false)
		}), Resolution{Policy: Never, Source: FromTool}},
		// A lock at Ask names its level; a personal always under a locked never does not.
		{"personal always under a locked never is no lock at Ask", with(rw, func(in *ResolveInput) {
			in.Workspace, in.User = explicit(Never, true), explicit(Always, false)
		}), Resolution{Policy: Always, Source: FromUser, Locked: true, AsksBecause: asksPolicy}},
		{"locked always with ask for everything on", with(rw, func(in *ResolveInput) {
			in.Workspace, in.AskEverything = explicit(Always, true), true
		}), Resolution{Policy: Always, Source: FromLocked, Locked: true, AskLock: FromTool, AsksBecause: asksPolicy}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Resolve(tc.in)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestResolve_Invariants walks every combination of the inputs and checks
// the promises the precedence makes, whatever the combination.
func TestResolve_Invariants(t *testing.T) {
	defaults := []*Policy{nil, ptr(Never), ptr(Always), ptr(Blocked), ptr(AskUnlessReadOnly)}
	globals := []Policy{Never, Always, Blocked, AskUnlessReadOnly}
	explicits := []*Policy{nil, ptr(Never), ptr(Always), ptr(Blocked)}
	tools := []DiscoveredTool{readOnlyTool, writeTool, noHintsTool}
	n := 0
	for _, g := range globals {
		for _, sd := range defaults {
			for _, ws := range explicits {
				for _, us := range explicits {
					for _, d := range tools {
						for locks := range 8 {
							for flags := range 4 {
								in := forTool(ResolveInput{Global: g, ServerDefault: sd, GlobalLocked: locks&1 != 0,
									ServerLocked: locks&2 != 0, New: flags&1 != 0}, d)
								if ws != nil {
									in.Workspace = grantedFor(d, locks&4 != 0)
									in.Workspace.Policy = *ws
								}
								if us != nil {
									in.User = grantedFor(d, false)
									in.User.Policy = *us
								}
								if flags&2 != 0 { // the tool changed since every grant
									in.Digest = "sha256:other"
								}
								n++
								checkInvariants(t, in)
							}
						}
					}
				}
			}
		}
	}
	t.Logf("%d combinations", n)
}

func checkInvariants(t *testing.T, in ResolveInput) {
	t.Helper()
	got := Resolve(in)
	w := Workspace(in)
	desc := func() string {
		return fmt.Sprintf("global=%s/%v server=%v/%v ws=%+v user=%+v readOnly=%v new=%v changed=%v -> %+v",
			in.Global, in.GlobalLocked, deref(in.ServerDefault), in.ServerLocked, in.Workspace, in.User,
			deref(in.ReadOnly), in.New, in.Digest == "sha256:other", got)
	}
	if !got.Policy.Valid() {
		t.Fatalf("not a policy value: %s", desc())
	}
	if w.Policy == Blocked && got.Policy != Blocked {
		t.Errorf("an admin's block was loosened: %s", desc())
	}
	if w.Locked && Stricter(w.Policy, got.Policy) {
		t.Errorf("a locked workspace setting was loosened: %s", desc())
	}
	if got.Locked != w.Locked {
		t.Errorf("locked = %v, the workspace setting's lock is %v: %s", got.Locked, w.Locked, desc())
	}
	if in.User != nil && w.Policy != Blocked && Stricter(in.User.Policy, got.Policy) {
		t.Errorf("a personal policy was loosened: %s", desc())
	}
	if in.User != nil && !w.Locked && w.Policy != Blocked && got.Policy != in.User.Policy && got.Source != FromChanged {
		t.Errorf("an unlocked personal policy did not apply: %s", desc())
	}
	if (got.Policy == Always) != (got.AsksBecause != nil) {
		t.Errorf("asks_because must be set exactly when the tool asks: %s", desc())
	}
	if got.Source == FromNew && (in.Workspace != nil || in.User != nil) {
		t.Errorf("a tool with an explicit policy asked as new: %s", desc())
	}
	if in.New && in.Workspace == nil && in.User == nil && got.Policy == Never {
		t.Errorf("a new tool nobody set a policy for runs without asking: %s", desc())
	}
	if got.Source == FromChanged && (got.Changed == nil || got.AsksBecause.Reason != ReasonChanged) {
		t.Errorf("changed without saying what: %s", desc())
	}
	if in.Digest == "sha256:other" && got.Policy == Never && (got.Source == FromTool || got.Source == FromUser) {
		t.Errorf("a never granted for another definition still runs: %s", desc())
	}
	// Adding a personal policy never changes the answer for a blocked workspace.
	if w.Policy == Blocked && got.Source == FromUser {
		t.Errorf("the user's layer decided over a block: %s", desc())
	}
}

func TestChangedFields(t *testing.T) {
	a := Definition{Title: "T", Description: "d", InputSchema: json.RawMessage(`{"type":"object","a":1}`)}
	b := a
	b.InputSchema = json.RawMessage(`{ "a": 1, "type": "object" }`)
	if got := ChangedFields(a, b); len(got) != 0 {
		t.Errorf("layout-only schema change reported: %v", got)
	}
	b.Title, b.Annotations.DestructiveHint = "U", ptr(true)
	if diff := cmp.Diff([]string{"title", "annotations"}, ChangedFields(a, b)); diff != "" {
		t.Error(diff)
	}
}

func TestPolicyValues_AskUnlessReadOnlyIsOnlyADefault(t *testing.T) {
	if _, err := ParsePolicy("policy", "ask_unless_read_only"); err == nil {
		t.Error("ask_unless_read_only accepted as a tool policy")
	}
	if !AskUnlessReadOnly.ValidDefault() || AskUnlessReadOnly.Valid() {
		t.Error("ask_unless_read_only must be a valid default and not a valid tool policy")
	}
	if _, err := (SettingsPatch{DefaultPolicy: ptr(AskUnlessReadOnly)}).Apply(Settings{}); err != nil {
		t.Errorf("global default ask_unless_read_only refused: %v", err)
	}
	if _, err := (ServerPatch{DefaultPolicy: Optional[Policy]{Set: true, Value: ptr(AskUnlessReadOnly)}}).Apply(Server{}); err != nil {
		t.Errorf("server default ask_unless_read_only refused: %v", err)
	}
	if _, err := (SettingsPatch{DefaultPolicy: ptr(Policy("sometimes"))}).Apply(Settings{}); err == nil {
		t.Error("global default 'sometimes' accepted")
	}
}

func TestValidateToolName_AnyNameAServerCanList(t *testing.T) {
	long := ""
	for range MaxToolNameLen {
		long += "é"
	}
	oks := []string{"search", "a/b", "with space", "100%", "naïve", "日本語", "x.y-z_1", "../../etc", "umbrella ☂\ufe0f", long}
	for _, ok := range oks {
		if err := ValidateToolName("tool_name", ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	bads := []string{"", long + "x", "a\x00b", "line\nbreak", "tab\there", "bad\xffutf8", "del\x7f",
		"get_\u202etsacerof", "zero\u200bwidth", "\ufeffbom", "soft\u00adhyphen", "line\u2028sep", "fill\u3164er", "tag\U000E0041"}
	for _, bad := range bads {
		if err := ValidateToolName("tool_name", bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	// A policy can be set for exactly the names discovery accepts.
	for _, name := range append(oks, bads...) {
		if refused, listed := ValidateToolName("tool_name", name) != nil, ToolNameProblem(name) == ""; refused == listed {
			t.Errorf("%q: policy refused %v, but discovery accepts it %v", name, refused, listed)
		}
	}
}

// The admin's "ask for everything" switch: over every combination the
// invariants test walks, nothing resolves to never while it is on, blocked
// stays blocked, and whatever asked before asks the same way.
func TestResolve_AskEverythingOnlyTightens(t *testing.T) {
	for _, g := range []Policy{Never, Always, Blocked, AskUnlessReadOnly} {
		for _, ws := range []*Policy{nil, ptr(Never), ptr(Always), ptr(Blocked)} {
			for _, us := range []*Policy{nil, ptr(Never), ptr(Always), ptr(Blocked)} {
				for _, d := range []DiscoveredTool{readOnlyTool, writeTool, noHintsTool} {
					in := forTool(ResolveInput{Global: g}, d)
					if ws != nil {
						in.Workspace = grantedFor(d, false)
						in.Workspace.Policy = *ws
					}
					if us != nil {
						in.User = grantedFor(d, false)
						in.User.Policy = *us
					}
					off := Resolve(in)
					in.AskEverything = true
					on := Resolve(in)
					switch {
					case off.Policy == Never && (on.Policy != Always || on.Source != FromAskEverything || on.AsksBecause == nil || on.AsksBecause.Reason != ReasonAskEverything):
						t.Errorf("%+v: with the switch %+v, want always (ask_everything)", in, on)
					case off.Policy != Never && (on.Policy != off.Policy || on.Source != off.Source):
						t.Errorf("%+v: the switch changed %+v to %+v", in, off, on)
					}
				}
			}
		}
	}
}
