import { act, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { AuditEntry } from "../api/types";
import { jsonResponse, mockFetch } from "../chat/testutil";
import i18n from "../i18n";
import { renderWithClient } from "../testing";
import { AuditPage } from "./AuditPage";
import { apiError, entry } from "./testdata";

const at = (id: number) => new Date(Date.UTC(2026, 10, 21, 10, 0, id)).toISOString();
const set = (id: number): AuditEntry => entry({
  id, at: at(id), actor: "ann", action: "policy.set", tool_name: `tool${id}`, before: { policy: "never" }, after: { policy: "always" },
});
const del = (id: number): AuditEntry => entry({
  id, at: at(id), actor: "ann", action: "policy.delete", tool_name: `tool${id}`, before: { policy: "blocked" }, after: null,
});
const settings = (id: number): AuditEntry => entry({
  id, at: at(id), actor: "local", action: "settings.update", server_label: null, server_id: null, tool_name: null,
  before: { default_policy: "never", default_policy_locked: false }, after: { default_policy: "always", default_policy_locked: false },
});
const page = (entries: AuditEntry[], next_cursor: string | null = null) => () => jsonResponse(200, { entries, next_cursor });

afterEach(() => vi.unstubAllGlobals());

const rows = (table: HTMLElement) => within(table).getAllByRole("row").slice(1);

describe("AuditPage", () => {
  it("lists entries newest first in plain words and loads more with the cursor", async () => {
    const user = userEvent.setup();
    const first = [set(60), del(59), ...Array.from({ length: 48 }, (_, i) => set(58 - i))];
    const { calls } = mockFetch({
      "GET /api/audit?limit=50": page(first, "c1"),
      "GET /api/audit?limit=50&cursor=c1": page([settings(1)]),
    });
    renderWithClient(<AuditPage />);
    const table = await screen.findByRole("table");
    expect(rows(table)).toHaveLength(50);
    expect(calls).toHaveLength(1);
    expect(rows(table)[0]).toHaveTextContent("Set demo/tool60 to Ask (was Auto)");
    expect(rows(table)[0]).toHaveTextContent("ann");
    expect(within(rows(table)[0]).getByRole("link", { name: "demo/tool60" })).toHaveAttribute("href", "/settings?server=demo&tool=tool60");
    expect(rows(table)[1]).toHaveTextContent("Removed the policy of demo/tool59 (was Blocked)");
    await user.click(screen.getByRole("button", { name: "Load more" }));
    await waitFor(() => expect(rows(table)).toHaveLength(51));
    expect(calls.at(-1)?.path).toBe("/api/audit?limit=50&cursor=c1");
    expect(rows(table)[50]).toHaveTextContent("Changed the global default from Auto to Ask");
    await waitFor(() => expect(rows(table)[50]).toHaveFocus());
    expect(screen.queryByRole("button", { name: "Load more" })).toBeNull();
    expect(screen.getByText("That is everything.")).toBeInTheDocument();
  });

  it("filters a group of actions by merging one stream per action", async () => {
    const user = userEvent.setup();
    const { calls } = mockFetch({
      "GET /api/audit?limit=50": page([set(5), del(4), settings(3), set(2), del(1)]),
      "GET /api/audit?limit=50&action=policy.set": page([set(5), set(2)]),
      "GET /api/audit?limit=50&action=policy.delete": page([del(4), del(1)]),
      "GET /api/audit?limit=50&action=policy.clear": page([]),
    });
    renderWithClient(<AuditPage />);
    await screen.findByRole("table");
    await user.selectOptions(screen.getByLabelText("Action"), "Policy changes");
    await waitFor(() => expect(calls.map((c) => c.path)).toContain("/api/audit?limit=50&action=policy.delete"));
    const table = await screen.findByRole("table", { name: "Audit log: policy changes, newest first" });
    await waitFor(() => expect(rows(table).map((r) => r.getAttribute("data-entry"))).toEqual(["5", "4", "2", "1"]));
    expect(screen.getByText("That is everything for policy changes.")).toBeInTheDocument();
  });

  it("exports what the filter shows as JSON lines, every page of it (the export button of docs/web-app.md)", async () => {
    const user = userEvent.setup();
    mockFetch({
      "GET /api/audit?limit=50": page([set(2), settings(1)]),
      "GET /api/audit?limit=50&action=policy.set": page([set(2)]),
      "GET /api/audit?limit=50&action=policy.delete": page([]),
      "GET /api/audit?limit=50&action=policy.clear": page([]),
      "GET /api/audit?limit=50&action=tool.call": page([]),
    });
    renderWithClient(<AuditPage />);
    await screen.findByRole("table");
    const target = () => {
      const link = screen.getByRole("link", { name: "Export (JSON lines)" });
      const url = new URL(link.getAttribute("href")!, "http://toolgate.test");
      return { path: url.pathname, format: url.searchParams.get("format"), action: url.searchParams.get("action"), file: link.getAttribute("download") };
    };
    expect(target()).toEqual({ path: "/api/audit/export", format: "jsonl", action: null, file: "toolgate-audit.jsonl" });
    await user.selectOptions(screen.getByLabelText("Action"), "Policy changes");
    expect(target()).toEqual({ path: "/api/audit/export", format: "jsonl", action: "policy.set,policy.delete,policy.clear", file: "toolgate-audit.jsonl" });
    await user.selectOptions(screen.getByLabelText("Action"), "Tool calls");
    expect(target()).toMatchObject({ action: "tool.call" });
  });

  it("shows tool-call receipts under their own filter", async () => {
    const user = userEvent.setup();
    const call = (id: number): AuditEntry => entry({
      id, at: at(id), actor: "ana@example.com", action: "tool.call", tool_name: "delete_forecast", before: null,
      after: {
        conversation_id: "conv_9", response_id: "resp_1", call_id: `mcp_${id}`, approval_request_id: "mcpr_1",
        server_label: "demo", tool_name: "delete_forecast", arguments: { city: "Oslo" }, arguments_text: '{"city":"Oslo"}',
        redacted: [], arguments_sha256: "ab12", allowed_by: { kind: "approval" }, decided_by: "ana@example.com",
        decided_by_id: "usr_1", outcome: "output", output_sha256: "cd34", error: null,
      },
    });
    const { calls } = mockFetch({
      "GET /api/audit?limit=50": page([call(3), set(2), settings(1)]),
      "GET /api/audit?limit=50&action=tool.call": page([call(3)]),
    });
    renderWithClient(<AuditPage />);
    await screen.findByRole("table");
    await user.selectOptions(screen.getByLabelText("Action"), "Tool calls");
    const table = await screen.findByRole("table", { name: "Audit log: tool calls, newest first" });
    expect(calls.at(-1)?.path).toBe("/api/audit?limit=50&action=tool.call");
    await waitFor(() => expect(rows(table)).toHaveLength(1));
    const row = rows(table)[0];
    expect(row).toHaveTextContent("Ran demo/delete_forecast");
    expect(row).toHaveTextContent('Arguments: {"city":"Oslo"}');
    expect(row).toHaveTextContent("Approved by ana@example.com");
    expect(row).toHaveTextContent("SHA-256 of the arguments: ab12; of the output: cd34");
    expect(within(row).getByRole("link", { name: "Open the conversation" })).toHaveAttribute("href", expect.stringContaining("conv_9"));
  });

  it("says so when nothing is recorded", async () => {
    mockFetch({ "GET /api/audit?limit=50": page([]) });
    renderWithClient(<AuditPage />);
    expect(await screen.findByText("Nothing recorded yet.")).toBeInTheDocument();
  });

  it("shows the API's sentence when the log cannot be read, and tries again", async () => {
    const user = userEvent.setup();
    let fail = true;
    mockFetch({
      "GET /api/audit?limit=50": () => (fail
        ? jsonResponse(503, apiError("database_unavailable", "the database is not reachable; try again shortly"))
        : jsonResponse(200, { entries: [set(1)], next_cursor: null })),
    });
    renderWithClient(<AuditPage />);
    expect(await screen.findByRole("alert")).toHaveTextContent("Could not load the audit log: the database is not reachable; try again shortly");
    fail = false;
    await user.click(screen.getByRole("button", { name: "Try again" }));
    expect(await screen.findByRole("table")).toHaveTextContent("Set demo/tool1 to Ask (was Auto)");
    expect(screen.queryByRole("alert")).toBeNull();
  });

  it("reads German, with German dates", async () => {
    await act(() => i18n.changeLanguage("de"));
    mockFetch({ "GET /api/audit?limit=50": page([set(7)]) });
    renderWithClient(<AuditPage />);
    const table = await screen.findByRole("table", { name: "Audit-Protokoll: alle Aktionen, die neuesten zuerst" });
    expect(rows(table)[0]).toHaveTextContent("demo/tool7 auf Nachfragen gesetzt (vorher Automatisch)");
    expect(rows(table)[0]).toHaveTextContent("21.11.2026");
    expect(screen.getByRole("columnheader", { name: "Wann" })).toBeInTheDocument();
  });
});
