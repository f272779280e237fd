import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { Grant } from "../api/types";
import i18n from "../i18n";
import { renderWithClient } from "../testing";
import { GrantsPanel } from "./GrantsPanel";
import { jsonResponse as json, mockFetch } from "./testutil";

const convGrant: Grant = {
  id: "grant_1", conversation_id: "conv_1", conversation_title: "Weather", server_label: "demo", tool_name: "delete_forecast",
  approval_request_id: "mcpr_1", created_at: "2026-11-22T10:00:00Z", expires_at: null, revoked_at: null, state: "active",
};
const timedGrant: Grant = {
  ...convGrant, id: "grant_2", conversation_id: null, conversation_title: null, tool_name: "send_alert",
  expires_at: "2026-11-22T11:00:00Z",
};
let grants: Grant[];
let api: ReturnType<typeof mockFetch>;

beforeEach(() => {
  grants = [convGrant, timedGrant];
  api = mockFetch({
    "GET /api/conversations/conv_1/grants": () => json(200, { grants }),
    "DELETE /api/grants/grant_1": () => {
      grants = grants.filter((g) => g.id !== "grant_1");
      return new Response(null, { status: 204 });
    },
  });
});
afterEach(() => vi.unstubAllGlobals());

describe("GrantsPanel", () => {
  it("reads the conversation's grants only when opened, and revokes one", async () => {
    const user = userEvent.setup();
    renderWithClient(<GrantsPanel conversationId="conv_1" />);
    const button = screen.getByRole("button", { name: "Grants" });
    expect(button).toHaveAttribute("aria-expanded", "false");
    expect(api.calls).toHaveLength(0);
    await user.click(button);
    const panel = screen.getByRole("region", { name: "Allowed without asking here" });
    expect(panel).toHaveFocus();
    const items = await within(panel).findAllByRole("listitem");
    expect(items).toHaveLength(2);
    expect(items[0]).toHaveTextContent("delete_forecast");
    expect(items[0]).toHaveTextContent("for this conversation");
    expect(items[1]).toHaveTextContent(/send_alert.*all conversations, until/);

    await user.click(within(panel).getByRole("button", { name: "Revoke the grant for delete_forecast on demo" }));
    expect(api.calls.filter((c) => c.method === "DELETE").map((c) => c.path)).toEqual(["/api/grants/grant_1"]);
    expect(await within(panel).findByRole("status")).toHaveTextContent("Revoked: delete_forecast asks again from the next message.");
    await waitFor(() => expect(within(panel).getAllByRole("listitem")).toHaveLength(1));
  });

  it("says when there are none, and closes with Escape back to its button", async () => {
    grants = [];
    const user = userEvent.setup();
    renderWithClient(<GrantsPanel conversationId="conv_1" />);
    await user.click(screen.getByRole("button", { name: "Grants" }));
    expect(await screen.findByText("No grants: every tool that asks will ask.")).toBeInTheDocument();
    await user.keyboard("{Escape}");
    expect(screen.queryByRole("region")).toBeNull();
    expect(screen.getByRole("button", { name: "Grants" })).toHaveFocus();
  });

  it("reads in German", async () => {
    await i18n.changeLanguage("de");
    try {
      const user = userEvent.setup();
      renderWithClient(<GrantsPanel conversationId="conv_1" />);
      await user.click(screen.getByRole("button", { name: "Freigaben" }));
      expect(await screen.findByRole("button", { name: "Freigabe für delete_forecast auf demo widerrufen" })).toBeInTheDocument();
      expect(screen.getByText("für diese Unterhaltung")).toBeInTheDocument();
    } finally {
      await i18n.changeLanguage("en");
    }
  });
});
