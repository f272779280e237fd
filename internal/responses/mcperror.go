package responses

import (
	"errors"
	"net/http"
	"regexp"

	"github.com/toolgate/toolgate/internal/conversation"
)

// listFailure finds the server a 424 names. The provider answers 424
// (Failed Dependency, code http_error, type external_connector_error) when it
// cannot list an MCP server's tools, with the server_label the request gave
// it in quotes: "Error retrieving tool list from MCP server: 'crm'. Http
// status code: 424 (Failed Dependency)".
var listFailure = regexp.MustCompile(`MCP server: '([^']+)'`)

// nameFailedServer sets the ServerLabel of a 424 that names a server of the
// request (its Toolgate label, mapped back from the label sent).
func nameFailedServer(err error, labels Labels) {
	var ue *conversation.UpstreamError
	if !errors.As(err, &ue) || ue.Status != http.StatusFailedDependency {
		return
	}
	if m := listFailure.FindStringSubmatch(ue.Message); m != nil {
		if server, ok := labels[m[1]]; ok {
			ue.ServerLabel = server
		}
	}
}
