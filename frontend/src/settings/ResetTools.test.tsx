import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Tool } from "../api/types";
import { jsonResponse, mockFetch } from "../chat/testutil";
import { renderWithClient } from "../testing";
import { ServerTools } from "./ServerTools";
import { server, tool } from "./testdata";

afterEach(() => vi.unstubAllGlobals());

const withPolicies = (): Tool[] => [
  tool("delete_forecast", { policy: "blocked", policy_locked: true, effective_policy: "blocked", policy_source: "tool" }),
  tool("get_forecast", { policy: "never", user_policy: "always", policy_source: "user" }),
  tool("send_alert", { policy: "always", effective_policy: "always", policy_source: "tool" }),
  tool("list_forecasts"), // no policy: not counted
];

function setup(admin: boolean) {
  let tools = withPolicies();
  const { calls } = mockFetch({
    "GET /api/mcp/servers/demo/tools": () => jsonResponse(200, { tools }),
    "DELETE /api/mcp/servers/demo/tools/approval-policies?layer=workspace": () => {
      tools = tools.map((x) => ({ ...x, policy: null, policy_locked: false, effective_policy: "never", policy_source: "global" }));
      return jsonResponse(200, { removed: 3, tools: ["delete_forecast", "get_forecast", "send_alert"] });
    },
    "DELETE /api/mcp/servers/demo/tools/approval-policies?layer=mine": () => {
      tools = tools.map((x) => ({ ...x, user_policy: null }));
      return jsonResponse(200, { removed: 1, tools: ["get_forecast"] });
    },
  });
  renderWithClient(<ServerTools server={server()} admin={admin} globalDefault="never" query="" filter="all" now={Date.now()}
    focusPending={false} onFocused={() => {}} onClearFilters={() => {}} />);
  return { calls, deletes: () => calls.filter((c) => c.method === "DELETE"), gets: () => calls.filter((c) => c.method === "GET").length };
}

describe("Reset this server's tools", () => {
  it("asks first, saying how many workspace policies go; Cancel sends nothing", async () => {
    const user = userEvent.setup();
    const { deletes } = setup(true);
    await user.click(await screen.findByRole("button", { name: "Reset this server's tools" }));
    const confirm = screen.getByRole("group", { name: "Confirm resetting the tool policies of demo" });
    expect(confirm).toHaveTextContent("Remove 3 tool policies of demo?");
    await user.click(within(confirm).getByRole("button", { name: "Cancel" }));
    expect(screen.queryByRole("group", { name: /Confirm resetting/ })).not.toBeInTheDocument();
    expect(deletes()).toEqual([]);
    expect(screen.getByRole("button", { name: "Reset this server's tools" })).toBeEnabled();
  });

  it("removes them on confirmation, says what went, and reads the tools again", async () => {
    const user = userEvent.setup();
    const { deletes, gets } = setup(true);
    await user.click(await screen.findByRole("button", { name: "Reset this server's tools" }));
    const before = gets();
    await user.click(screen.getByRole("button", { name: "Remove policies" }));
    expect(await screen.findByText("Removed 3 tool policies: delete_forecast, get_forecast, send_alert.")).toBeInTheDocument();
    expect(deletes().map((c) => c.path)).toEqual(["/api/mcp/servers/demo/tools/approval-policies?layer=workspace"]);
    await waitFor(() => expect(gets()).toBeGreaterThan(before));
    // Nothing left in the workspace layer: its button is off; the admin's own policy is still there.
    await waitFor(() => expect(screen.getByRole("button", { name: "Reset this server's tools" })).toBeDisabled());
    expect(screen.getByRole("button", { name: "Reset my policies for this server" })).toBeEnabled();
  });

  it("a member resets only their own policies (one), never the workspace's", async () => {
    const user = userEvent.setup();
    const { deletes } = setup(false);
    await user.click(await screen.findByRole("button", { name: "Reset my policies for this server" }));
    expect(screen.queryByRole("button", { name: "Reset this server's tools" })).not.toBeInTheDocument();
    expect(screen.getByRole("group", { name: /Confirm resetting/ })).toHaveTextContent("Remove your 1 personal tool policy of demo?");
    await user.click(screen.getByRole("button", { name: "Remove policies" }));
    expect(await screen.findByText("Removed 1 tool policy: get_forecast.")).toBeInTheDocument();
    expect(deletes().map((c) => c.path)).toEqual(["/api/mcp/servers/demo/tools/approval-policies?layer=mine"]);
  });
});
