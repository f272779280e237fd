import { render, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { api } from "../api/client";
import type { ApiToken } from "../api/types";
import { TokensPage } from "./TokensPage";

let tokens: ApiToken[];
beforeEach(() => {
  tokens = [{ id: "tok_old", name: "ci", created_at: "2026-11-20T10:00:00Z", last_used_at: null }];
  vi.spyOn(api, "listTokens").mockImplementation(async () => tokens);
});
afterEach(() => vi.restoreAllMocks());

describe("TokensPage", () => {
  it("shows a new token once, with a warning and a copy button, and never again", async () => {
    const user = userEvent.setup();
    const secret = "tg_s3cr3t_value_0123456789";
    const create = vi.spyOn(api, "createToken").mockResolvedValue({ id: "tok_new", name: "laptop", token: secret, created_at: "2026-11-22T10:00:00Z" });
    render(<TokensPage />);
    await screen.findByRole("row", { name: /ci/ });
    await user.type(screen.getByRole("textbox", { name: "Token name" }), "  laptop ");
    await user.click(screen.getByRole("button", { name: "Create token" }));
    expect(create).toHaveBeenCalledWith("laptop");

    const region = await screen.findByRole("region", { name: "New token laptop" });
    expect(within(region).getByLabelText("Token")).toHaveTextContent(secret);
    expect(region).toHaveTextContent("shown only this once");
    const writeText = vi.fn().mockResolvedValue(undefined);
    Object.defineProperty(navigator, "clipboard", { value: { writeText }, configurable: true });
    await user.click(within(region).getByRole("button", { name: "Copy" }));
    expect(writeText).toHaveBeenCalledWith(secret);
    expect(within(region).getByRole("status")).toHaveTextContent("Copied.");
    // The list has the new token's name, not its secret.
    const row = screen.getByRole("row", { name: /laptop/ });
    expect(row).not.toHaveTextContent(secret);

    await user.click(within(region).getByRole("button", { name: "I have copied it" }));
    expect(screen.queryByText(secret)).toBeNull();
    expect(screen.getByRole("row", { name: /laptop/ })).toBeInTheDocument();
  });

  it("deletes a token only after confirming", async () => {
    const user = userEvent.setup();
    const del = vi.spyOn(api, "deleteToken").mockResolvedValue(undefined);
    render(<TokensPage />);
    await user.click(await screen.findByRole("button", { name: "Delete ci" }));
    expect(del).not.toHaveBeenCalled();
    const confirm = screen.getByRole("group", { name: "Confirm deleting ci" });
    await user.click(within(confirm).getByRole("button", { name: "Cancel" }));
    expect(del).not.toHaveBeenCalled();
    await user.click(screen.getByRole("button", { name: "Delete ci" }));
    await user.click(within(screen.getByRole("group", { name: "Confirm deleting ci" })).getByRole("button", { name: "Delete" }));
    expect(del).toHaveBeenCalledWith("tok_old");
    await waitFor(() => expect(screen.queryByRole("row", { name: /ci/ })).toBeNull());
  });
});
