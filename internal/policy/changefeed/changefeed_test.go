package changefeed_test

import (
	"slices"
	"testing"

	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/policy/changefeed"
)

// pending reports what w would send now ("" kinds: nothing is ready).
func pending(w *changefeed.Watcher) (int64, []policy.ChangeKind) {
	select {
	case <-w.Ready():
		return w.Take()
	default:
		return 0, nil
	}
}

// Each watcher hears what its caller may know of: a person's own policies
// only theirs, hooks and webhooks only admins'; changes heard before a
// Take fold into one list, in the order heard, once each; a closed watcher
// hears nothing.
func TestChanges_EachWatcherHearsWhatItsCallerMaySeeFolded(t *testing.T) {
	hub := changefeed.New()
	admin := hub.Watch("usr_admin", true)
	ann := hub.Watch("usr_ann", false)
	bob := hub.Watch("usr_bob", false)
	defer admin.Close()
	defer ann.Close()

	hub.Publish(policy.Change{Kind: policy.ChangePersonal, UserID: "usr_bob"})
	hub.Publish(policy.Change{Kind: policy.ChangeWebhook})
	hub.Publish(policy.Change{Kind: policy.ChangeWorkspace, Version: 7})
	hub.Publish(policy.Change{Kind: policy.ChangeDecisionHook})
	hub.Publish(policy.Change{Kind: policy.ChangeWorkspace, Version: 8})
	hub.Publish(policy.Change{Kind: policy.ChangePersonal}) // no user: nobody's

	for _, c := range []struct {
		who  string
		w    *changefeed.Watcher
		want []policy.ChangeKind
	}{
		{"the admin", admin, []policy.ChangeKind{policy.ChangeWebhook, policy.ChangeWorkspace, policy.ChangeDecisionHook}},
		{"Ann", ann, []policy.ChangeKind{policy.ChangeWorkspace}},
		{"Bob", bob, []policy.ChangeKind{policy.ChangePersonal, policy.ChangeWorkspace}},
	} {
		v, got := pending(c.w)
		if !slices.Equal(got, c.want) || v != 8 {
			t.Errorf("%s: version %d kinds %v, want 8 %v", c.who, v, got, c.want)
		}
		if _, again := pending(c.w); again != nil {
			t.Errorf("%s: taken twice: %v", c.who, again)
		}
	}
	bob.Close()
	hub.Publish(policy.Change{Kind: policy.ChangePersonal, UserID: "usr_bob"})
	if _, got := pending(bob); got != nil {
		t.Errorf("a closed watcher heard %v", got)
	}
	if n := hub.Watching(); n != 2 {
		t.Errorf("%d watchers, want 2", n)
	}
	if v := hub.Seen(3); v != 8 {
		t.Errorf("Seen(3) = %d: an older version must not go back", v)
	}
}
