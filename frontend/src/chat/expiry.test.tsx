// Expired means expired: at 0:00 the card can no longer be decided, and the
// sidebar's "needs approval" clears when the last pending request runs out
// of time (before the server's sweep), and when the sweep's event arrives.
import { act, render, screen, waitFor, within } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { Approval, Transcript } from "../api/types";
import { useRoute } from "../router";
import { renderWithClient } from "../testing";
import { ApprovalCard } from "./ApprovalCard";
import { ChatPage } from "./ChatPage";
import {
  approval, approvalItem, controlledBody, conversation, frame, info, jsonResponse, mockFetch, sseResponse, transcript, userItem,
} from "./testutil";

function Harness() {
  const r = useRoute();
  return r.page === "chat" ? <ChatPage conversationId={r.conversationId} /> : null;
}

beforeEach(() => { history.replaceState(null, "", "/c/conv_1"); });
afterEach(() => { vi.useRealTimers(); vi.unstubAllGlobals(); });

describe("the approval card at 0:00", () => {
  it("disables Approve, Deny and the correction at expires_at, without waiting for the server", () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval", "Date"] });
    const onDecide = vi.fn();
    const a: Approval = approval("mcpr_1", "delete_forecast", { expires_at: new Date(Date.now() + 3000).toISOString() });
    render(<ApprovalCard approval={a} busy={false} onDecide={onDecide} />);
    const card = screen.getByRole("article", { name: "Approval request: delete_forecast on demo" });
    const approve = within(card).getByRole("button", { name: "Approve" });
    expect(approve).toBeEnabled();
    expect(within(card).getByText("Expires in 0:03")).toBeInTheDocument();

    act(() => { vi.advanceTimersByTime(2000); });
    expect(approve).toBeEnabled();
    act(() => { vi.advanceTimersByTime(1000); }); // 0:00
    expect(within(card).getByText("Expired: nobody decided in time")).toBeInTheDocument();
    expect(within(card).getByRole("button", { name: "Approve" })).toBeDisabled();
    expect(within(card).getByRole("button", { name: "Deny" })).toBeDisabled();
    expect(within(card).getByRole("button", { name: "Deny with correction…" })).toBeDisabled();
    expect(within(card).getByRole("textbox")).toBeDisabled();
    // Not "Sending…": nothing is being sent.
    expect(within(card).queryByRole("status")).toBeNull();
    approve.click();
    expect(onDecide).not.toHaveBeenCalled();
  });
});

describe("the sidebar's needs approval", () => {
  it("clears when the last pending request's time is up, with no sweep and no event", async () => {
    const soon = new Date(Date.now() + 1200).toISOString();
    const list = [conversation(), conversation({ id: "conv_2", title: "Waiting", pending_approvals: 1, pending_expires_at: soon })];
    const { calls } = mockFetch({
      "GET /api/info": () => jsonResponse(200, info),
      "GET /api/conversations": () => jsonResponse(200, { conversations: list }),
      "GET /api/conversations/conv_1": () => jsonResponse(200, transcript([userItem(1, "first chat")], list[0])),
    });
    renderWithClient(<Harness />);
    const nav = await screen.findByRole("navigation", { name: "Conversations" });
    const row = (await within(nav).findByRole("link", { name: /Waiting/ }));
    expect(within(row).getByText("needs approval")).toBeInTheDocument();
    await waitFor(() => expect(within(row).queryByText("needs approval")).toBeNull(), { timeout: 4000 });
    // The list was not read again: the time alone cleared it.
    expect(calls.filter((c) => c.path === "/api/conversations")).toHaveLength(1);
  });

  it("keeps it for a request that never expires (no pending_expires_at)", async () => {
    const list = [conversation({ pending_approvals: 1 })];
    mockFetch({
      "GET /api/info": () => jsonResponse(200, info),
      "GET /api/conversations": () => jsonResponse(200, { conversations: list }),
      "GET /api/conversations/conv_1": () => jsonResponse(200, transcript([userItem(1, "first chat")], list[0])),
    });
    renderWithClient(<Harness />);
    const nav = await screen.findByRole("navigation", { name: "Conversations" });
    expect(await within(nav).findByText("needs approval")).toBeInTheDocument();
  });

  it("clears when the sweep's decision.recorded arrives on the conversation's events stream", async () => {
    const a1 = approval("mcpr_1", "delete_forecast");
    let tr: Transcript = { ...transcript([userItem(1, "go"), approvalItem(2, a1)], { pending_approvals: 1, last_event_id: 3 }), pending_approvals: [a1] };
    const events = controlledBody();
    const { calls } = mockFetch({
      "GET /api/info": () => jsonResponse(200, info),
      "GET /api/conversations": () => jsonResponse(200, { conversations: [tr.conversation] }),
      "GET /api/conversations/conv_1": () => jsonResponse(200, tr),
      "GET /api/conversations/conv_1/events": () => sseResponse(events.stream),
    });
    renderWithClient(<Harness />);
    const nav = await screen.findByRole("navigation", { name: "Conversations" });
    expect(await within(nav).findByText("needs approval")).toBeInTheDocument();
    await waitFor(() => expect(calls.some((x) => x.path.endsWith("/events"))).toBe(true));
    const expired = { ...a1, state: "expired" as const, reason: "Nobody decided on this request within APPROVAL_TTL (30m), so it expired and was not approved; ask again if it is still needed." };
    tr = { ...transcript([userItem(1, "go"), approvalItem(2, expired)], { pending_approvals: 0, last_event_id: 4 }), pending_approvals: [] };
    // The sweep's event: no turn, no conversation event before it.
    events.push(frame(4, "decision.recorded", {
      approval_request_id: "mcpr_1", server_label: "demo", tool_name: "delete_forecast", state: "expired", reason: expired.reason,
      scope: null, remember: false, policy_changed: null, decided_at: "2026-11-26T10:00:00Z", pending_approval_ids: [],
    }));
    await waitFor(() => expect(within(nav).queryByText("needs approval")).toBeNull());
  });
});
