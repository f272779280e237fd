package engine

import (
	"encoding/json"

	"github.com/toolgate/toolgate/internal/conversation"
)

// Names the engine's files use for helpers that live in the domain package.

func shownCorrection(stored json.RawMessage) json.RawMessage {
	return conversation.ShownCorrection(stored)
}

func compareCorrected(prev conversation.Approval, storedArgs string) *conversation.Corrects {
	return conversation.CompareCorrected(prev, storedArgs)
}

func lostPrevious(err error) bool { return conversation.LostPrevious(err) }
