// The chat page follows its conversation live: what another tab (or client)
// does shows here at once, through the conversation's events stream.
import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { Item, Transcript } from "../api/types";
import i18n from "../i18n";
import { useRoute } from "../router";
import { renderWithClient } from "../testing";
import { ChatPage } from "./ChatPage";
import {
  approval, approvalItem, controlledBody, frame, info, jsonResponse, mockFetch, sseResponse, transcript, userItem,
} from "./testutil";

function Harness() {
  const r = useRoute();
  return r.page === "chat" ? <ChatPage conversationId={r.conversationId} /> : null;
}

const a1 = approval("mcpr_1", "delete_forecast");
const card = (tool: string) => screen.findByRole("article", { name: `Approval request: ${tool} on demo` });
const opened = (kind: "message" | "decisions") => ({ conversation_id: "conv_1", turn_id: "turn_2", kind, offline: true, model: "m" });
const recorded = (over: object = {}) => ({
  approval_request_id: "mcpr_1", server_label: "demo", tool_name: "delete_forecast", state: "approved", reason: null, scope: "once",
  remember: false, policy_changed: null, decided_at: "2026-11-26T10:00:00Z", decided_by: "alice@example.com", decided_by_id: "usr_a",
  pending_approval_ids: [], ...over,
});

/** The page on conv_1 with tr, its events stream under the test's control. */
function open(initial: Transcript, more: Parameters<typeof mockFetch>[0] = {}) {
  let tr = initial;
  const events = controlledBody();
  const { calls } = mockFetch({
    "GET /api/info": () => jsonResponse(200, info),
    "GET /api/conversations": () => jsonResponse(200, { conversations: [tr.conversation] }),
    "GET /api/conversations/conv_1": () => jsonResponse(200, tr),
    "GET /api/conversations/conv_1/events": () => sseResponse(events.stream),
    ...more,
  });
  renderWithClient(<Harness />);
  return { events, calls, set: (next: Transcript) => { tr = next; } };
}

beforeEach(() => { history.replaceState(null, "", "/c/conv_1"); });
afterEach(() => vi.unstubAllGlobals());

