import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Server } from "../api/types";
import { jsonResponse, mockFetch } from "../chat/testutil";
import { renderWithClient } from "../testing";
import { SettingsPage } from "./SettingsPage";
import { destructive, readOnly, server, tool } from "./testdata";

afterEach(() => vi.unstubAllGlobals());

describe("a server's read-only hints in the settings", () => {
  it("are a claim, naming the tools that make it, until an admin accepts them with one click", async () => {
    const user = userEvent.setup();
    let srv: Server = server({ read_only_hints: "claimed" });
    const sent: unknown[] = [];
    mockFetch({
      "GET /api/mcp/servers": () => jsonResponse(200, { servers: [srv] }),
      "GET /api/settings": () => jsonResponse(200, { default_policy: "ask_unless_read_only", default_policy_locked: false, ask_everything: false, updated_at: "" }),
      "GET /api/mcp/servers/demo/tools": () => jsonResponse(200, { tools: [
        tool("delete_forecast", { annotations: destructive, effective_policy: "always", asks_because: { reason: "not_read_only" } }),
        tool("get_forecast", { annotations: readOnly, effective_policy: "always", asks_because: { reason: "read_only_claimed" } }),
      ] }),
      "PATCH /api/mcp/servers/demo": ({ body }) => {
        sent.push(body);
        srv = { ...srv, ...(body as Partial<Server>) };
        return jsonResponse(200, srv);
      },
    });
    renderWithClient(<SettingsPage />);
    const hints = await screen.findByRole("group", { name: "Read-only hints" }, { timeout: 5000 });
    await waitFor(() => expect(hints).toHaveTextContent("Read-only hints are the server's claim. 1 tool says it is read-only: get_forecast."));
    expect(await screen.findByText(/no admin has accepted its server's read-only hints yet/i)).toBeInTheDocument();
    await user.click(within(hints).getByRole("button", { name: "Accept read-only hints" }));
    await waitFor(() => expect(sent).toEqual([{ read_only_hints: "trusted" }]));
    expect(await screen.findByText("Read-only hints accepted.")).toBeInTheDocument();
    expect(within(screen.getByRole("group", { name: "Read-only hints" })).getByRole("button", { name: "Treat hints as claims again" })).toBeInTheDocument();
  });
});
