import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Server } from "../api/types";
import { jsonResponse, mockFetch } from "../chat/testutil";
import { renderWithClient } from "../testing";
import { checkRows, headersPatch, rowsFromHeaders } from "./headers";
import { settingsT } from "./policy";
import { parseTtlMinutes, ServerForm, ttlMinutesText } from "./ServerForm";
import { server as makeServer } from "./testdata";

const server: Server = makeServer({
  label: "crm", url: "https://mcp.example.com/mcp", description: "Customer records",
  headers: { Authorization: "********cdef", "X-Legacy": "********" }, tool_count: 0,
});

afterEach(() => vi.unstubAllGlobals());

describe("headersPatch", () => {
  it("sends nothing when no header changed", () => {
    expect(headersPatch(server.headers, rowsFromHeaders(server.headers))).toBeUndefined();
  });
  it("sends changed values, new headers and null for removed ones", () => {
    const rows = rowsFromHeaders(server.headers).filter((r) => r.existing !== "X-Legacy");
    rows[0].value = "Bearer new";
    rows.push({ key: "n", name: "X-Team", value: "blue" });
    expect(headersPatch(server.headers, rows)).toEqual({ Authorization: "Bearer new", "X-Legacy": null, "X-Team": "blue" });
  });
});

describe("checkRows", () => {
  it("finds a missing name or value and a header named twice", () => {
    const t = settingsT();
    expect(Object.values(checkRows([
      { key: "a", name: "", value: "x" },
      { key: "b", name: "X-Team", value: "" },
      { key: "c", name: "x-team", value: "y" },
    ], t))).toEqual(["Enter the header's name.", "Enter the header's value.", "“x-team” is already set above (header names ignore case)."]);
  });
});