describe("the chat follows its conversation live", () => {
  it("a decision made in another tab settles the card here at once, saying who decided; its Approve button is gone", async () => {
    const { events, calls } = open(transcript([userItem(1, "go"), approvalItem(2, a1)], { last_event_id: 3 }));
    const c = await card("delete_forecast");
    expect(within(c).getByRole("button", { name: "Approve" })).toBeEnabled();
    await waitFor(() => expect(calls.some((x) => x.path.endsWith("/events"))).toBe(true));
    events.push(frame(4, "conversation", opened("decisions")) + frame(5, "decision.recorded", recorded()));
    expect(await screen.findByText("approved by alice@example.com")).toBeInTheDocument();
    expect(screen.queryByRole("article", { name: "Approval request: delete_forecast on demo" })).toBeNull();
    expect(screen.queryByRole("button", { name: "Approve" })).toBeNull();
    // Screen readers hear it too.
    expect(screen.getByText("delete_forecast on demo: approved by alice@example.com")).toBeInTheDocument();
    // The approved tool runs in that tab's turn: this one shows it running.
    events.push(frame(6, "tool.started", { item_id: "mcp_9", response_id: "resp_2", server_label: "demo", upstream_label: "demo",
      tool_name: "delete_forecast", approval_request_id: "mcpr_1", started_at: "t" }));
    expect(await screen.findByText("Running delete_forecast…")).toBeInTheDocument();
    expect(calls.filter((x) => x.method === "POST")).toEqual([]);
  });

  it("in German, the card decided elsewhere says who decided in German", async () => {
    await i18n.changeLanguage("de");
    const { events } = open(transcript([userItem(1, "go"), approvalItem(2, a1)], { last_event_id: 3 }));
    await screen.findByRole("article", { name: "Bestätigungsanfrage: delete_forecast auf demo" });
    events.push(frame(4, "conversation", opened("decisions")) + frame(5, "decision.recorded", recorded({ state: "denied", reason: "nicht heute" })));
    expect(await screen.findByText("abgelehnt von alice@example.com: nicht heute")).toBeInTheDocument();
    expect(screen.queryByRole("button", { name: "Genehmigen" })).toBeNull();
  });

  it("a message sent from another tab shows up with its answer as it streams", async () => {
    const { events, set } = open(transcript([userItem(1, "earlier")], { last_event_id: 3 }));
    await screen.findByText("earlier");
    events.push(frame(4, "conversation", opened("message")) + frame(5, "item.done", { item: userItem(2, "from the other tab") })
      + frame(6, "text.delta", { item_id: "msg_7", response_id: "resp_2", delta: "Streaming " })
      + frame(7, "text.delta", { item_id: "msg_7", response_id: "resp_2", delta: "here" }));
    expect(await screen.findByText("from the other tab")).toBeInTheDocument();
    expect(await screen.findByText("Streaming here")).toBeInTheDocument();
    // The text shows it works: no "working" line under it, as for this page's own answers.
    expect(screen.queryByText("The model is working…")).toBeNull();
    expect(screen.queryByText("A response is still running in this conversation…")).toBeNull();
    // A turn runs that this page did not start: Stop cancels it, Send waits.
    expect(screen.getByRole("button", { name: "Stop" })).toBeInTheDocument();
    const answer: Item = { seq: 3, type: "message", id: "msg_7", response_id: "resp_2", created_at: "t", text: "Streaming here, done." };
    set(transcript([userItem(1, "earlier"), userItem(2, "from the other tab"), answer], { last_event_id: 9 }));
    events.push(frame(8, "item.done", { item: answer })
      + frame(9, "completed", { response_id: "resp_2", pending_approvals: 0, pending_approval_ids: [], sent: true }));
    expect(await screen.findByText("Streaming here, done.")).toBeInTheDocument();
    await waitFor(() => expect(screen.queryByRole("button", { name: "Stop" })).toBeNull());
    expect(screen.queryByText("Streaming here")).toBeNull();
  });

  it("a reload while a turn runs shows the answer streamed so far, and the rest as it comes", async () => {
    const { events, calls } = open(transcript([userItem(1, "tell me")], { last_event_id: 7, streaming: true }));
    await screen.findByText("tell me");
    // Opened without a cursor: the stream starts at the running turn's first event; the conversation is read again once it is open.
    await waitFor(() => expect(calls.filter((x) => x.path === "/api/conversations/conv_1")).toHaveLength(2));
    events.push(frame(5, "conversation", opened("message")) + frame(6, "item.done", { item: userItem(1, "tell me") })
      + frame(7, "text.delta", { item_id: "msg_7", response_id: "r", delta: "Before the reload" }));
    expect(await screen.findByText("Before the reload")).toBeInTheDocument();
    events.push(frame(8, "text.delta", { item_id: "msg_7", response_id: "r", delta: ", and after" }));
    expect(await screen.findByText("Before the reload, and after")).toBeInTheDocument();
  });

  it("a conversation deleted in another tab says so here, and leaves the list", async () => {
    const tr = transcript([userItem(1, "go")], { last_event_id: 3 });
    let deleted = false;
    const { events, calls } = open(tr, {
      "GET /api/conversations": () => jsonResponse(200, { conversations: deleted ? [] : [tr.conversation] }),
      "GET /api/conversations/conv_1": () => (deleted
        ? jsonResponse(404, { error: { code: "conversation_not_found", message: "no such conversation" } })
        : jsonResponse(200, tr)),
    });
    await screen.findByText("go");
    const nav = screen.getByRole("navigation", { name: "Conversations" });
    await within(nav).findByRole("link", { name: "Weather chores" });
    deleted = true;
    events.push(frame(4, "conversation.deleted", { conversation_id: "conv_1" }));
    expect(await screen.findByText("This conversation does not exist (it may have been deleted).")).toBeInTheDocument();
    expect(screen.queryByText("go")).toBeNull();
    await waitFor(() => expect(within(nav).queryByRole("link", { name: "Weather chores" })).toBeNull());
    expect(calls.filter((x) => x.path.endsWith("/events"))).toHaveLength(1);
  });

  it("a 409 approval_already_decided settles the card with the state in its details, and says the click was not needed", async () => {
    const decided = { ...a1, state: "approved" as const, decided_by: "alice@example.com", decided_by_id: "usr_a", decided_at: "t", scope: "once" as const };
    let refused = false;
    const tr = transcript([userItem(1, "go"), approvalItem(2, a1)], { last_event_id: 3 });
    const { calls } = open(tr, {
      // Reads after the refusal take their time: only the refusal's details can settle the card meanwhile.
      "GET /api/conversations/conv_1": () => (refused ? new Promise<Response>(() => {}) : jsonResponse(200, tr)),
      "POST /api/responses/approval-response": () => {
        refused = true;
        return jsonResponse(409, { error: {
          code: "approval_already_decided", message: "approval request \"mcpr_1\" was already approved", details: { approval: decided },
        } });
      },
    });
    const user = userEvent.setup();
    const c = await card("delete_forecast");
    await user.click(within(c).getByRole("button", { name: "Deny" }));
    expect(await screen.findByText("approved by alice@example.com")).toBeInTheDocument();
    expect(screen.getByText("Your decision was not recorded: this request had already been settled, as shown here.")).toBeInTheDocument();
    expect(screen.queryByRole("button", { name: "Deny" })).toBeNull();
    expect(calls.filter((x) => x.method === "POST")).toHaveLength(1);
  });

  it("an approval whose outcome is unknown says the tool may have run and what to do; an expired one says why", async () => {
    const unknown = approval("mcpr_1", "delete_forecast", { state: "outcome_unknown", decided_by: "ana@example.com", decided_at: "t", answered_in: "unknown",
      reason: "The approval was sent to the model's provider, but Toolgate could not learn whether the tool ran (cancelled)." });
    const expired = approval("mcpr_2", "send_alert", { state: "expired", decided_at: "t",
      reason: "The model's provider no longer has the response that asked (previous_response_not_found)." });
    open(transcript([userItem(1, "go"), approvalItem(2, unknown), approvalItem(3, expired)], { last_event_id: 3 }));
    expect(await screen.findByText("approved by ana@example.com")).toBeInTheDocument();
    expect(screen.getByText("may have run")).toBeInTheDocument();
    expect(screen.getByText(/^Outcome unknown: Toolgate crashed between forwarding delete_forecast to its server and storing its result/)).toHaveTextContent(
      "ask for it again if it should run.");
    expect(screen.getByText("expired: The model's provider no longer has the response that asked (previous_response_not_found).")).toBeInTheDocument();
    expect(screen.getByText("It can no longer be answered: ask for send_alert again if it should run.")).toBeInTheDocument();
    expect(screen.queryByRole("button", { name: "Approve" })).toBeNull();
  });

  it("notices are quiet lines in the transcript, and an interrupted turn shows like other turn errors", async () => {
    const { events } = open(transcript([userItem(1, "go")], { last_event_id: 3 }));
    await screen.findByText("go");
    events.push(frame(4, "conversation", opened("message"))
      + frame(5, "notice", { item: { seq: 2, type: "notice", id: "ntc_1", created_at: "t",
        notice: { code: "server_skipped", message: "demo-2 skipped: unreachable since 10:02", server_label: "demo-2" } } })
      + frame(6, "error", { code: "interrupted", message: "the replica running this turn stopped; the turn was closed", retryable: true }));
    expect(await screen.findByText("demo-2 left out of this turn.")).toBeInTheDocument();
    expect(screen.getByText("demo-2 skipped: unreachable since 10:02")).toBeInTheDocument();
    expect(await screen.findByText("The response did not finish.")).toBeInTheDocument();
    expect(screen.getByText(/the replica running this turn stopped/)).toBeInTheDocument();
    expect(screen.getByText("(interrupted)")).toBeInTheDocument();
    expect(screen.getByRole("button", { name: "Retry" })).toBeEnabled();
  });
});
