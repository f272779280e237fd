// Signed approval links end to end: a chat turn against the built-in
// emulator asks, the approval.required delivery reaches a receiver this test
// runs on 127.0.0.1, and the link from its payload is opened in a browser
// that is not signed in. A bot's GET decides nothing; the page shows the
// card and decides on the click, once; the tool runs exactly once. At 390 px:
// the deny link with a reason, which the model gets, then the used link again.
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { ok, setPolicy, type Api } from "./api";
import { expect, scenario, test } from "./fixtures";
import { ChatPage } from "./pages";

type Payload = { data: { approval_request_id: string }; approve_url: string; deny_url: string; text: string; blocks: unknown[] };

/** A webhook receiver for approval.required, registered through the API; it keeps the payloads. */
async function receiver(api: Api): Promise<{ payloads: Payload[]; server: Server }> {
  const payloads: Payload[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    let body = "";
    req.on("data", (c: Buffer) => { body += c.toString(); });
    req.on("end", () => {
      if (req.headers["toolgate-event"] === "approval.required") payloads.push(JSON.parse(body) as Payload);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  await ok(api.POST("/api/webhooks", { body: { url, events: ["approval.required"] } }));
  return { payloads, server };
}

/** The conversation's calls of a tool, from its transcript. */
async function calls(api: Api, conv: string, tool: string): Promise<number> {
  const tr = await ok(api.GET("/api/conversations/{conversationId}", { params: { path: { conversationId: conv } } }));
  return tr.items.filter((it) => it.type === "mcp_call" && it.name === tool).length;
}

async function pending(api: Api, conv: string): Promise<number> {
  const tr = await ok(api.GET("/api/conversations/{conversationId}", { params: { path: { conversationId: conv } } }));
  return tr.pending_approvals.length;
}

const convOf = (url: string) => decodeURIComponent(new URL(url).pathname.replace(/^\/c\//, ""));

test("the approve link from a webhook decides once, signed out, after a click; a bot's GET decides nothing",
  scenario("approval-link-approve"), async ({ page, api, newPage, shot }) => {
    const hook = await receiver(api);
    try {
      await setPolicy(api, "demo", "delete_forecast", "always");
      const chat = new ChatPage(page);
      await chat.open();
      await chat.send('delete_forecast {"city": "Oslo"}');
      await chat.card("delete_forecast").waitFor();
      const conv = convOf(page.url());
      await expect.poll(() => hook.payloads.length, { timeout: 15_000 }).toBe(1);
      const p = hook.payloads[0];
      expect(p.approve_url).toMatch(new RegExp(`/link/${p.data.approval_request_id}#tgl_[A-Za-z0-9_-]{43}$`));
      expect(JSON.stringify(p.blocks)).toContain(p.approve_url);

      // A link preview bot fetches the URL (the fragment is never sent): nothing is decided.
      const bot = await fetch(p.approve_url, { headers: { "User-Agent": "Slackbot-LinkExpanding 1.0" } });
      expect(bot.status).toBe(200);
      expect(await pending(api, conv)).toBe(1);

      const other = await newPage(); // not signed in
      await other.goto(p.approve_url);
      const card = other.getByRole("article", { name: "Approval request: delete_forecast on demo" });
      await expect(card).toContainText("Oslo");
      await expect(card).toContainText("demo@toolgate.local");
      await shot("card", other);
      expect(await pending(api, conv)).toBe(1); // opening the page decided nothing either

      await card.getByRole("button", { name: "Approve" }).click();
      await expect(other.getByRole("heading", { name: "Approved: delete_forecast on demo" })).toBeVisible();
      await expect(other.getByRole("status")).toContainText("demo@toolgate.local");
      await shot("approved", other);

      // The chat, live in the admin's tab, goes on: the tool ran, once.
      await chat.idle();
      await expect.poll(() => calls(api, conv, "delete_forecast"), { timeout: 15_000 }).toBe(1);

      // The same link again says so and changes nothing.
      const again = await newPage();
      await again.goto(p.approve_url);
      await expect(again.getByRole("heading", { name: "This link was used already" })).toBeVisible();
      await expect(again.getByText("Code: link_used")).toBeVisible();
      // One byte changed: not a link Toolgate made.
      const last = p.approve_url.slice(-1);
      await again.goto(p.approve_url.slice(0, -1) + (last === "A" ? "B" : "A"));
      await again.reload();
      await expect(again.getByRole("heading", { name: "This link does not work" })).toBeVisible();
      expect(await calls(api, conv, "delete_forecast")).toBe(1);
    } finally {
      hook.server.close();
    }
  });

test.describe("at 390 px", () => {
  test.use({ viewport: { width: 390, height: 844 } });

  test("the deny link with a reason: the model gets it; the used link says so",
    scenario("approval-link-deny-mobile"), async ({ page, api, newPage, shot }) => {
      const hook = await receiver(api);
      try {
        await setPolicy(api, "demo", "delete_forecast", "always");
        const chat = new ChatPage(page);
        await page.goto("/");
        await chat.send('delete_forecast {"city": "Oslo"}');
        await chat.card("delete_forecast").waitFor();
        const conv = convOf(page.url());
        await expect.poll(() => hook.payloads.length, { timeout: 15_000 }).toBe(1);

        const phone = await newPage();
        await phone.goto(hook.payloads[0].deny_url);
        const card = phone.getByRole("article", { name: "Approval request: delete_forecast on demo" });
        await card.getByLabel("Reason (optional, sent to the model)").fill("keep Oslo, it is sunny");
        expect(await phone.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
        await shot("deny-card", phone);
        await card.getByRole("button", { name: "Deny" }).click();
        await expect(phone.getByRole("heading", { name: "Denied: delete_forecast on demo" })).toBeVisible();
        await shot("denied", phone);

        await chat.answerContaining("keep Oslo, it is sunny");
        expect(await calls(api, conv, "delete_forecast")).toBe(0);

        await phone.reload();
        await expect(phone.getByRole("heading", { name: "This link was used already" })).toBeVisible();
        expect(await phone.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
        await shot("used", phone);
      } finally {
        hook.server.close();
      }
    });
});
