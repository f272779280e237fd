import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { Item, Transcript } from "../api/types";
import { useQuery } from "@tanstack/react-query";
import { infoQuery } from "../api/query";
import { useRoute } from "../router";
import { renderWithClient } from "../testing";
import { ChatPage } from "./ChatPage";
import { approval, approvalItem, conversation, info, jsonResponse, mockFetch, sse, sseResponse } from "./testutil";

/** The shell's use of /api/info (its top bar shows the mode). */
function ShellMode() {
  const q = useQuery(infoQuery);
  return <p>{q.data ? `offline: ${q.data.offline}` : ""}</p>;
}

function Harness() {
  const r = useRoute();
  return r.page === "chat" ? <ChatPage conversationId={r.conversationId} linkedApproval={r.approval} /> : null;
}

const baseItems: Item[] = [
  { seq: 1, type: "user_message", id: "u1", created_at: "t", text: "delete_forecast and send_alert please" },
  { seq: 2, type: "mcp_list_tools", id: "l1", response_id: "resp_1", created_at: "t", server_label: "demo", upstream_label: "demo",
    tools: [{ name: "list_forecasts", description: "List", input_schema: {}, annotations: { readOnlyHint: true, destructiveHint: null, idempotentHint: null, openWorldHint: null } }] },
  { seq: 3, type: "mcp_call", id: "c1", response_id: "resp_1", created_at: "t", server_label: "demo", upstream_label: "demo",
    name: "list_forecasts", arguments: { api_key: "[redacted]" }, redacted: ["api_key"], output: "2 forecasts",
    allowed_by: { kind: "policy", policy: "never", source: "server" } },
];

beforeEach(() => { history.replaceState(null, "", "/c/conv_1"); });
afterEach(() => vi.unstubAllGlobals());

