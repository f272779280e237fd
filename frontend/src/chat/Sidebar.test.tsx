import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { Conversation } from "../api/types";
import { useRoute } from "../router";
import { renderWithClient } from "../testing";
import { ChatPage } from "./ChatPage";
import { conversation, info, jsonResponse, mockFetch, transcript, userItem } from "./testutil";

function Harness() {
  const r = useRoute();
  return r.page === "chat" ? <ChatPage conversationId={r.conversationId} /> : null;
}

beforeEach(() => { history.replaceState(null, "", "/c/conv_1"); });
afterEach(() => vi.unstubAllGlobals());

function routes(list: Conversation[]) {
  return {
    "GET /api/info": () => jsonResponse(200, info),
    "GET /api/conversations": () => jsonResponse(200, { conversations: list }),
    "GET /api/conversations/conv_1": () => jsonResponse(200, transcript([userItem(1, "first chat")], list[0])),
    "GET /api/conversations/conv_2": () => jsonResponse(200, { ...transcript([userItem(1, "second chat")], list[1]), conversation: list[1] }),
  };
}

describe("Sidebar", () => {
  it("opens as a drawer from the menu button; Escape closes it and gives focus back", async () => {
    mockFetch(routes([conversation(), conversation({ id: "conv_2", title: "Other" })]));
    const user = userEvent.setup();
    renderWithClient(<Harness />);
    const menu = await screen.findByRole("button", { name: "Conversations" });
    const nav = screen.getByRole("navigation", { name: "Conversations" });
    expect(menu).toHaveAttribute("aria-expanded", "false");
    expect(menu).toHaveAttribute("aria-controls", nav.id);
    await user.click(menu);
    expect(menu).toHaveAttribute("aria-expanded", "true");
    expect(nav).toHaveClass("is-open");
    expect(within(nav).getByRole("button", { name: "New chat" })).toHaveFocus();
    await user.keyboard("{Escape}");
    expect(menu).toHaveAttribute("aria-expanded", "false");
    expect(nav).not.toHaveClass("is-open");
    expect(menu).toHaveFocus();
  });

  it("picking a conversation in the drawer closes it and moves focus to the conversation's title", async () => {
    mockFetch(routes([conversation(), conversation({ id: "conv_2", title: "Other" })]));
    const user = userEvent.setup();
    renderWithClient(<Harness />);
    await user.click(await screen.findByRole("button", { name: "Conversations" }));
    const nav = screen.getByRole("navigation", { name: "Conversations" });
    await user.click(await within(nav).findByRole("link", { name: "Other" }));
    await waitFor(() => expect(location.pathname).toBe("/c/conv_2"));
    expect(nav).not.toHaveClass("is-open");
    expect(await screen.findByText("second chat")).toBeInTheDocument();
    expect(screen.getByRole("heading", { level: 1, name: "Other" })).toHaveFocus();
  });

  it("a click outside the drawer closes it", async () => {
    mockFetch(routes([conversation()]));
    const user = userEvent.setup();
    renderWithClient(<Harness />);
    await user.click(await screen.findByRole("button", { name: "Conversations" }));
    await user.click(await screen.findByText("first chat"));
    expect(screen.getByRole("navigation", { name: "Conversations" })).not.toHaveClass("is-open");
  });

  it("a rename the server refuses keeps the old title and says why", async () => {
    const list = [conversation()];
    mockFetch({
      ...routes(list),
      "PATCH /api/conversations/conv_1": () => jsonResponse(400, { error: { code: "invalid_title", message: "the title is too long" } }),
    });
    const user = userEvent.setup();
    renderWithClient(<Harness />);
    const nav = await screen.findByRole("navigation", { name: "Conversations" });
    await user.click(await within(nav).findByRole("button", { name: "Rename Weather chores" }));
    const input = within(nav).getByRole("textbox", { name: "New title for Weather chores" });
    await user.clear(input);
    await user.type(input, "Trip{Enter}");
    expect(await within(nav).findByRole("alert")).toHaveTextContent("the title is too long");
    await user.click(within(nav).getByRole("button", { name: "Cancel" }));
    expect(within(nav).getByRole("link", { name: "Weather chores" })).toBeInTheDocument();
    expect(within(nav).queryByRole("link", { name: "Trip" })).toBeNull();
  });

  it("shows the list in German", async () => {
    const { default: i18n } = await import("../i18n");
    await i18n.changeLanguage("de");
    mockFetch(routes([conversation({ pending_approvals: 1, streaming: true })]));
    renderWithClient(<Harness />);
    const nav = await screen.findByRole("navigation", { name: "Unterhaltungen" });
    expect(within(nav).getByRole("button", { name: "Neuer Chat" })).toBeInTheDocument();
    expect(await within(nav).findByText("Bestätigung nötig")).toBeInTheDocument();
    expect(within(nav).getByText("läuft")).toBeInTheDocument();
    expect(within(nav).getByRole("button", { name: "Weather chores umbenennen" })).toBeInTheDocument();
  });
});
