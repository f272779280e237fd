import { render, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, describe, expect, it, vi } from "vitest";
import { api } from "../api/client";
import type { AuditEntry } from "../api/types";
import { AuditPage } from "./AuditPage";

const at = (id: number) => new Date(Date.UTC(2026, 10, 21, 10, 0, id)).toISOString();
const set = (id: number): AuditEntry => ({
  id, at: at(id), actor: "ann", action: "policy.set", server_id: "demo", tool_name: `tool${id}`,
  before: { policy: "never" }, after: { policy: "always" },
});
const del = (id: number): AuditEntry => ({
  id, at: at(id), actor: "ann", action: "policy.delete", server_id: "demo", tool_name: `tool${id}`,
  before: { policy: "blocked" }, after: null,
});
const settings = (id: number): AuditEntry => ({
  id, at: at(id), actor: "local", action: "settings.update", server_id: null, tool_name: null,
  before: { default_policy: "never", local_user: "local" }, after: { default_policy: "always", local_user: "local" },
});

afterEach(() => vi.restoreAllMocks());

describe("AuditPage", () => {
  it("lists entries newest first in plain words and loads more with the cursor", async () => {
    const user = userEvent.setup();
    const first = [set(60), del(59), ...Array.from({ length: 48 }, (_, i) => set(58 - i))];
    const audit = vi.spyOn(api, "audit").mockImplementation(async (q = {}) =>
      q.cursor === "c1" ? { entries: [settings(1)], next_cursor: null } : { entries: first, next_cursor: "c1" });
    render(<AuditPage />);
    const table = await screen.findByRole("table");
    const rows = () => within(table).getAllByRole("row").slice(1);
    expect(rows()).toHaveLength(50);
    expect(audit).toHaveBeenCalledTimes(1);
    expect(rows()[0]).toHaveTextContent("Set demo/tool60 to Ask (was Auto)");
    expect(rows()[0]).toHaveTextContent("ann");
    expect(within(rows()[0]).getByRole("link", { name: "demo/tool60" })).toHaveAttribute("href", "/settings?server=demo&tool=tool60");
    expect(rows()[1]).toHaveTextContent("Removed the policy of demo/tool59 (was Blocked)");
    await user.click(screen.getByRole("button", { name: "Load more" }));
    await waitFor(() => expect(rows()).toHaveLength(51));
    expect(audit).toHaveBeenLastCalledWith(expect.objectContaining({ cursor: "c1" }));
    expect(rows()[50]).toHaveTextContent("Changed the global default from Auto to Ask");
    expect(rows()[50]).toHaveFocus();
    expect(screen.queryByRole("button", { name: "Load more" })).toBeNull();
  });

  it("filters a group of actions by merging one stream per action", async () => {
    const user = userEvent.setup();
    const audit = vi.spyOn(api, "audit").mockImplementation(async (q = {}) => {
      if (q.action === "policy.set") return { entries: [set(5), set(2)], next_cursor: null };
      if (q.action === "policy.delete") return { entries: [del(4), del(1)], next_cursor: null };
      return { entries: [set(5), del(4), settings(3), set(2), del(1)], next_cursor: null };
    });
    render(<AuditPage />);
    await screen.findByRole("table");
    await user.selectOptions(screen.getByLabelText("Action"), "Policy changes");
    await waitFor(() => expect(audit).toHaveBeenCalledWith(expect.objectContaining({ action: "policy.delete" })));
    const table = await screen.findByRole("table");
    await waitFor(() => expect(within(table).getAllByRole("row").slice(1).map((r) => r.getAttribute("data-entry"))).toEqual(["5", "4", "2", "1"]));
  });

  it("says so when nothing is recorded", async () => {
    vi.spyOn(api, "audit").mockResolvedValue({ entries: [], next_cursor: null });
    render(<AuditPage />);
    expect(await screen.findByText("Nothing recorded yet.")).toBeInTheDocument();
  });
});
