import { render, screen, within } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import "../i18n";
import type { CallItem } from "../api/types";
import { ToolCallRow } from "./items";
import { MAX_IMAGE_BYTES } from "./toolOutput";

// A 1×1 PNG, and the start of a GIF.
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
const GIF = btoa("GIF89a\x01\x00\x01\x00\x00\x00\x00;");
const SVG = btoa('<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>');

const call = (output: string): CallItem => ({
  seq: 3, type: "mcp_call", id: "mcp_1", response_id: "resp_1", created_at: "t", server_label: "charts", upstream_label: "charts",
  name: "chart", arguments: {}, redacted: [], output, allowed_by: { kind: "policy", policy: "never", source: "tool" },
} as CallItem);

const image = (data: string, mimeType: string) => ({ type: "image", data, mimeType, annotations: null, meta: null });

describe("images a tool returned", () => {
  it("shows a PNG the tool returned as an image, with the text beside it and no base64 in the output", () => {
    render(<ToolCallRow item={call(JSON.stringify([{ type: "text", text: "Your chart:" }, image(PNG, "image/png")]))} />);
    const img = screen.getByRole("img", { name: "Image 1 from chart (image/png, 1 KB)" });
    expect(img).toHaveAttribute("src", `data:image/png;base64,${PNG}`);
    const output = document.querySelector("pre.call-output")!;
    expect(output).toHaveTextContent(/^Your chart:$/);
  });

  it("reads one content block, and a whole result with content, too; a GIF is shown", () => {
    const { unmount } = render(<ToolCallRow item={call(JSON.stringify(image(GIF, "image/gif")))} />);
    expect(screen.getByRole("img", { name: /^Image 1 from chart \(image\/gif/ })).toHaveAttribute("src", `data:image/gif;base64,${GIF}`);
    unmount();
    render(<ToolCallRow item={call(JSON.stringify({ content: [image(PNG, "image/png"), image(GIF, "image/gif")], isError: false }))} />);
    expect(screen.getAllByRole("img").map((i) => i.getAttribute("alt"))).toEqual([
      "Image 1 from chart (image/png, 1 KB)", "Image 2 from chart (image/gif, 1 KB)"]);
  });

  it("never shows SVG, nor data that is not what its type says", () => {
    render(<ToolCallRow item={call(JSON.stringify([image(SVG, "image/svg+xml"), image(GIF, "image/png"), image("not base64!", "image/png")]))} />);
    expect(screen.queryByRole("img")).toBeNull();
    const notes = screen.getAllByText(/^image not shown: /);
    expect(notes.map((n) => n.textContent)).toEqual([
      "image not shown: image/svg+xml is not a picture type the app shows (PNG, JPEG, GIF, WebP), or its data is not one",
      "image not shown: image/png is not a picture type the app shows (PNG, JPEG, GIF, WebP), or its data is not one",
      "image not shown: image/png is not a picture type the app shows (PNG, JPEG, GIF, WebP), or its data is not one",
    ]);
    expect(document.body.innerHTML).not.toContain("data:image/svg");
  });

  it("says an image over the limit is too large to show, with its size", () => {
    const big = PNG.slice(0, 16) + "A".repeat(1_400_000 - 16); // 1,050,000 bytes: over MAX_IMAGE_BYTES
    expect(1_050_000).toBeGreaterThan(MAX_IMAGE_BYTES);
    render(<ToolCallRow item={call(JSON.stringify([image(big, "image/png")]))} />);
    expect(screen.queryByRole("img")).toBeNull();
    expect(screen.getByText("image too large to show (1,026 KB)")).toBeVisible();
  });

  it("leaves output that is not MCP image content as text", () => {
    const text = '[{"type": "image", "note": "a row of a table"}] and more';
    render(<ToolCallRow item={call(text)} />);
    expect(screen.queryByRole("img")).toBeNull();
    expect(document.querySelector("pre.call-output")).toHaveTextContent(text);
    expect(within(document.body).queryByText(/image not shown/)).toBeNull();
  });
});
