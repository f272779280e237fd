// Item 15 in real Chromium: a webhook's link to a request decided meanwhile
// opens the conversation at that request (in view, focused, highlighted,
// decided), and the audit log's Export button downloads what the filter
// shows as JSON lines.
import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { ok, setPolicy } from "./api";
import { expect, scenario, test } from "./fixtures";
import { ChatPage } from "./pages";

test("a webhook's link to a decided request opens the conversation at that request", scenario("webhook-link-decided"), async ({ page, api, shot }) => {
  const bodies: string[] = [];
  const receiver = createServer((req: IncomingMessage, res) => {
    let body = "";
    req.on("data", (c: Buffer) => { body += c.toString(); });
    req.on("end", () => { bodies.push(body); res.writeHead(204).end(); });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  try {
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    await ok(api.POST("/api/webhooks", { body: { url, events: ["decision.recorded"] } }));
    await setPolicy(api, "demo", "delete_forecast", "always");
    const chat = new ChatPage(page);
    await chat.open();
    await chat.send('delete_forecast {"city": "Oslo"}');
    await chat.card("delete_forecast").getByRole("button", { name: "Approve" }).click();
    await chat.idle();
    // More conversation after it, so the decided request is far above the bottom.
    for (let i = 0; i < 6; i++) {
      await chat.send(`tell me something, part ${i}`);
      await chat.idle();
    }
    const decided = page.locator(".decided", { hasText: "delete_forecast" });
    await expect(decided, "the decided request has scrolled out of view").not.toBeInViewport();

    await expect.poll(() => bodies.length, { timeout: 15_000 }).toBeGreaterThan(0);
    const payload = JSON.parse(bodies[0]) as { url: string; data: { approval_request_id: string; state: string } };
    expect(payload.data.state).toBe("approved");
    await page.goto("/");
    await page.goto(payload.url);
    const linked = page.locator(`[id="approval-${payload.data.approval_request_id}"]`);
    await expect(linked).toContainText("approved by");
    await expect(linked).toBeInViewport();
    await expect(linked).toBeFocused();
    await expect(linked).toHaveClass(/is-linked/);
    await shot("linked");
  } finally {
    receiver.close();
  }
});

test("the audit log's Export downloads what the filter shows, as JSON lines", scenario("audit-export"), async ({ page, api }) => {
  await setPolicy(api, "demo", "send_alert", "always");
  await setPolicy(api, "demo", "send_alert", "never");
  await ok(api.DELETE("/api/mcp/servers/{serverId}/tools/{toolName}/approval-policy", { params: { path: { serverId: "demo", toolName: "send_alert" }, query: {} } }));
  await ok(api.PUT("/api/settings", { body: { default_policy: "always" } }));
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Audit log" }).click();
  await page.getByLabel("Action").selectOption({ label: "Policy changes" });
  await expect(page.getByRole("table", { name: "Audit log: policy changes, newest first" })).toBeVisible();
  const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("link", { name: "Export (JSON lines)" }).click()]);
  expect(download.suggestedFilename()).toBe("toolgate-audit.jsonl");
  const lines = readFileSync(await download.path(), "utf8").trimEnd().split("\n").map((l) => JSON.parse(l) as { action: string; tool_name: string });
  expect(lines.slice(0, 3).map((l) => `${l.action} ${l.tool_name}`)).toEqual(["policy.delete send_alert", "policy.set send_alert", "policy.set send_alert"]);
  expect(new Set(lines.map((l) => l.action))).toEqual(new Set(["policy.set", "policy.delete"]));
  // Every entry the page lists under the filter, and no other.
  const rows = page.getByRole("table", { name: "Audit log: policy changes, newest first" }).locator("tbody tr");
  await expect(rows).toHaveCount(lines.length);
});
