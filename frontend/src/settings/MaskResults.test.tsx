import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Server } from "../api/types";
import { jsonResponse, mockFetch } from "../chat/testutil";
import { renderWithClient } from "../testing";
import { MaskResults, masksResults } from "./MaskResults";
import { SettingsPage } from "./SettingsPage";
import { later, server, tool } from "./testdata";

afterEach(() => vi.unstubAllGlobals());

const settings = { default_policy: "ask_unless_read_only", default_policy_locked: false, ask_everything: false, updated_at: "" };

describe("masking secrets in a server's results", () => {
  it("is on unless the server says false", () => {
    expect(masksResults(server())).toBe(true);
    expect(masksResults(server({ mask_results: true }))).toBe(true);
    expect(masksResults(server({ mask_results: false }))).toBe(false);
  });

  it("is a checkbox an admin turns off and on again; a refused change goes back", async () => {
    const user = userEvent.setup();
    let srv: Server = server({ mask_results: true });
    const sent: unknown[] = [];
    let refuse = false;
    const saved = later(); // the first change is answered when the test says: the box shows it at once
    const reread = later(); // after the refusal the list is read again: held, so the box shows what the page put back itself
    mockFetch({
      "GET /api/mcp/servers": () => (refuse ? reread.response : jsonResponse(200, { servers: [srv] })),
      "GET /api/settings": () => jsonResponse(200, settings),
      "GET /api/mcp/servers/demo/tools": () => jsonResponse(200, { tools: [tool("get_forecast")] }),
      "PATCH /api/mcp/servers/demo": ({ body }) => {
        sent.push(body);
        if (refuse) return jsonResponse(403, { error: { code: "admin_only", message: "Only admins can change servers." } });
        srv = { ...srv, ...(body as Partial<Server>) };
        return sent.length === 1 ? saved.response : jsonResponse(200, srv);
      },
    });
    renderWithClient(<SettingsPage />);
    const group = await screen.findByRole("group", { name: "Results" }, { timeout: 5000 });
    const box = within(group).getByRole("checkbox", { name: "Mask secrets in results" });
    expect(box).toBeChecked();
    expect(group).toHaveTextContent("replaced with [redacted] before the model reads them");

    await user.click(box);
    await waitFor(() => expect(sent).toEqual([{ mask_results: false }]));
    await waitFor(() => expect(within(screen.getByRole("group", { name: "Results" })).getByRole("checkbox")).not.toBeChecked());
    saved.answer(200, srv);
    expect(screen.getByRole("group", { name: "Results" })).toHaveTextContent("exactly as the server sends them, secrets included");

    refuse = true;
    await user.click(within(screen.getByRole("group", { name: "Results" })).getByRole("checkbox"));
    await waitFor(() => expect(sent).toEqual([{ mask_results: false }, { mask_results: true }]));
    expect(await screen.findByText(/Could not change whether results are masked: Only admins can change servers/)).toBeInTheDocument();
    await waitFor(() => expect(within(screen.getByRole("group", { name: "Results" })).getByRole("checkbox")).not.toBeChecked());
    reread.answer(200, { servers: [srv] });
  });

  it("is shown to a member without a checkbox", () => {
    renderWithClient(<MaskResults server={server({ mask_results: false })} admin={false} />);
    const group = screen.getByRole("group", { name: "Results" });
    expect(within(group).queryByRole("checkbox")).toBeNull();
    expect(group).toHaveTextContent("Results pass untouched.");
  });
});
