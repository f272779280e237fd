import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { ApiToken } from "../api/types";
import { jsonResponse as json, mockFetch } from "../chat/testutil";
import i18n from "../i18n";
import { renderWithClient } from "../testing";
import { TokensPage } from "./TokensPage";

const secret = "tg_s3cr3t_value_0123456789";
let tokens: ApiToken[];
let api: ReturnType<typeof mockFetch>;

/** A tiny token store behind the API routes. */
beforeEach(() => {
  tokens = [{ id: "tok_old", name: "ci", created_at: "2026-11-20T10:00:00Z", last_used_at: null }];
  api = mockFetch({
    "GET /api/tokens": () => json(200, { tokens }),
    "GET /api/mcp/servers": () => json(200, { servers: [] }),
    "POST /api/tokens": ({ body }) => {
      const created = { id: "tok_new", name: (body as { name: string }).name, created_at: "2026-11-22T10:00:00Z" };
      tokens = [...tokens, { ...created, last_used_at: null }];
      return json(201, { ...created, token: secret });
    },
    "DELETE /api/tokens/tok_old": () => {
      tokens = tokens.filter((t) => t.id !== "tok_old");
      return new Response(null, { status: 204 });
    },
  });
});
afterEach(() => vi.unstubAllGlobals());

describe("TokensPage", () => {
  it("shows a new token once, with a warning and a copy button, and never again", async () => {
    const user = userEvent.setup();
    const { client } = renderWithClient(<TokensPage />);
    await screen.findByRole("row", { name: /ci/ });
    await user.type(screen.getByRole("textbox", { name: "Token name" }), "  laptop ");
    await user.click(screen.getByRole("button", { name: "Create token" }));
    expect(api.calls.find((c) => c.method === "POST")?.body).toEqual({ name: "laptop" });

    const region = await screen.findByRole("region", { name: "New token laptop" });
    expect(within(region).getByLabelText("Token")).toHaveTextContent(secret);
    expect(region).toHaveTextContent("shown only this once");
    const writeText = vi.fn().mockResolvedValue(undefined);
    Object.defineProperty(navigator, "clipboard", { value: { writeText }, configurable: true });
    await user.click(within(region).getByRole("button", { name: "Copy" }));
    expect(writeText).toHaveBeenCalledWith(secret);
    expect(within(region).getByRole("status")).toHaveTextContent("Copied.");
    // The list has the new token's name, not its secret; the cache never holds it.
    const row = await screen.findByRole("row", { name: /laptop/ });
    expect(row).not.toHaveTextContent(secret);
    expect(JSON.stringify(client.getQueryCache().getAll().map((q) => q.state.data))).not.toContain(secret);

    await user.click(within(region).getByRole("button", { name: "I have copied it" }));
    expect(screen.queryByText(secret)).toBeNull();
    expect(screen.getByRole("row", { name: /laptop/ })).toBeInTheDocument();
    await waitFor(() => expect(JSON.stringify(client.getMutationCache().getAll().map((m) => m.state.data))).not.toContain(secret));
  });

  it("deletes a token only after confirming", async () => {
    const user = userEvent.setup();
    renderWithClient(<TokensPage />);
    const deletes = () => api.calls.filter((c) => c.method === "DELETE");
    await user.click(await screen.findByRole("button", { name: "Delete ci" }));
    expect(deletes()).toHaveLength(0);
    const confirm = screen.getByRole("group", { name: "Confirm deleting ci" });
    await user.click(within(confirm).getByRole("button", { name: "Cancel" }));
    expect(deletes()).toHaveLength(0);
    await user.click(screen.getByRole("button", { name: "Delete ci" }));
    await user.click(within(screen.getByRole("group", { name: "Confirm deleting ci" })).getByRole("button", { name: "Delete" }));
    await waitFor(() => expect(screen.queryByRole("row", { name: /ci/ })).toBeNull());
    expect(deletes().map((c) => c.path)).toEqual(["/api/tokens/tok_old"]);
    expect(screen.getByText("You have no tokens.")).toBeInTheDocument();
  });

  it("shows the API's refusal next to the form, and the dates in the page's language", async () => {
    api = mockFetch({
      "GET /api/tokens": () => json(200, { tokens }),
      "POST /api/tokens": () => json(400, { error: { code: "invalid_name", message: "name is taken" } }),
    });
    await i18n.changeLanguage("de");
    const user = userEvent.setup();
    renderWithClient(<TokensPage />);
    const row = await screen.findByRole("row", { name: /ci/ });
    expect(row).toHaveTextContent("20.11.2026");
    expect(row).toHaveTextContent("nie");
    await user.type(screen.getByRole("textbox", { name: "Name des Tokens" }), "ci");
    await user.click(screen.getByRole("button", { name: "Token erstellen" }));
    expect(await screen.findByRole("alert")).toHaveTextContent("Das Token konnte nicht erstellt werden: name is taken");
  });
});
