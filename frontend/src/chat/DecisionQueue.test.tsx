import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { Transcript } from "../api/types";
import { useRoute } from "../router";
import { renderWithClient } from "../testing";
import { ChatPage } from "./ChatPage";
import {
  approval, approvalItem, callItem, controlledBody, frame, info, jsonResponse, mockFetch, opened, recordedEvent, sse, sseResponse, transcript, userItem,
} from "./testutil";

function Harness() {
  const r = useRoute();
  return r.page === "chat" ? <ChatPage conversationId={r.conversationId} /> : null;
}

const a1 = approval("mcpr_1", "delete_forecast");
const a2 = approval("mcpr_2", "send_alert");
const card = (tool: string) => screen.findByRole("article", { name: `Approval request: ${tool} on demo` });

beforeEach(() => { history.replaceState(null, "", "/c/conv_1"); });
afterEach(() => vi.unstubAllGlobals());

describe("the decision queue", () => {
  it("decisions made while the response still streams wait, then go together as one follow-up", async () => {
    let tr: Transcript = transcript([userItem(1, "two tools")], { streaming: false });
    const body = controlledBody();
    const { calls } = mockFetch({
      "GET /api/info": () => jsonResponse(200, info),
      "GET /api/conversations": () => jsonResponse(200, { conversations: [tr.conversation] }),
      "GET /api/conversations/conv_1": () => jsonResponse(200, tr),
      "POST /api/responses": () => sseResponse(body.stream, { "X-Conversation-Id": "conv_1" }),
      "POST /api/responses/approval-response": () => {
        tr = transcript([userItem(1, "two tools"), approvalItem(2, { ...a1, state: "approved" }), approvalItem(3, { ...a2, state: "denied" }), callItem(4, "delete_forecast", { approval_request_id: "mcpr_1" })]);
        return sseResponse(sse([
          opened("decisions"),
          recordedEvent(a1, { pending_approval_ids: ["mcpr_2"] }),
          recordedEvent(a2, { state: "denied" }),
          ["item.done", { item: callItem(4, "delete_forecast", { approval_request_id: "mcpr_1" }) }],
          ["completed", { response_id: "resp_2", pending_approvals: 0, pending_approval_ids: [], sent: true }],
        ]));
      },
    });
    const user = userEvent.setup();
    renderWithClient(<Harness />);
    await screen.findByText("two tools");
    await user.type(screen.getByRole("textbox", { name: "Message" }), "again{Enter}");
    body.push(sse([opened("message"), ["item.done", { item: userItem(5, "again") }], ["approval.required", a1], ["approval.required", a2]]));

    // The response has not finished: deciding is possible, sending waits.
    const first = await card("delete_forecast");
    await user.click(within(first).getByRole("button", { name: "Approve" }));
    expect(within(first).getByRole("status")).toHaveTextContent("Queued: sent when the model's response has finished…");
    const second = await card("send_alert");
    await user.click(within(second).getByRole("button", { name: "Deny" }));
    expect(calls.filter((c) => c.path === "/api/responses/approval-response")).toEqual([]);

    body.push(sse([["completed", { response_id: "resp_1", pending_approvals: 2, pending_approval_ids: ["mcpr_1", "mcpr_2"], sent: true }]]));
    body.close();
    expect(await screen.findByText("delete_forecast ran: its result is below.")).toBeInTheDocument();
    const posts = calls.filter((c) => c.path === "/api/responses/approval-response");
    expect(posts).toEqual([{
      method: "POST", path: "/api/responses/approval-response",
      body: { conversation_id: "conv_1", decisions: [{ approval_request_id: "mcpr_1", approve: true }, { approval_request_id: "mcpr_2", approve: false }] },
    }]);
    expect(screen.queryByRole("article")).toBeNull();
  });

  it("a refused decision shows the server's reason on the card, which can be decided again", async () => {
    let tr = transcript([userItem(1, "go"), approvalItem(2, a1)]);
    let refuse = true;
    const { calls } = mockFetch({
      "GET /api/info": () => jsonResponse(200, info),
      "GET /api/conversations": () => jsonResponse(200, { conversations: [tr.conversation] }),
      "GET /api/conversations/conv_1": () => jsonResponse(200, tr),
      "POST /api/responses/approval-response": () => {
        if (refuse) {
          refuse = false;
          return jsonResponse(409, { error: { code: "tool_blocked", message: "delete_forecast on demo is blocked" } });
        }
        tr = transcript([userItem(1, "go"), approvalItem(2, { ...a1, state: "approved", remember: true })]);
        return sseResponse(sse([opened("decisions"), recordedEvent(a1, { remember: true }), ["completed", { response_id: "r", pending_approvals: 0, pending_approval_ids: [], sent: true }]]));
      },
    });
    const user = userEvent.setup();
    renderWithClient(<Harness />);
    const c = await card("delete_forecast");
    await user.click(within(c).getByRole("button", { name: "Approve" }));
    expect(await within(c).findByRole("alert")).toHaveTextContent(
      "delete_forecast on demo was blocked after it asked (its policy changed, or its server was disabled or removed), so it cannot simply be approved.");
    await user.click(within(c).getByRole("button", { name: "More approval choices" }));
    await user.click(within(c).getByRole("menuitem", { name: /^Approve always \(remember\)/ }));
    expect(await screen.findByText("remembered: your policy is now Auto")).toBeInTheDocument();
    expect(calls.filter((c) => c.method === "POST").map((c) => c.body)).toEqual([
      { conversation_id: "conv_1", decisions: [{ approval_request_id: "mcpr_1", approve: true }] },
      { conversation_id: "conv_1", decisions: [{ approval_request_id: "mcpr_1", approve: true, remember: true }] },
    ]);
  });

  it("cards cannot be decided while a turn runs that this page does not stream, until its events say it ended (no polling)", async () => {
    let tr = transcript([userItem(1, "go"), approvalItem(2, a1)], { streaming: true, last_event_id: 4 });
    const events = controlledBody();
    const { calls } = mockFetch({
      "GET /api/info": () => jsonResponse(200, info),
      "GET /api/conversations": () => jsonResponse(200, { conversations: [tr.conversation] }),
      "GET /api/conversations/conv_1": () => jsonResponse(200, tr),
      "GET /api/conversations/conv_1/events": () => sseResponse(events.stream),
    });
    renderWithClient(<Harness />);
    const c = await card("delete_forecast");
    expect(within(c).getByRole("button", { name: "Approve" })).toBeDisabled();
    expect(within(c).getByRole("status")).toHaveTextContent("You can decide once the response running in this conversation has finished…");
    expect(screen.getByText("A response is still running in this conversation…")).toBeInTheDocument();
    // Read once, and once more when the stream opened (it starts at the running turn); then not again, however long it runs.
    const reads = () => calls.filter((x) => x.path === "/api/conversations/conv_1").length;
    await waitFor(() => expect(reads()).toBe(2));
    await new Promise((r) => setTimeout(r, 1700));
    expect(reads()).toBe(2);
    tr = transcript([userItem(1, "go"), approvalItem(2, a1)], { streaming: false, last_event_id: 5 });
    events.push(frame(5, "completed", { response_id: "resp_1", pending_approvals: 1, pending_approval_ids: ["mcpr_1"], sent: true }));
    await waitFor(() => expect(within(c).getByRole("button", { name: "Approve" })).toBeEnabled());
    expect(screen.queryByText("A response is still running in this conversation…")).toBeNull();
  });

  it("Deny all sends every pending request of the response, with the one reason, in one request", async () => {
    const a3 = approval("mcpr_3", "get_forecast");
    let tr = transcript([userItem(1, "three tools"), approvalItem(2, a1), approvalItem(3, a2), approvalItem(4, a3)]);
    const { calls } = mockFetch({
      "GET /api/info": () => jsonResponse(200, info),
      "GET /api/conversations": () => jsonResponse(200, { conversations: [tr.conversation] }),
      "GET /api/conversations/conv_1": () => jsonResponse(200, tr),
      "POST /api/responses/approval-response": () => {
        const denied = { state: "denied" as const, reason: "not today" };
        tr = transcript([userItem(1, "three tools"), approvalItem(2, { ...a1, ...denied }), approvalItem(3, { ...a2, ...denied }), approvalItem(4, { ...a3, ...denied })]);
        return sseResponse(sse([
          opened("decisions"),
          recordedEvent(a1, { ...denied, pending_approval_ids: [] }),
          recordedEvent(a2, { ...denied, pending_approval_ids: [] }),
          recordedEvent(a3, { ...denied, pending_approval_ids: [] }),
          ["completed", { response_id: "resp_2", pending_approvals: 0, pending_approval_ids: [], sent: true }],
        ]));
      },
    });
    const user = userEvent.setup();
    renderWithClient(<Harness />);
    const all = await screen.findByRole("group", { name: "Decide all 3 waiting requests at once" });
    await user.type(within(all).getByRole("textbox", { name: "Reason (for Deny all)" }), " not today ");
    await user.click(within(all).getByRole("button", { name: "Deny all (3)" }));
    await waitFor(() => expect(screen.queryByRole("article")).toBeNull());
    expect(calls.filter((c) => c.path === "/api/responses/approval-response").map((c) => c.body)).toEqual([
      { conversation_id: "conv_1", decisions: [
        { approval_request_id: "mcpr_1", approve: false, reason: "not today" },
        { approval_request_id: "mcpr_2", approve: false, reason: "not today" },
        { approval_request_id: "mcpr_3", approve: false, reason: "not today" },
      ] },
    ]);
    expect(screen.queryByRole("group", { name: /Decide all/ })).toBeNull();
  });

  it("Approve all is offered only while more than one request of the response waits, and approves them in one request", async () => {
    const tr = transcript([userItem(1, "two tools"), approvalItem(2, a1), approvalItem(3, { ...a2, state: "denied" })]);
    const two = transcript([userItem(1, "two tools"), approvalItem(2, a1), approvalItem(3, a2)]);
    let current = tr;
    const { calls } = mockFetch({
      "GET /api/info": () => jsonResponse(200, info),
      "GET /api/conversations": () => jsonResponse(200, { conversations: [current.conversation] }),
      "GET /api/conversations/conv_1": () => jsonResponse(200, current),
      "POST /api/responses/approval-response": () => sseResponse(sse([opened("decisions"),
        ["completed", { response_id: "resp_2", pending_approvals: 0, pending_approval_ids: [], sent: true }]])),
    });
    const user = userEvent.setup();
    const { unmount } = renderWithClient(<Harness />);
    await card("delete_forecast");
    expect(screen.queryByRole("group", { name: /Decide all/ })).toBeNull();
    unmount();
    current = two;
    renderWithClient(<Harness />);
    const all = await screen.findByRole("group", { name: "Decide all 2 waiting requests at once" });
    await user.click(within(all).getByRole("button", { name: "Approve all (2)" }));
    await waitFor(() => expect(calls.filter((c) => c.path === "/api/responses/approval-response")).toHaveLength(1));
    expect(calls.find((c) => c.path === "/api/responses/approval-response")!.body).toEqual({ conversation_id: "conv_1", decisions: [
      { approval_request_id: "mcpr_1", approve: true }, { approval_request_id: "mcpr_2", approve: true },
    ] });
  });
});
