package conversation

import "github.com/toolgate/toolgate/internal/policy"

// Present is an approval request as people and clients see it: its
// arguments with secrets hidden (and which were), the correction as
// shown, its annotations, and the choices its card offers.
func Present(a Approval) Approval {
	a.Arguments, a.Redacted = Redact(a.StoredArguments)
	a.Correction = ShownCorrection(a.StoredCorrection)
	if a.Redacted == nil {
		a.Redacted = []string{}
	}
	if len(a.Annotations) == 0 {
		a.Annotations = []byte("{}")
	}
	a.Reason.Policy = policy.Always
	if a.Choices == nil { // asked before cards had choices
		a.Choices = policy.AllChoices()
		if a.AskLock != nil {
			a.Choices = policy.LockedChoices(a.Choices)
		}
	}
	return a
}
