// Images a tool returns, in real Chromium: an MCP server this test runs on
// 127.0.0.1 (streamable HTTP, JSON answers) has a tool whose result holds a
// PNG, an SVG and an oversized PNG; the transcript shows the PNG as a
// picture the browser decoded, and says why the others are not shown.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { ok, setPolicy } from "./api";
import { expect, scenario, test } from "./fixtures";
import { ChatPage } from "./pages";

// A 4×4 red PNG.
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAQAAAAECAIAAAAmkwkpAAAAEElEQVR4nGP4z8AARwzEcQCukw/x0F8jngAAAABJRU5ErkJggg==";
const SVG = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><script>alert(1)</script></svg>').toString("base64");
const BIG = PNG.slice(0, 16) + "A".repeat(1_600_000 - 16); // 1.2 MB

type Rpc = { jsonrpc: "2.0"; id?: number | string; method: string; params?: { protocolVersion?: string } };

/** A minimal MCP server: initialize, tools/list, tools/call of "forecast_chart". */
function mcpServer() {
  return createServer((req: IncomingMessage, res: ServerResponse) => {
    if (req.method !== "POST") { res.writeHead(405).end(); return; }
    let body = "";
    req.on("data", (c: Buffer) => { body += c.toString(); });
    req.on("end", () => {
      const msg = JSON.parse(body) as Rpc;
      if (msg.id === undefined) { res.writeHead(202).end(); return; }
      const reply = (result: unknown) => {
        res.writeHead(200, { "Content-Type": "application/json" });
        res.end(JSON.stringify({ jsonrpc: "2.0", id: msg.id, result }));
      };
      switch (msg.method) {
        case "initialize":
          return reply({ protocolVersion: msg.params?.protocolVersion ?? "2025-06-18", capabilities: { tools: {} }, serverInfo: { name: "charts", version: "1" } });
        case "tools/list":
          return reply({ tools: [{ name: "forecast_chart", description: "Draw the forecast as a chart.", inputSchema: { type: "object", properties: {} }, annotations: { readOnlyHint: true } }] });
        case "tools/call":
          return reply({ content: [
            { type: "text", text: "Berlin, next 3 days" },
            { type: "image", data: PNG, mimeType: "image/png" },
            { type: "image", data: SVG, mimeType: "image/svg+xml" },
            { type: "image", data: BIG, mimeType: "image/png" },
          ] });
        default:
          res.writeHead(200, { "Content-Type": "application/json" });
          res.end(JSON.stringify({ jsonrpc: "2.0", id: msg.id, error: { code: -32601, message: "Method not found" } }));
      }
    });
  });
}

test("images a tool returns show in the transcript; SVG and oversized ones say why not", scenario("tool-images"), async ({ page, api, shot }) => {
  const server = mcpServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
    await ok(api.POST("/api/mcp/servers", { body: { label: "charts", url } }));
    await setPolicy(api, "charts", "forecast_chart", "never");
    const chat = new ChatPage(page);
    await chat.open();
    await chat.send("forecast_chart {}");
    await chat.idle();
    const call = chat.call("forecast_chart", "charts");
    const img = call.getByRole("img", { name: "Image 1 from forecast_chart (image/png, 1 KB)" });
    await expect(img).toBeVisible();
    // The browser decoded it: a 4×4 picture, from a data: URL (nothing fetched).
    expect(await img.evaluate((el: HTMLImageElement) => [el.complete, el.naturalWidth, el.naturalHeight, el.src.startsWith("data:image/png;base64,")]))
      .toEqual([true, 4, 4, true]);
    await expect(call.getByText("image not shown: image/svg+xml is not a picture type the app shows (PNG, JPEG, GIF, WebP), or its data is not one")).toBeVisible();
    await expect(call.getByText("image too large to show (1,172 KB)")).toBeVisible();
    await expect(call.getByRole("img")).toHaveCount(1);
    const text = await chat.openCall("forecast_chart", "charts");
    expect(text).toContain("Berlin, next 3 days");
    expect(text, "the output shows no base64").not.toContain(PNG.slice(0, 40));
    await shot("images");
  } finally {
    server.close();
  }
});
