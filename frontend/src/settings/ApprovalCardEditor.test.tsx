import { screen, waitFor } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, describe, expect, it, vi } from "vitest";
import { jsonResponse, mockFetch } from "../chat/testutil";
import { renderWithClient } from "../testing";
import { ApprovalCardEditor } from "./ApprovalCardEditor";

const CARDS = "/api/mcp/servers/demo/approval-cards";
const CARD = "/api/mcp/servers/demo/tools/run/approval-card";

afterEach(() => vi.unstubAllGlobals());

describe("ApprovalCardEditor", () => {
  it("saves the text and only the ticked choices", async () => {
    const user = userEvent.setup();
    const puts: unknown[] = [];
    mockFetch({
      [`GET ${CARDS}`]: () => jsonResponse(200, { cards: [] }),
      [`PUT ${CARD}`]: ({ body }) => {
        puts.push(body);
        const b = body as { choices: string[] | null };
        if (b.choices && !b.choices.some((c) => c.startsWith("deny"))) {
          return jsonResponse(400, { error: { code: "invalid_choices", message: "choices must include at least one way to approve and one to deny" } });
        }
        return jsonResponse(200, { server_label: "demo", tool_name: "run", approval_text: null, choices: b.choices });
      },
    });
    renderWithClient(<ApprovalCardEditor server="demo" tool="run" />);
    const text = await screen.findByRole("textbox", { name: "Approval text" });
    await user.type(text, "Run shell command: {{command}");
    for (const name of ["Approve for this conversation", "Approve for 1 hour", "Always (approve or block, remembered)", "Deny with correction"]) {
      await user.click(screen.getByRole("checkbox", { name }));
    }
    await user.click(screen.getByRole("button", { name: "Save approval card" }));
    await waitFor(() => expect(puts).toHaveLength(1));
    expect(puts[0]).toEqual({ approval_text: "Run shell command: {command}", choices: ["approve_once", "deny"] });
  });

  it("shows the API's refusal of choices without a denial", async () => {
    const user = userEvent.setup();
    mockFetch({
      [`GET ${CARDS}`]: () => jsonResponse(200, { cards: [{ server_label: "demo", tool_name: "run", approval_text: "x", choices: ["approve_once", "deny"] }] }),
      [`PUT ${CARD}`]: () => jsonResponse(400, { error: { code: "invalid_choices", message: "choices must include at least one way to approve and one to deny" } }),
    });
    renderWithClient(<ApprovalCardEditor server="demo" tool="run" />);
    expect(await screen.findByRole("textbox", { name: "Approval text" })).toHaveValue("x");
    expect(screen.getByRole("checkbox", { name: "Approve for 1 hour" })).not.toBeChecked();
    await user.click(screen.getByRole("checkbox", { name: "Deny" }));
    await user.click(screen.getByRole("button", { name: "Save approval card" }));
    expect(await screen.findByRole("alert")).toHaveTextContent("choices must include at least one way to approve and one to deny");
    expect(screen.getByRole("button", { name: "Reset to the arguments and every choice" })).toBeInTheDocument();
  });

  it("says what a lock at Ask does to a card that approves only by grants, and only then", async () => {
    const user = userEvent.setup();
    mockFetch({ [`GET ${CARDS}`]: () => jsonResponse(200, { cards: [] }) });
    renderWithClient(<ApprovalCardEditor server="demo" tool="run" />);
    await screen.findByRole("textbox", { name: "Approval text" });
    const note = /card offers Approve once in their place/;
    expect(screen.queryByText(note)).toBeNull();
    await user.click(screen.getByRole("checkbox", { name: "Approve once" }));
    expect(screen.getByText(note)).toBeInTheDocument();
    await user.click(screen.getByRole("checkbox", { name: "Approve for this conversation" }));
    await user.click(screen.getByRole("checkbox", { name: "Approve for 1 hour" }));
    expect(screen.queryByText(note)).toBeNull(); // no way to approve at all: the API says so on save
  });
});

