import { render, screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it, vi } from "vitest";
import "../i18n";
import type { Approval } from "../api/types";
import { href } from "../router";
import { ApprovalCard } from "./ApprovalCard";
import { DecidedApproval } from "./items";
import { widerOffer } from "./wider";
import { approval as makeApproval } from "./testutil";

const card = (over: Partial<Approval> = {}) => makeApproval("mcpr_1", "delete_forecast", { asks_because: { policy: "always", source: "global", reason: "not_read_only" }, ...over });

function setup(role: "admin" | "member" | undefined, over: Partial<Approval> = {}) {
  const onDecide = vi.fn();
  const user = userEvent.setup();
  render(<ApprovalCard approval={card(over)} busy={false} role={role} onDecide={onDecide} />);
  const el = screen.getByRole("article");
  return { onDecide, user, el };
}

describe("widerOffer", () => {
  it("offers an admin both wider choices, a member a link to their settings for the server, and nobody else anything", () => {
    expect(widerOffer(card(), "admin")).toEqual({ menu: ["server", "everything"], links: [] });
    const m = widerOffer(card(), "member");
    expect(m.menu).toEqual([]);
    expect(m.links.map((l) => href(l.to))).toEqual(["/settings?server=demo"]);
    expect(widerOffer(card(), undefined)).toEqual({ menu: [], links: [] });
  });

  it("offers nothing wider on a card whose choices lack remember, or under a lock at Ask", () => {
    for (const role of ["admin", "member"] as const) {
      expect(widerOffer(card({ choices: ["approve_once", "deny"] }), role)).toEqual({ menu: [], links: [] });
      expect(widerOffer(card({ ask_lock: "tool" }), role)).toEqual({ menu: [], links: [] });
    }
    expect(widerOffer(card({ choices: ["approve_once", "remember", "deny"] }), "admin").menu).toEqual(["server", "everything"]);
  });
});

describe("ApprovalCard, deciding wider", () => {
  it("an admin picks “every tool of demo”, sees what changes, and only the confirmation sends scope server", async () => {
    const { user, el, onDecide } = setup("admin");
    await user.click(within(el).getByRole("button", { name: "More approval choices" }));
    await user.click(screen.getByRole("menuitem", { name: /Approve for every tool of demo/ }));
    expect(onDecide).not.toHaveBeenCalled();
    const confirm = within(el).getByRole("group", { name: "Confirm approving every tool of demo" });
    expect(confirm).toHaveTextContent("The server's default policy becomes Auto");
    expect(confirm).toHaveTextContent("locked at Ask still asks");
    await user.click(within(confirm).getByRole("button", { name: "Cancel" }));
    expect(within(el).queryByRole("group", { name: /Confirm approving/ })).toBeNull();
    expect(onDecide).not.toHaveBeenCalled();

    await user.click(within(el).getByRole("button", { name: "More approval choices" }));
    await user.click(screen.getByRole("menuitem", { name: /Approve for every tool of demo/ }));
    await user.click(within(el).getByRole("button", { name: "Approve and set demo to Auto" }));
    expect(onDecide).toHaveBeenCalledWith({ approval_request_id: "mcpr_1", approve: true, scope: "server" });
  });

  it("an admin's “Approve everything” confirms the global default, and says when this tool's own policy keeps it asking", async () => {
    const { user, el, onDecide } = setup("admin", { asks_because: { policy: "always", source: "tool" } });
    await user.click(within(el).getByRole("button", { name: "More approval choices" }));
    await user.click(screen.getByRole("menuitem", { name: /Approve everything/ }));
    const confirm = within(el).getByRole("group", { name: "Confirm approving everything" });
    expect(confirm).toHaveTextContent("The global default policy becomes Auto");
    expect(confirm).toHaveTextContent("it will still ask next time");
    await user.click(within(confirm).getByRole("button", { name: "Approve and set the global default to Auto" }));
    expect(onDecide).toHaveBeenCalledWith({ approval_request_id: "mcpr_1", approve: true, scope: "everything" });
  });

  it("a member gets no wider menu items, only a link to their own policies for the server", async () => {
    const { user, el } = setup("member");
    await user.click(within(el).getByRole("button", { name: "More approval choices" }));
    expect(screen.queryByRole("menuitem", { name: /every tool|everything/i })).toBeNull();
    expect(within(el).getByRole("link", { name: "your policies for demo's tools" })).toHaveAttribute("href", "/settings?server=demo");
  });

  it("a limited card offers an admin nothing wider", async () => {
    const { el } = setup("admin", { choices: ["approve_once", "approve_conversation", "deny"] });
    await userEvent.setup().click(within(el).getByRole("button", { name: "More approval choices" }));
    expect(screen.queryByRole("menuitem", { name: /every tool|everything/i })).toBeNull();
    expect(within(el).queryByRole("link")).toBeNull();
  });
});

describe("a request decided wider", () => {
  it("says, once decided, that its server (or everything) was approved with it", () => {
    const { rerender } = render(<DecidedApproval approval={{ ...card(), state: "approved", scope: "server" }} />);
    expect(screen.getByText(/approved for every tool of its server \(its default is now Auto\)/)).toBeInTheDocument();
    rerender(<DecidedApproval approval={{ ...card(), state: "approved", scope: "everything" }} />);
    expect(screen.getByText(/approved for everything \(the global default is now Auto\)/)).toBeInTheDocument();
  });
});