describe("ChatPage", () => {
  it("focuses the card a link names (a webhook's deep link), not the first one", async () => {
    history.replaceState(null, "", "/c/conv_1#approval-mcpr_2");
    const a1 = approval("mcpr_1", "delete_forecast");
    const a2 = approval("mcpr_2", "send_alert");
    const tr: Transcript = {
      conversation: conversation({ pending_approvals: 2 }),
      items: [...baseItems, approvalItem(4, a1), approvalItem(5, a2)],
      pending_approvals: [a1, a2],
    };
    mockFetch({
      "GET /api/info": () => jsonResponse(200, info),
      "GET /api/conversations": () => jsonResponse(200, { conversations: [tr.conversation] }),
      "GET /api/conversations/conv_1": () => jsonResponse(200, tr),
    });
    renderWithClient(<Harness />);
    const linked = await screen.findByRole("article", { name: "Approval request: send_alert on demo" });
    await waitFor(() => expect(linked).toHaveFocus());
  });

  it("opens a webhook's link to a decided request at that request: in view, focused, highlighted, decided", async () => {
    history.replaceState(null, "", "/c/conv_1#approval-mcpr_1");
    const scrolled: Element[] = [];
    const scrollIntoView = vi.fn(function (this: Element) { scrolled.push(this); });
    Element.prototype.scrollIntoView = scrollIntoView;
    const a1 = approval("mcpr_1", "delete_forecast", { state: "approved", decided_at: "t", decided_by: "ana@example.com", decided_by_id: "usr_ana" });
    const a2 = approval("mcpr_2", "send_alert", { response_id: "resp_2" });
    const tr: Transcript = {
      conversation: conversation({ pending_approvals: 1 }),
      items: [...baseItems, approvalItem(4, a1), approvalItem(5, a2)],
      pending_approvals: [a2],
    };
    mockFetch({
      "GET /api/info": () => jsonResponse(200, info),
      "GET /api/conversations": () => jsonResponse(200, { conversations: [tr.conversation] }),
      "GET /api/conversations/conv_1": () => jsonResponse(200, tr),
    });
    try {
      renderWithClient(<Harness />);
      await screen.findByRole("article", { name: "Approval request: send_alert on demo" });
      const linked = document.getElementById("approval-mcpr_1");
      expect(linked).not.toBeNull();
      expect(linked).toHaveTextContent("Approval request for delete_forecast on demo: approved by ana@example.com");
      expect(linked).toHaveClass("is-linked");
      await waitFor(() => expect(linked).toHaveFocus());
      expect(scrolled).toEqual([linked]);
      // The pending card the page opened with leaves the focus where the link put it.
      await new Promise((r) => setTimeout(r, 50));
      expect(linked).toHaveFocus();
    } finally {
      delete (Element.prototype as { scrollIntoView?: unknown }).scrollIntoView;
    }
  });

  it("shows tool calls with how they were allowed, and a link to change the policy", async () => {
    const tr: Transcript = { conversation: conversation(), items: baseItems, pending_approvals: [] };
    mockFetch({
      "GET /api/info": () => jsonResponse(200, info),
      "GET /api/conversations": () => jsonResponse(200, { conversations: [tr.conversation] }),
      "GET /api/conversations/conv_1": () => jsonResponse(200, tr),
    });
    renderWithClient(<Harness />);
    expect(await screen.findByText("ran without asking (policy: Auto, server default)")).toBeInTheDocument();
    expect(screen.getByRole("link", { name: "change" })).toHaveAttribute("href", "/settings?server=demo&tool=list_forecasts");
    expect(screen.getByText("Listed 1 tool from", { exact: false })).toBeInTheDocument();
    expect(screen.getByText("ok")).toBeInTheDocument();
    expect(screen.getByText("hidden")).toHaveClass("redacted-chip");
    const nav = screen.getByRole("navigation", { name: "Conversations" });
    expect(within(nav).getByRole("link", { name: "Weather chores" })).toHaveAttribute("aria-current", "page");
  });

  it("decides pending approvals one by one, each as its own decisions stream", async () => {
    const a1 = approval("mcpr_1", "delete_forecast");
    const a2 = approval("mcpr_2", "send_alert");
    let tr: Transcript = {
      conversation: conversation({ pending_approvals: 2 }),
      items: [...baseItems, approvalItem(4, a1), approvalItem(5, a2)],
      pending_approvals: [a1, a2],
    };
    const { calls } = mockFetch({
      "GET /api/info": () => jsonResponse(200, info),
      "GET /api/conversations": () => jsonResponse(200, { conversations: [tr.conversation] }),
      "GET /api/conversations/conv_1": () => jsonResponse(200, tr),
      "POST /api/responses/approval-response": () => {
        const denied = { ...a1, state: "denied" as const, reason: "keep Berlin", scope: "once" as const };
        tr = { conversation: conversation({ pending_approvals: 1 }), items: [...baseItems, approvalItem(4, denied), approvalItem(5, a2)], pending_approvals: [a2] };
        return sseResponse(sse([
          ["conversation", { conversation_id: "conv_1", turn_id: "turn_2", kind: "decisions", offline: true, model: "m" }],
          ["decision.recorded", { approval_request_id: "mcpr_1", server_label: "demo", tool_name: "delete_forecast", state: "denied", reason: "keep Berlin", scope: "once", remember: false, policy_changed: null, decided_at: "t", pending_approval_ids: ["mcpr_2"] }],
          ["completed", { response_id: "resp_1", pending_approvals: 1, pending_approval_ids: ["mcpr_2"], sent: false }],
        ]), { "X-Conversation-Id": "conv_1" });
      },
    });
    const user = userEvent.setup();
    renderWithClient(<Harness />);
    const first = await screen.findByRole("article", { name: "Approval request: delete_forecast on demo" });
    expect(screen.getByRole("article", { name: "Approval request: send_alert on demo" })).toBeInTheDocument();
    await waitFor(() => expect(first).toHaveFocus());
    expect(screen.getByText("Approval needed: delete_forecast on demo. Approval needed: send_alert on demo")).toBeInTheDocument();
    expect(screen.getByText("2 requests wait for your decision. The model continues once all are decided.")).toBeInTheDocument();
    expect(screen.getByText(/Sending a message now denies them/)).toBeInTheDocument();
    const nav = screen.getByRole("navigation", { name: "Conversations" });
    expect(within(nav).getByText("needs approval")).toBeInTheDocument();

    await user.type(within(first).getByRole("textbox", { name: "Reason (optional, sent to the model)" }), "keep Berlin");
    await user.dblClick(within(first).getByRole("button", { name: "Deny" }));

    expect(await screen.findByText("denied: keep Berlin")).toBeInTheDocument();
    expect(await screen.findByText("1 of 2 decided — waiting for the rest")).toBeInTheDocument();
    expect(screen.queryByRole("article", { name: "Approval request: delete_forecast on demo" })).toBeNull();
    const second = screen.getByRole("article", { name: "Approval request: send_alert on demo" });
    await waitFor(() => expect(second).toHaveFocus());
    const posts = calls.filter((c) => c.method === "POST");
    expect(posts).toEqual([{
      method: "POST", path: "/api/responses/approval-response",
      body: { conversation_id: "conv_1", decisions: [{ approval_request_id: "mcpr_1", approve: false, reason: "keep Berlin" }] },
    }]);
    expect(within(second).getByRole("button", { name: "Approve" })).toBeEnabled();
  });

  it("offers Retry only on a retryable error that ends the transcript, and retries as a stream", async () => {
    let tr: Transcript = {
      conversation: conversation(),
      items: [...baseItems, { seq: 4, type: "error", created_at: "t", turn_error: { code: "upstream_unavailable", message: "the provider answered 503", retryable: true } }],
      pending_approvals: [],
    };
    const { calls } = mockFetch({
      "GET /api/info": () => jsonResponse(200, info),
      "GET /api/conversations": () => jsonResponse(200, { conversations: [tr.conversation] }),
      "GET /api/conversations/conv_1": () => jsonResponse(200, tr),
      "POST /api/conversations/conv_1/retry": () => {
        tr = { ...tr, items: [...tr.items, { seq: 5, type: "message", id: "m1", created_at: "t", text: "It is **sunny**." }] };
        return sseResponse(sse([
          ["conversation", { conversation_id: "conv_1", turn_id: "turn_3", kind: "message", offline: true, model: "m" }],
          ["item.done", { item: { seq: 5, type: "message", id: "m1", created_at: "t", text: "It is **sunny**." } }],
          ["completed", { response_id: "resp_2", pending_approvals: 0, pending_approval_ids: [], sent: true }],
        ]), { "X-Conversation-Id": "conv_1" });
      },
    });
    const user = userEvent.setup();
    renderWithClient(<Harness />);
    expect(await screen.findByText("the provider answered 503", { exact: false })).toBeInTheDocument();
    await user.click(screen.getByRole("button", { name: "Retry" }));
    expect(await screen.findByText("sunny")).toHaveProperty("tagName", "STRONG");
    await waitFor(() => expect(screen.queryByRole("button", { name: "Retry" })).toBeNull());
    expect(calls.some((c) => c.method === "POST" && c.path === "/api/conversations/conv_1/retry")).toBe(true);
  });

  it("sends the first message of a new chat, then moves to the new conversation's address", async () => {
    history.replaceState(null, "", "/");
    let tr: Transcript | null = null;
    mockFetch({
      "GET /api/info": () => jsonResponse(200, info),
      "GET /api/conversations": () => jsonResponse(200, { conversations: tr ? [tr.conversation] : [] }),
      "GET /api/conversations/conv_new": () => jsonResponse(200, tr),
      "POST /api/responses": () => {
        const items: Item[] = [
          { seq: 1, type: "user_message", id: "u1", created_at: "t", text: "list_forecasts" },
          { seq: 2, type: "message", id: "m1", created_at: "t", text: "Two forecasts." },
        ];
        tr = { conversation: conversation({ id: "conv_new", title: "list_forecasts" }), items, pending_approvals: [] };
        return sseResponse(sse([
          ["conversation", { conversation_id: "conv_new", turn_id: "turn_1", kind: "message", offline: true, model: "m" }],
          ["item.done", { item: items[0] }],
          ["text.delta", { item_id: "m1", response_id: "r", delta: "Two " }],
          ["item.done", { item: items[1] }],
          ["completed", { response_id: "r", pending_approvals: 0, pending_approval_ids: [], sent: true }],
        ]), { "X-Conversation-Id": "conv_new" });
      },
    });
    const user = userEvent.setup();
    renderWithClient(<Harness />);
    expect(await screen.findByRole("button", { name: "list_forecasts" })).toBeInTheDocument(); // an offline suggestion
    const box = screen.getByRole("textbox", { name: "Message" });
    await user.type(box, "list_forecasts{Enter}");
    expect(await screen.findByText("Two forecasts.")).toBeInTheDocument();
    await waitFor(() => expect(location.pathname).toBe("/c/conv_new"));
    expect(box).toHaveValue("");
    await screen.findByRole("heading", { name: "list_forecasts" });
  });

  it("shows a refusal before the stream inline and gives the text back", async () => {
    const tr: Transcript = { conversation: conversation(), items: baseItems, pending_approvals: [] };
    mockFetch({
      "GET /api/info": () => jsonResponse(200, info),
      "GET /api/conversations": () => jsonResponse(200, { conversations: [tr.conversation] }),
      "GET /api/conversations/conv_1": () => jsonResponse(200, tr),
      "POST /api/responses": () => jsonResponse(409, { error: { code: "turn_in_progress", message: "a turn is streaming in conversation conv_1; wait for it to finish or cancel it" } }),
    });
    const user = userEvent.setup();
    renderWithClient(<Harness />);
    await screen.findByText("2 forecasts");
    const box = screen.getByRole("textbox", { name: "Message" });
    await user.type(box, "again");
    await user.click(screen.getByRole("button", { name: "Send" }));
    expect(await screen.findByRole("alert")).toHaveTextContent("a turn is streaming in conversation conv_1; wait for it to finish or cancel it");
    expect(box).toHaveValue("again");
  });

  it("renames and deletes conversations from the sidebar, deleting only after confirming", async () => {
    let list = [conversation(), conversation({ id: "conv_2", title: "Other" })];
    const { calls } = mockFetch({
      "GET /api/info": () => jsonResponse(200, info),
      "GET /api/conversations": () => jsonResponse(200, { conversations: list }),
      "GET /api/conversations/conv_1": () => jsonResponse(200, { conversation: list[0], items: [], pending_approvals: [] }),
      "PATCH /api/conversations/conv_2": ({ body }) => {
        list = [list[0], { ...list[1], title: (body as { title: string }).title }];
        return jsonResponse(200, list[1]);
      },
      "DELETE /api/conversations/conv_2": () => { list = [list[0]]; return new Response(null, { status: 204 }); },
    });
    const user = userEvent.setup();
    renderWithClient(<Harness />);
    const nav = await screen.findByRole("navigation", { name: "Conversations" });
    await user.click(await within(nav).findByRole("button", { name: "Rename Other" }));
    const input = within(nav).getByRole("textbox", { name: "New title for Other" });
    await user.clear(input);
    await user.type(input, "Trip{Enter}");
    expect(await within(nav).findByRole("link", { name: "Trip" })).toBeInTheDocument();
    expect(calls.find((c) => c.method === "PATCH")?.body).toEqual({ title: "Trip" });

    await user.click(within(nav).getByRole("button", { name: "Delete Trip" }));
    const confirm = within(nav).getByRole("group", { name: "Delete Trip?" });
    await user.click(within(confirm).getByRole("button", { name: "Cancel" }));
    expect(calls.some((c) => c.method === "DELETE")).toBe(false);
    await user.click(within(nav).getByRole("button", { name: "Delete Trip" }));
    await user.click(within(within(nav).getByRole("group", { name: "Delete Trip?" })).getByRole("button", { name: "Delete" }));
    await waitFor(() => expect(within(nav).queryByRole("link", { name: "Trip" })).toBeNull());
    expect(calls.some((c) => c.method === "DELETE" && c.path === "/api/conversations/conv_2")).toBe(true);
  });

  it("reads /api/info once, with the shell that shows it too, however often the conversation changes", async () => {
    const list = [conversation(), conversation({ id: "conv_2", title: "Other" })];
    const { calls } = mockFetch({
      "GET /api/info": () => jsonResponse(200, info),
      "GET /api/conversations": () => jsonResponse(200, { conversations: list }),
      "GET /api/conversations/conv_1": () => jsonResponse(200, { conversation: list[0], items: baseItems, pending_approvals: [] }),
      "GET /api/conversations/conv_2": () => jsonResponse(200, { conversation: list[1], items: [], pending_approvals: [] }),
    });
    const user = userEvent.setup();
    renderWithClient(<><ShellMode /><Harness /></>);
    expect(await screen.findByText("offline: true")).toBeInTheDocument();
    const nav = await screen.findByRole("navigation", { name: "Conversations" });
    await user.click(await within(nav).findByRole("link", { name: "Other" }));
    await screen.findByText("No messages yet. Say something below.");
    await user.click(within(nav).getByRole("link", { name: "Weather chores" }));
    await screen.findByText("2 forecasts");
    await user.click(within(nav).getByRole("button", { name: "New chat" }));
    await screen.findByRole("heading", { name: "Chat with tools, under your control" });
    expect(calls.filter((c) => c.path === "/api/info")).toHaveLength(1);
  });

  it("keeps a draft with the conversation it was written in", async () => {
    const list = [conversation(), conversation({ id: "conv_2", title: "Other" })];
    mockFetch({
      "GET /api/info": () => jsonResponse(200, info),
      "GET /api/conversations": () => jsonResponse(200, { conversations: list }),
      "GET /api/conversations/conv_1": () => jsonResponse(200, { conversation: list[0], items: baseItems, pending_approvals: [] }),
      "GET /api/conversations/conv_2": () => jsonResponse(200, { conversation: list[1], items: [], pending_approvals: [] }),
    });
    const user = userEvent.setup();
    renderWithClient(<Harness />);
    const box = screen.getByRole("textbox", { name: "Message" });
    await user.type(box, "half a thought");
    const nav = screen.getByRole("navigation", { name: "Conversations" });
    await user.click(await within(nav).findByRole("link", { name: "Other" }));
    await waitFor(() => expect(box).toHaveValue(""));
    expect(screen.getByRole("button", { name: "Send" })).toBeDisabled();
  });

  it("says when a conversation does not exist", async () => {
    mockFetch({
      "GET /api/info": () => jsonResponse(200, info),
      "GET /api/conversations": () => jsonResponse(200, { conversations: [] }),
      "GET /api/conversations/conv_1": () => jsonResponse(404, { error: { code: "conversation_not_found", message: "no such conversation" } }),
    });
    const user = userEvent.setup();
    renderWithClient(<Harness />);
    expect(await screen.findByText("This conversation does not exist (it may have been deleted).")).toBeInTheDocument();
    await user.click(screen.getByRole("button", { name: "Start a new chat" }));
    await waitFor(() => expect(location.pathname).toBe("/"));
  });
});
