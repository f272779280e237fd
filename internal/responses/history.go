package responses

import (
	"github.com/openai/openai-go/v3/responses"

	"github.com/toolgate/toolgate/internal/conversation"
)

// historyRoles maps the roles of a transcript sent as input.
var historyRoles = map[string]responses.EasyInputMessageRole{
	conversation.RoleUser:      responses.EasyInputMessageRoleUser,
	conversation.RoleAssistant: responses.EasyInputMessageRoleAssistant,
	conversation.RoleDeveloper: responses.EasyInputMessageRoleDeveloper,
}

// historyInput renders a conversation's own transcript (sent when the
// provider lost the previous response) as input messages: the person's
// messages, the model's answers, and Toolgate's records of tool calls and
// approval requests as developer messages. Tool calls go as text, not as
// mcp_call items: the provider has no response they belong to any more, and
// an item would have to carry an id and an approval request it no longer
// knows. A message of an unknown role goes as a developer message.
func historyInput(h []conversation.HistoryMessage) responses.ResponseInputParam {
	in := make(responses.ResponseInputParam, 0, len(h)+2)
	for _, m := range h {
		role, ok := historyRoles[m.Role]
		if !ok {
			role = responses.EasyInputMessageRoleDeveloper
		}
		msg := responses.ResponseInputItemParamOfMessage(m.Text, role)
		msg.OfMessage.Type = responses.EasyInputMessageTypeMessage // explicit for compatible providers
		in = append(in, msg)
	}
	return in
}
