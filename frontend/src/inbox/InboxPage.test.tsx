import { act, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { InboxApproval } from "../api/types";
import { approval, controlledBody, frame, jsonResponse as json, mockFetch, sseResponse } from "../chat/testutil";
import { renderWithClient } from "../testing";
import { InboxPage, inboxTitle } from "./InboxPage";
import { idsOf, useInboxEvents } from "./useInboxEvents";

const fromChat: InboxApproval = {
  ...approval("mcpr_1", "delete_forecast", { conversation_id: "conv_1", arguments: { city: "Oslo" } }),
  source: { kind: "chat", conversation_id: "conv_1", title: "Weather in Oslo" },
};
const fromAgent: InboxApproval = {
  ...approval("mcpr_2", "send_alert", { conversation_id: "conv_agent", response_id: "mcpr_2" }),
  source: { kind: "agent", conversation_id: "conv_agent", title: "session", client: { name: "claude-code", version: "2.1.0" } },
};
let waiting: InboxApproval[];
let api: ReturnType<typeof mockFetch>;

function decided(id: string, state: "approved" | "denied") {
  const a = waiting.find((w) => w.approval_request_id === id)!;
  waiting = waiting.filter((w) => w !== a);
  return json(200, { ...a, state, expires_at: null });
}

beforeEach(() => {
  waiting = [fromChat, fromAgent];
  api = mockFetch({
    "GET /api/approvals?state=pending": () => json(200, { approvals: waiting }),
    "POST /api/approvals/mcpr_1/decision": ({ body }) => decided("mcpr_1", (body as { approve: boolean }).approve ? "approved" : "denied"),
    "POST /api/approvals/mcpr_2/decision": ({ body }) => decided("mcpr_2", (body as { approve: boolean }).approve ? "approved" : "denied"),
  });
});
afterEach(() => {
  vi.unstubAllGlobals();
  document.title = "Toolgate";
});

const posts = () => api.calls.filter((c) => c.method === "POST");

describe("InboxPage", () => {
  // Catches: a source not shown (or linked to the wrong place), a title without the count.
  it("lists every waiting request with the chat's card and where it came from, and counts them in the title", async () => {
    renderWithClient(<InboxPage />);
    const cards = await screen.findAllByRole("article");
    expect(cards).toHaveLength(2);
    expect(within(cards[0]).getByText("delete_forecast")).toBeInTheDocument();
    expect(screen.getByRole("link", { name: "Weather in Oslo" })).toHaveAttribute("href", "/c/conv_1#approval-mcpr_1");
    expect(screen.getByText("From the agent claude-code 2.1.0")).toBeInTheDocument();
    expect(document.title).toBe("(2) Waiting for me · Toolgate");
  });

  // Catches: a decision sent to the chat's route, a card that stays after the decision.
  it("sends a card's decision to the inbox route, and the card leaves with a word on what was done", async () => {
    const user = userEvent.setup();
    renderWithClient(<InboxPage />);
    const card = await screen.findByRole("article", { name: /delete_forecast/ });
    await user.type(within(card).getByRole("textbox", { name: /Reason/ }), "stale");
    await user.click(within(card).getByRole("button", { name: "Deny" }));
    await waitFor(() => expect(screen.queryByRole("article", { name: /delete_forecast/ })).toBeNull());
    expect(posts()).toEqual([{ method: "POST", path: "/api/approvals/mcpr_1/decision", body: { approval_request_id: "mcpr_1", approve: false, reason: "stale" } }]);
    expect(screen.getByText("Denied: delete_forecast on demo.")).toBeInTheDocument();
    await waitFor(() => expect(document.title).toBe("(1) Waiting for me · Toolgate"));
  });

  // Catches: Approve all sending one request for several, or skipping one.
  it("Approve all decides each waiting request, one after another", async () => {
    const user = userEvent.setup();
    renderWithClient(<InboxPage />);
    await user.click(await screen.findByRole("button", { name: "Approve all (2)" }));
    await waitFor(() => expect(screen.getByText("Nothing waits for you.")).toBeInTheDocument());
    expect(posts().map((c) => [c.path, (c.body as { approve: boolean }).approve])).toEqual([
      ["/api/approvals/mcpr_1/decision", true], ["/api/approvals/mcpr_2/decision", true]]);
  });

  // Catches: a refusal of a request settled elsewhere shown as an error on a card that can never be decided.
  it("says so when a request was settled elsewhere, and reads the list again", async () => {
    const user = userEvent.setup();
    api = mockFetch({
      "GET /api/approvals?state=pending": () => json(200, { approvals: waiting }),
      "POST /api/approvals/mcpr_1/decision": () => {
        waiting = [fromAgent];
        return json(409, { error: { code: "approval_already_decided", message: "already approved" } });
      },
    });
    renderWithClient(<InboxPage />);
    const card = await screen.findByRole("article", { name: /delete_forecast/ });
    await user.click(within(card).getByRole("button", { name: "Deny" }));
    expect(await screen.findByText("delete_forecast on demo no longer waits: it was settled elsewhere.")).toBeInTheDocument();
    await waitFor(() => expect(screen.getAllByRole("article")).toHaveLength(1));
    expect(screen.queryByRole("alert")).toBeNull();
  });

  it("titles the page without a count when nothing waits", () => {
    expect(inboxTitle("Waiting for me", 0)).toBe("Waiting for me · Toolgate");
  });
});

function Live() {
  useInboxEvents();
  return <InboxPage />;
}

describe("useInboxEvents", () => {
  it("reads only well-formed ids", () => {
    expect(idsOf('{"pending":1,"approval_request_ids":["mcpr_1"]}')).toEqual(["mcpr_1"]);
    expect(idsOf("{")).toBeNull();
    expect(idsOf('{"approval_request_ids":[1]}')).toBeNull();
  });

  // Catches: a stream that is not followed, an event that does not refresh the list.
  it("reads the inbox again when the stream says the set waiting changed", async () => {
    const body = controlledBody();
    waiting = [fromChat];
    api = mockFetch({
      "GET /api/approvals?state=pending": () => json(200, { approvals: waiting }),
      "GET /api/approvals/events": () => sseResponse(body.stream),
    });
    renderWithClient(<Live />);
    expect(await screen.findAllByRole("article")).toHaveLength(1);
    const reads = () => api.calls.filter((c) => c.path === "/api/approvals?state=pending").length;
    await act(async () => body.push(frame(1, "approvals.changed", { pending: 1, approval_request_ids: ["mcpr_1"] })));
    expect(reads()).toBe(1); // the same set: nothing to read
    waiting = [fromChat, fromAgent];
    await act(async () => body.push(frame(2, "approvals.changed", { pending: 2, approval_request_ids: ["mcpr_1", "mcpr_2"] })));
    await waitFor(() => expect(screen.getAllByRole("article")).toHaveLength(2));
    expect(reads()).toBe(2);
  });
});
