package conversation

import (
	"errors"
	"fmt"
)

// NoticeProviderStateLost is the code of the notice that a conversation went
// on from Toolgate's own transcript because the provider lost its previous
// response.
const NoticeProviderStateLost = "provider_state_lost"

// CodePreviousResponseNotFound is the provider's code for a
// previous_response_id it no longer has (it keeps responses only for a
// while, and the offline emulator without a state file forgets them on a
// restart).
const CodePreviousResponseNotFound = "previous_response_not_found"

// The reasons an approval request of a lost response expires with.
const (
	ExpiredReason = "The model's provider no longer has the response that asked (previous_response_not_found), " +
		"so it can no longer be answered; ask again if it is still needed."
	ExpiredApprovedReason = "It was approved, but the model's provider no longer has the response that asked " +
		"(previous_response_not_found), so the approval could not reach it and the tool did not run; ask again if it is still needed."
)

// LostPrevious reports whether the provider refused a request because it no
// longer has its previous_response_id.
func LostPrevious(err error) bool {
	var ue *UpstreamError
	return errors.As(err, &ue) && ue.Code == CodePreviousResponseNotFound
}

// LostMessage is the notice's text.
func LostMessage(entries, left int, expired []Approval) string {
	msg := fmt.Sprintf("The model's provider no longer has this conversation's previous response (previous_response_not_found; "+
		"providers keep responses only for a while), so Toolgate continued from its own transcript: %d entries were sent again", entries)
	if left > 0 {
		msg += fmt.Sprintf(", the %d oldest left out", left)
	}
	msg += "."
	approved := 0
	for _, a := range expired {
		if deref(a.DecisionReason) == ExpiredApprovedReason {
			approved++
		}
	}
	if n := len(expired); n > 0 {
		msg += fmt.Sprintf(" %d approval request(s) of the lost response expired without running", n)
		if approved > 0 {
			msg += fmt.Sprintf(" (%d of them approved: the approval could not reach the model)", approved)
		}
		msg += "; the model was told, so it can ask again if still needed."
	}
	return msg
}