describe("ServerForm", () => {
  it("never puts the masked value into the password field, and PATCHes only what changed", async () => {
    const user = userEvent.setup();
    const { calls } = mockFetch({ "PATCH /api/mcp/servers/crm": () => jsonResponse(200, server) });
    const onSaved = vi.fn();
    renderWithClient(<ServerForm server={server} onSaved={onSaved} onCancel={() => {}} />);
    const values = screen.getAllByLabelText("Header value");
    expect(values).toHaveLength(2);
    for (const v of values) {
      expect(v).toHaveAttribute("type", "password");
      expect(v).toHaveValue("");
    }
    expect(values[0]).toHaveAttribute("placeholder", expect.stringContaining("********cdef"));

    await user.type(values[0], "Bearer rotated");
    await user.click(screen.getByRole("button", { name: "Remove header X-Legacy" }));
    expect(screen.getByText(/Will be removed:/)).toHaveTextContent("Will be removed: X-Legacy");
    await user.click(screen.getByRole("button", { name: "Save changes" }));
    await waitFor(() => expect(onSaved).toHaveBeenCalled());
    expect(calls.filter((c) => c.method === "PATCH")).toEqual([
      { method: "PATCH", path: "/api/mcp/servers/crm", body: { headers: { Authorization: "Bearer rotated", "X-Legacy": null } } },
    ]);
  });

  it("checks the headers before sending and focuses the first problem", async () => {
    const user = userEvent.setup();
    const { calls } = mockFetch({});
    renderWithClient(<ServerForm onSaved={vi.fn()} onCancel={() => {}} />);
    await user.type(screen.getByLabelText("Label"), "crm");
    await user.type(screen.getByLabelText("URL"), "https://mcp.example.com/mcp");
    await user.click(screen.getByRole("button", { name: "+ Add header" }));
    await user.type(screen.getByLabelText("Header name"), "Authorization");
    await user.click(screen.getByRole("button", { name: "Add server" }));
    const value = screen.getByLabelText("Header value");
    expect(value).toHaveAttribute("aria-invalid", "true");
    expect(value).toHaveAccessibleDescription("Enter the header's value.");
    await waitFor(() => expect(value).toHaveFocus());
    expect(calls).toHaveLength(0);
  });

  it("shows the API's field errors next to the fields", async () => {
    const user = userEvent.setup();
    mockFetch({
      "POST /api/mcp/servers": () => jsonResponse(400, { error: {
        code: "invalid_label", message: "the server is not valid", fields: {
          label: "label must be 1-64 characters of letters, digits, '_' and '-' (got \"a b\")",
          url: "url must be an absolute http or https URL",
        },
      } }),
    });
    renderWithClient(<ServerForm onSaved={() => {}} onCancel={() => {}} />);
    await user.type(screen.getByLabelText("Label"), "a b");
    await user.type(screen.getByLabelText("URL"), "nope");
    await user.click(screen.getByRole("button", { name: "Add server" }));
    const label = screen.getByLabelText("Label");
    await waitFor(() => expect(label).toHaveAttribute("aria-invalid", "true"));
    expect(label).toHaveAccessibleDescription(expect.stringContaining("label must be 1-64 characters"));
    expect(screen.getByLabelText("URL")).toHaveAccessibleDescription("url must be an absolute http or https URL");
    expect(within(screen.getByRole("form", { name: "Add server" })).queryByRole("alert")).toBeNull();
  });

  it("shows a refusal that names no field on top, and Escape cancels", async () => {
    const user = userEvent.setup();
    mockFetch({ "POST /api/mcp/servers": () => jsonResponse(409, { error: { code: "conflict", message: "try again" } }) });
    const onCancel = vi.fn();
    renderWithClient(<ServerForm onSaved={() => {}} onCancel={onCancel} />);
    await user.type(screen.getByLabelText("Label"), "crm");
    await user.type(screen.getByLabelText("URL"), "https://x/mcp");
    await user.click(screen.getByRole("button", { name: "Add server" }));
    expect(await screen.findByRole("alert")).toHaveTextContent("try again");
    await user.type(screen.getByLabelText("URL"), "{Escape}");
    expect(onCancel).toHaveBeenCalled();
  });

  it("adds a server masking its results unless the box is cleared, and says what clearing means", async () => {
    const user = userEvent.setup();
    const posts: unknown[] = [];
    mockFetch({ "POST /api/mcp/servers": ({ body }) => { posts.push(body); return jsonResponse(201, makeServer({ label: "crm" })); } });
    const { unmount } = renderWithClient(<ServerForm onSaved={() => {}} onCancel={() => {}} />);
    await user.type(screen.getByLabelText("Label"), "crm");
    await user.type(screen.getByLabelText("URL"), "https://x/mcp");
    await user.click(screen.getByRole("button", { name: "Add server" }));
    await waitFor(() => expect(posts).toHaveLength(1));
    expect(posts[0]).not.toHaveProperty("mask_results");
    unmount();

    renderWithClient(<ServerForm onSaved={() => {}} onCancel={() => {}} />);
    await user.type(screen.getByLabelText("Label"), "raw");
    await user.type(screen.getByLabelText("URL"), "https://x/mcp");
    const box = screen.getByRole("checkbox", { name: "Mask secrets in results" });
    expect(box).toBeChecked();
    await user.click(box);
    expect(box).toHaveAccessibleDescription(/exactly as the server sends them, secrets included/);
    await user.click(screen.getByRole("button", { name: "Add server" }));
    await waitFor(() => expect(posts).toHaveLength(2));
    expect(posts[1]).toMatchObject({ label: "raw", mask_results: false });
  });

  it("edits without the mask switch: the server's section has it", () => {
    renderWithClient(<ServerForm server={server} onSaved={() => {}} onCancel={() => {}} />);
    expect(screen.queryByRole("checkbox", { name: "Mask secrets in results" })).toBeNull();
  });

  it("sets the approval time limit in minutes: a change PATCHes seconds, out of range is refused before sending", async () => {
    const user = userEvent.setup();
    const quick = makeServer({ label: "crm", approval_ttl_seconds: 300 });
    const { calls } = mockFetch({ "PATCH /api/mcp/servers/crm": () => jsonResponse(200, quick) });
    const onSaved = vi.fn();
    renderWithClient(<ServerForm server={quick} onSaved={onSaved} onCancel={() => {}} />);
    const ttl = screen.getByLabelText("Approval time limit (minutes)");
    expect(ttl).toHaveValue("5");

    await user.clear(ttl);
    await user.type(ttl, "0.5");
    await user.click(screen.getByRole("button", { name: "Save changes" }));
    expect(ttl).toHaveAttribute("aria-invalid", "true");
    expect(ttl).toHaveAccessibleDescription(expect.stringContaining("Enter minutes from 1 to 10080"));
    expect(calls.filter((c) => c.method === "PATCH")).toHaveLength(0);

    await user.clear(ttl);
    await user.type(ttl, "15");
    await user.click(screen.getByRole("button", { name: "Save changes" }));
    await waitFor(() => expect(onSaved).toHaveBeenCalled());
    expect(calls.filter((c) => c.method === "PATCH").map((c) => c.body)).toEqual([{ approval_ttl_seconds: 900 }]);
  });
});

describe("approval time limit", () => {
  it("reads and writes minutes", () => {
    expect(ttlMinutesText(null)).toBe("");
    expect(ttlMinutesText(0)).toBe("0");
    expect(ttlMinutesText(90)).toBe("1.5");
    expect(parseTtlMinutes("")).toBeNull();
    expect(parseTtlMinutes("0")).toBe(0);
    expect(parseTtlMinutes("1,5")).toBe(90);
    expect(parseTtlMinutes("10080")).toBe(604800);
    for (const bad of ["0.5", "10081", "-1", "abc", "1e3"]) expect(parseTtlMinutes(bad)).toBeUndefined();
  });
});
