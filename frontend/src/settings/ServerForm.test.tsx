import { render, screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, describe, expect, it, vi } from "vitest";
import { ApiError, api } from "../api/client";
import type { Server } from "../api/types";
import { headersPatch, rowsFromHeaders, ServerForm } from "./ServerForm";

const server: Server = {
  label: "crm", url: "https://mcp.example.com/mcp", description: "Customer records",
  headers: { Authorization: "********cdef", "X-Legacy": "********" }, default_policy: null, enabled: true,
  created_at: "", updated_at: "", tools_refreshed_at: null, tools_refresh_error: null, tool_count: 0,
};

afterEach(() => vi.restoreAllMocks());

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

describe("ServerForm", () => {
  it("never puts the masked value into the password field, and PATCHes only what changed", async () => {
    const user = userEvent.setup();
    const update = vi.spyOn(api, "updateServer").mockResolvedValue(server);
    const onSaved = vi.fn();
    render(<ServerForm server={server} onSaved={onSaved} onCancel={() => {}} />);
    const values = screen.getAllByLabelText("Header value");
    expect(values).toHaveLength(2);
    for (const v of values) {
      expect(v).toHaveAttribute("type", "password");
      expect(v).toHaveValue("");
    }
    expect(values[0]).toHaveAttribute("placeholder", expect.stringContaining("********cdef"));

    await user.type(values[0], "Bearer rotated");
    await user.click(screen.getByRole("button", { name: "Remove header X-Legacy" }));
    await user.click(screen.getByRole("button", { name: "Save changes" }));
    expect(update).toHaveBeenCalledWith("crm", { headers: { Authorization: "Bearer rotated", "X-Legacy": null } });
    expect(onSaved).toHaveBeenCalled();
  });

  it("shows the API's field errors next to the fields", async () => {
    const user = userEvent.setup();
    vi.spyOn(api, "createServer").mockRejectedValue(new ApiError(400, "invalid_label", "the server is not valid", {
      label: "label must be 1-64 characters of letters, digits, '_' and '-' (got \"a b\")",
      url: "url must be an absolute http or https URL",
    }));
    render(<ServerForm onSaved={() => {}} onCancel={() => {}} />);
    await user.type(screen.getByLabelText("Label"), "a b");
    await user.type(screen.getByLabelText("URL"), "nope");
    await user.click(screen.getByRole("button", { name: "Add server" }));
    const label = screen.getByLabelText("Label");
    expect(label).toHaveAttribute("aria-invalid", "true");
    expect(label).toHaveAccessibleDescription(expect.stringContaining("label must be 1-64 characters"));
    expect(screen.getByLabelText("URL")).toHaveAccessibleDescription("url must be an absolute http or https URL");
    expect(within(screen.getByRole("form", { name: "Add server" })).queryByRole("alert")).toBeNull();
  });
});
