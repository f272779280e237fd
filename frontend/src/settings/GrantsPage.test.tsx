import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { Grant } from "../api/types";
import { jsonResponse as json, mockFetch } from "../chat/testutil";
import { renderWithClient } from "../testing";
import { GrantsPage } from "./GrantsPage";

const live: Grant = {
  id: "grant_1", conversation_id: "conv_1", conversation_title: "Weather", server_label: "demo", tool_name: "delete_forecast",
  approval_request_id: "mcpr_1", created_at: "2026-11-22T10:00:00Z", expires_at: null, revoked_at: null, state: "active",
};
const timed: Grant = { ...live, id: "grant_2", conversation_id: null, conversation_title: null, tool_name: "send_alert",
  expires_at: "2026-11-22T11:00:00Z" };
const ended: Grant = { ...live, id: "grant_3", tool_name: "get_forecast", revoked_at: "2026-11-22T10:30:00Z", state: "revoked" };
let grants: Grant[];
let api: ReturnType<typeof mockFetch>;

beforeEach(() => {
  grants = [live, timed];
  api = mockFetch({
    "GET /api/grants": () => json(200, { grants }),
    "GET /api/grants?include=expired": () => json(200, { grants: [...grants, ended] }),
    "DELETE /api/grants/grant_2": () => {
      grants = grants.filter((g) => g.id !== "grant_2");
      return new Response(null, { status: 204 });
    },
  });
});
afterEach(() => vi.unstubAllGlobals());

describe("GrantsPage", () => {
  it("lists my grants with where they apply and when they end, revokes one, and shows ended ones on request", async () => {
    const user = userEvent.setup();
    renderWithClient(<GrantsPage />);
    expect(screen.getByRole("heading", { name: "My grants" })).toBeInTheDocument();
    const conv = await screen.findByRole("row", { name: /delete_forecast/ });
    expect(within(conv).getByRole("link", { name: "Weather" })).toHaveAttribute("href", "/c/conv_1");
    expect(conv).toHaveTextContent("When the conversation is deleted");
    const hour = screen.getByRole("row", { name: /send_alert/ });
    expect(hour).toHaveTextContent("All my conversations");
    expect(within(hour).getByText("active")).toBeInTheDocument();

    await user.click(within(hour).getByRole("button", { name: "Revoke the grant for send_alert on demo" }));
    await waitFor(() => expect(screen.queryByRole("row", { name: /send_alert/ })).toBeNull());
    expect(api.calls.filter((c) => c.method === "DELETE").map((c) => c.path)).toEqual(["/api/grants/grant_2"]);

    await user.click(screen.getByRole("checkbox", { name: "Show expired and revoked grants" }));
    const old = await screen.findByRole("row", { name: /get_forecast/ });
    expect(within(old).getByText("revoked")).toBeInTheDocument();
    expect(within(old).queryByRole("button")).toBeNull();
  });

  it("says when I have none", async () => {
    grants = [];
    renderWithClient(<GrantsPage />);
    expect(await screen.findByText("You have no grants.")).toBeInTheDocument();
  });
});
