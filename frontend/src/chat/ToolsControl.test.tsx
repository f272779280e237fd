import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { ConversationTools } from "../api/types";
import { renderWithClient } from "../testing";
import { jsonResponse, mockFetch } from "./testutil";
import { toggleServer, toggleTool, ToolsControl } from "./ToolsControl";

afterEach(() => vi.unstubAllGlobals());

const choices = (over: Partial<ConversationTools> = {}): ConversationTools => ({
  servers: {},
  available: [
    {
      label: "demo", description: "Weather", enabled: true, offers_unknown: false,
      tools: [
        { name: "delete_forecast", policy: "always", selected: true },
        { name: "get_forecast", policy: "never", selected: true },
        { name: "list_forecasts", policy: "never", selected: true },
      ],
    },
    { label: "crm", description: "", enabled: true, offers_unknown: true, tools: [] },
  ],
  ...over,
});

describe("toggleTool / toggleServer", () => {
  it("lists the tools left when one is deselected, and goes back to every tool (null) when all are selected again", () => {
    const ct = choices();
    expect(toggleTool(ct, "demo", "get_forecast")).toEqual({
      servers: { demo: { enabled: true, tools: ["delete_forecast", "list_forecasts"] } },
    });
    const one = choices({ servers: { demo: { enabled: true, tools: ["delete_forecast", "list_forecasts"] } } });
    one.available[0].tools[1].selected = false;
    expect(toggleTool(one, "demo", "get_forecast")).toEqual({ servers: { demo: { enabled: true, tools: null } } });
  });
  it("turns a server off keeping its tool choice, and on again", () => {
    const ct = choices({ servers: { demo: { enabled: true, tools: ["get_forecast"] } } });
    expect(toggleServer(ct, "demo")).toEqual({ servers: { demo: { enabled: false, tools: ["get_forecast"] } } });
    const off = choices({ servers: { crm: { enabled: false, tools: null } } });
    off.available[1].enabled = false;
    expect(toggleServer(off, "crm")).toEqual({ servers: { crm: { enabled: true, tools: null } } });
  });
});

describe("ToolsControl", () => {
  it("shows the counts, and deselecting a tool PUTs the new choice and shows what the server stored", async () => {
    const user = userEvent.setup();
    const stored = choices({ servers: { demo: { enabled: true, tools: ["delete_forecast", "list_forecasts"] } } });
    stored.available[0].tools[1].selected = false;
    const { calls } = mockFetch({
      "GET /api/conversations/conv_1/tools": () => jsonResponse(200, choices()),
      "PUT /api/conversations/conv_1/tools": () => jsonResponse(200, stored),
    });
    renderWithClient(<ToolsControl conversationId="conv_1" onCreate={() => Promise.reject(new Error("not new"))} />);
    const button = await screen.findByRole("button", { name: /Tools\s*3 of 3 tools/ });
    expect(button).toHaveAttribute("aria-expanded", "false");
    await user.click(button);
    expect(button).toHaveAttribute("aria-expanded", "true");

    const panel = screen.getByRole("group", { name: "Tools offered in this conversation" });
    const demo = within(panel).getByRole("group", { name: /demo/ });
    expect(within(demo).getByText("3 of 3 tools")).toBeInTheDocument();
    expect(within(panel).getByText("All tools (not discovered yet)")).toBeInTheDocument();
    await user.click(within(demo).getByRole("checkbox", { name: "get_forecast" }));
    await waitFor(() => expect(within(demo).getByRole("checkbox", { name: "get_forecast" })).not.toBeChecked());
    expect(calls.find((c) => c.method === "PUT")?.body).toEqual({
      servers: { demo: { enabled: true, tools: ["delete_forecast", "list_forecasts"] } },
    });
    expect(within(demo).getByText("2 of 3 tools")).toBeInTheDocument();
    expect(screen.getByRole("button", { name: /Tools\s*2 of 3 tools/ })).toBeInTheDocument();

    await user.keyboard("{Escape}");
    expect(button).toHaveAttribute("aria-expanded", "false");
    expect(button).toHaveFocus();
  });

  it("turning a server off disables its tools", async () => {
    const user = userEvent.setup();
    const off = choices({ servers: { demo: { enabled: false, tools: null } } });
    off.available[0].enabled = false;
    mockFetch({
      "GET /api/conversations/conv_1/tools": () => jsonResponse(200, choices()),
      "PUT /api/conversations/conv_1/tools": () => jsonResponse(200, off),
    });
    renderWithClient(<ToolsControl conversationId="conv_1" onCreate={() => Promise.reject(new Error("not new"))} />);
    await user.click(await screen.findByRole("button", { name: /Tools/ }));
    await user.click(screen.getByRole("checkbox", { name: "demo" }));
    await waitFor(() => expect(screen.getByRole("checkbox", { name: "demo" })).not.toBeChecked());
    for (const name of ["delete_forecast", "get_forecast", "list_forecasts"]) {
      const box = screen.getByRole("checkbox", { name: new RegExp(`^${name}`) });
      expect(box).toBeDisabled();
      expect(box).not.toBeChecked();
    }
  });

  it("says why a change was refused", async () => {
    const user = userEvent.setup();
    mockFetch({
      "GET /api/conversations/conv_1/tools": () => jsonResponse(200, choices()),
      "PUT /api/conversations/conv_1/tools": () =>
        jsonResponse(400, { error: { code: "unknown_tool", message: "the demo server has no tool \"get_forecast\" that Toolgate knows of" } }),
    });
    renderWithClient(<ToolsControl conversationId="conv_1" onCreate={() => Promise.reject(new Error("not new"))} />);
    await user.click(await screen.findByRole("button", { name: /Tools/ }));
    await user.click(screen.getByRole("checkbox", { name: "get_forecast" }));
    expect(await screen.findByRole("alert")).toHaveTextContent("has no tool");
    expect(screen.getByRole("checkbox", { name: "get_forecast" }), "what was stored is shown again").toBeChecked();
  });

  it("in a new chat, creates the conversation first", async () => {
    const user = userEvent.setup();
    const onCreate = vi.fn(() => Promise.resolve("conv_new"));
    mockFetch({});
    renderWithClient(<ToolsControl conversationId={undefined} onCreate={onCreate} />);
    await user.click(screen.getByRole("button", { name: /Tools/ }));
    expect(onCreate).toHaveBeenCalledTimes(1);
  });
});
