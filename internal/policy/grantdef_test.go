package policy

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// A grant is given for the definition the person saw: a tool whose
// definition changed after the grant asks (changed), one unchanged since
// runs by the grant, and a grant whose time is not known still covers.
func TestGroupTools_AGrantDoesNotCoverADefinitionChangedAfterIt(t *testing.T) {
	granted := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	before, after := granted.Add(-time.Minute), granted.Add(time.Minute)
	p := func(x Policy) *Policy { return &x }
	tool := func(name string, changed time.Time) Tool {
		return Tool{DiscoveredTool: DiscoveredTool{Name: name}, Discovered: true, Policy: p(Always), ChangedAt: &changed}
	}
	tools := []Tool{tool("rug", after), tool("steady", before), tool("old", after)}
	allowed := map[string]GrantRef{
		"rug":    {ID: "grant_1", Conversation: true, CreatedAt: granted},
		"steady": {ID: "grant_2", Conversation: true, CreatedAt: granted},
		"old":    {ID: "grant_3", Conversation: true}, // made before grants recorded their time
	}
	g := GroupTools(Server{Label: "vault", Enabled: true}, Settings{DefaultPolicy: Always}, tools, nil, allowed)
	steady, old := allowed["steady"], allowed["old"]
	wantNever := []GroupedTool{{Name: "old", Source: FromConversation, Grant: &old}, {Name: "steady", Source: FromConversation, Grant: &steady}}
	if diff := cmp.Diff(wantNever, g.Never); diff != "" {
		t.Errorf("run by grant (-want +got):\n%s", diff)
	}
	wantAlways := []GroupedTool{{Name: "rug", Source: FromChanged, AsksBecause: &AsksBecause{Reason: ReasonChanged}}}
	if diff := cmp.Diff(wantAlways, g.Always); diff != "" {
		t.Errorf("asking (-want +got):\n%s", diff)
	}
}
