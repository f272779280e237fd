// Package emulator is an offline stand-in for the OpenAI Responses API with
// remote MCP tools, faithful to recorded real traffic
// (../shared/openai-fixtures): the same SSE framing, event order, item
// shapes, id prefixes and 400s. It serves POST /v1/responses (streaming and
// not) and GET /v1/responses/{id}, and is reachable by the official
// openai-go client through option.WithBaseURL(url + "/v1/").
//
// It imports none of Toolgate's packages: it reads the protocol on its own,
// so that a misreading in Toolgate is not mirrored here.
//
// # MCP
//
// For every {"type":"mcp"} entry in tools whose server has no
// mcp_list_tools item in the context yet, the emulator runs MCP tools/list
// at server_url (streamable HTTP, sending the entry's headers and
// authorization) and emits mcp_list_tools. A server that cannot be listed
// fails the request with HTTP 424, as the real API does. Tools run with MCP
// tools/call; mcp_call carries the real output, or the error object:
// mcp_tool_execution_error (the tool reported an error), mcp_protocol_error
// (a JSON-RPC error such as an unknown tool or bad arguments) or http_error
// (the server answered with an HTTP error or could not be reached).
//
// allowed_tools (an array or a filter object) limits the tools offered.
// require_approval is "always", "never" or the object form with always and
// never filters ({"tool_names": [...], "read_only": bool}); omitted means
// "always"; in the object form a tool in neither list needs approval. A tool
// that needs approval yields an mcp_approval_request and runs only after a
// follow-up approves it.
//
// # Conversation state and follow-ups
//
// Every response with store (default true) is kept in memory, so
// previous_response_id works. A follow-up must answer every open approval
// request of its context with an mcp_approval_response; an unknown request
// id, a missing answer, a second answer, or an item that repeats an item of
// the context (such as an item_reference to the mcpr_ item together with
// previous_response_id) is a 400 in OpenAI's error shape. approve: true runs
// the tool (the mcp_call carries approval_request_id); approve: false makes
// the model say it did not run the tool, quoting the reason. An answer that
// a client re-sends with the whole conversation is not applied again once
// the model went on after it or a stored response took it (see
// docs/emulator.md). Config.StateFile keeps the stored responses across
// restarts.
//
// # The deterministic model
//
// There is no language model. The rules, applied to the last user message
// of the request's input (unless an mcp_approval_response follows it, as when
// a client re-sends the conversation instead of using previous_response_id:
// the model then goes on from the answers):
//
//   - Naming an offered tool calls it: bare ("get_forecast") or qualified
//     by its server label ("weather.get_forecast"), as a whole word. A bare
//     name offered by several servers means the first in tools order.
//   - The first JSON object after the name, before the next name, is the
//     call's arguments ("get_forecast {"city": "Berlin"}", "use
//     get_forecast with {"city": "Berlin"}"); without one, or when it is
//     malformed, they are {}.
//   - Naming several tools (or one tool several times) makes several calls
//     in one response, in the order named. Calls that need no approval run
//     at once; the others become mcp_approval_request items, and the
//     response then completes without a message.
//   - After tool calls (and in a follow-up) the answer is text that quotes
//     each tool's output or error and each denial with its reason.
//   - A denial whose reason says "Use these arguments instead: {...}" is
//     followed like an instruction: the follow-up asks for the same tool
//     again (or calls it, if it needs no approval) with that object as its
//     arguments; the paths listed on a "Keep the values you sent for these
//     arguments...: a, b.c" line keep the denied request's values.
//   - Anything else gets a plain text answer that says what this is and
//     lists the tools on offer.
//   - Text streams word by word (see the deltas and delta-size behaviors).
//   - Reasoning models (gpt-5*, o1*, o3*, o4*) put an empty reasoning item
//     before each new call, approval request and answer, except the answer
//     right after approved calls, as in the recordings; other models emit
//     none.
//
// # Behaviors: timing and faults
//
// A behavior is a list like "event-delay=20ms; deltas=3; status=503; times=2".
// It comes from Config.Behavior (the binary's -behavior flag), refined key by
// key by the X-Emulator-Behavior request header and then by a
// "[emulator: ...]" directive in the user's message. Keys:
//
//	first-event-delay=DUR  wait before the first byte of the answer
//	event-delay=DUR        wait between stream events
//	deltas=N               split the answer text into N deltas
//	delta-size=N           or into deltas of N characters
//	status=CODE            answer with HTTP CODE (429 carries Retry-After) instead
//	retry-after=SECONDS    Retry-After for status=429 (default 1)
//	times=N                the faults apply to the first N requests with this behavior only
//	stall=DUR              pause DUR before the first byte, or at event "at"
//	cut                    drop the connection without a terminal event, at event "at"
//	error-event[=CODE]     send a top-level error event at event "at" and end
//	failed[=CODE]          end with response.failed at event "at"
//	incomplete[=REASON]    end with response.incomplete; the answer is cut in half
//	at=N                   the event index for stall, cut, error-event and failed
//	                       (default: just before the terminal event; stall: 0)
//	mcp-error=list         listing fails: HTTP 424
//	mcp-error=list-in-stream  response.mcp_list_tools.failed inside the stream
//	mcp-error=call         every tools/call fails with an http_error
//
// Without a stream, cut sends half the JSON body then drops the connection,
// error-event answers HTTP 500, failed and incomplete return the response
// with that status, and stall adds to first-event-delay.
//
// A response whose client went away still runs its tools and is stored, as
// upstream does; so is a response whose stream was cut.
package emulator
