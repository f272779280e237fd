import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { components } from "../api/schema";
import { jsonResponse as json } from "../chat/testutil";
import { renderWithClient } from "../testing";
import { ApprovalStatsPage } from "./ApprovalStatsPage";

type Stats = components["schemas"]["ApprovalStats"];
type ToolStats = components["schemas"]["ToolApprovalStats"];

const tool = (over: Partial<ToolStats>): ToolStats => ({
  server_label: "demo", tool_name: "delete_forecast", ran_unasked: 0, asked: 0, approved: 0, denied: 0, stopped: 0, expired: 0,
  superseded: 0, median_seconds_to_decision: null, top_deciders: [], workspace_policy: "always", suggest_auto: false, ...over,
});
const stats: Stats = {
  from: "2026-10-29T20:00:00Z", to: "2026-11-28T20:00:00Z", suggest_auto_min: 5,
  tools: [
    tool({ asked: 7, approved: 6, expired: 1, median_seconds_to_decision: 150, suggest_auto: true,
      top_deciders: [{ user_id: "usr_1", email: "ann@example.com", count: 4 }, { user_id: "usr_2", email: "bob@example.com", count: 2 }] }),
    tool({ tool_name: "get_forecast", ran_unasked: 12, workspace_policy: "never" }),
  ],
};
let asked: URLSearchParams[];
let answer: () => Response;

beforeEach(() => {
  asked = [];
  answer = () => json(200, stats);
  vi.stubGlobal("fetch", vi.fn(async (input: Request) => {
    const u = new URL(input.url);
    if (u.pathname !== "/api/approvals/stats") return json(404, { error: { code: "not_found", message: "no" } });
    asked.push(u.searchParams);
    return answer();
  }));
});
afterEach(() => vi.unstubAllGlobals());

describe("ApprovalStatsPage", () => {
  it("shows each tool's counts, median and deciders, and suggests Auto where a tool was approved every time", async () => {
    renderWithClient(<ApprovalStatsPage />);
    expect(screen.getByRole("heading", { name: "Approvals" })).toBeInTheDocument();
    const del = await screen.findByRole("row", { name: /delete_forecast/ });
    const cell = (row: HTMLElement, label: string) => within(row).getAllByRole("cell").find((c) => c.dataset.label === label);
    expect(cell(del, "Asked")).toHaveTextContent("7");
    expect(cell(del, "Approved")).toHaveTextContent("6");
    expect(cell(del, "Expired")).toHaveTextContent("1");
    expect(cell(del, "Approval rate")).toHaveTextContent("86%");
    expect(cell(del, "Median time to decide")).toHaveTextContent("2.5 min");
    expect(cell(del, "Top deciders")).toHaveTextContent("ann@example.com (4), bob@example.com (2)");
    expect(del).toHaveTextContent("now: Ask");
    expect(del).toHaveTextContent("Approved every time it asked (6 times).");
    expect(within(del).getByRole("link", { name: "Make delete_forecast on demo Auto? Opens its setting" }))
      .toHaveAttribute("href", "/settings?server=demo&tool=delete_forecast");

    const get = screen.getByRole("row", { name: /get_forecast/ });
    expect(cell(get, "Ran unasked")).toHaveTextContent("12");
    expect(cell(get, "Approval rate")).toHaveTextContent("—");
    expect(cell(get, "Median time to decide")).toHaveTextContent("—");
    expect(within(get).queryByRole("link")).toBeNull();
    expect(get).toHaveTextContent("now: Auto");

    // The last 30 days by default: from 30 days ago, to the API's now.
    const from = Date.parse(asked[0].get("from") ?? "");
    expect(Math.abs(Date.now() - 30 * 86400_000 - from)).toBeLessThan(60_000);
    expect(asked[0].has("to")).toBe(false);
  });

  it("asks for the period chosen; a custom period that cannot be is said, and not asked for", async () => {
    const user = userEvent.setup();
    renderWithClient(<ApprovalStatsPage />);
    await screen.findByRole("row", { name: /delete_forecast/ });
    await user.selectOptions(screen.getByLabelText("Period"), "Last 7 days");
    await waitFor(() => expect(asked).toHaveLength(2));
    expect(Math.abs(Date.now() - 7 * 86400_000 - Date.parse(asked[1].get("from") ?? ""))).toBeLessThan(60_000);

    await user.selectOptions(screen.getByLabelText("Period"), "Custom…");
    await waitFor(() => expect(asked).toHaveLength(3));
    const first = screen.getByLabelText("First day");
    const last = screen.getByLabelText("Last day");
    await user.clear(first);
    await user.type(first, "2026-11-05");
    await user.clear(last);
    await user.type(last, "2026-11-04");
    expect(await screen.findByRole("alert")).toHaveTextContent("The first day must not be after the last day.");
    const before = asked.length;
    await user.clear(last);
    await user.type(last, "2026-11-06");
    await waitFor(() => expect(asked.at(-1)?.get("to")).toBe(new Date(2026, 10, 7).toISOString()));
    expect(asked.at(-1)?.get("from")).toBe(new Date(2026, 10, 5).toISOString());
    expect(asked.length).toBe(before + 1);
    expect(screen.queryByRole("alert")).toBeNull();
  });

  it("says when nothing happened, and what failed", async () => {
    answer = () => json(200, { ...stats, tools: [] });
    const { unmount } = renderWithClient(<ApprovalStatsPage />);
    expect(await screen.findByText("Nothing happened in this period.")).toBeInTheDocument();
    unmount();
    answer = () => json(400, { error: { code: "invalid_period", message: "the period is longer than 366 days; choose a shorter one" } });
    renderWithClient(<ApprovalStatsPage />);
    expect(await screen.findByRole("alert")).toHaveTextContent("The approval statistics could not be loaded: the period is longer than 366 days");
  });
});
