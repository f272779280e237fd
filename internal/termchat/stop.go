package termchat

import "fmt"

// stoppedCode ends a turn the person stopped with [s]: the batch was
// denied and nothing went to the model.
const stoppedCode = "stopped_by_user"

// batchLines say which calls of the response wait after the one being
// asked ("2 more calls wait after this one"), with their tools and
// arguments: [s] stop denies them too.
func (t *term) batchLines(rest []approval) {
	if len(rest) == 0 {
		return
	}
	if len(rest) == 1 {
		t.linef("%s1 more call waits after this one:", indent)
	} else {
		t.linef("%s%d more calls wait after this one:", indent, len(rest))
	}
	for _, a := range rest {
		t.linef("%s%s· %s on %s %s", indent, indent, line(a.ToolName), line(a.ServerLabel), line(compactJSON(a.Arguments)))
	}
}

// stopLine says what [s] did, before the decisions are sent.
func stopLine(others int) string {
	if others == 0 {
		return "Stopping: this call is denied and the model gets no turn; the denial goes with your next message."
	}
	return fmt.Sprintf("Stopping: this call and the %d other(s) waiting are denied and the model gets no turn; the denials go with your next message.", others)
}
