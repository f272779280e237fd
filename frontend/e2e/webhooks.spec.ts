// Webhooks end to end: an admin adds one in settings, pointed at a receiver
// this test runs on 127.0.0.1 (offline, loopback is allowed); an approval
// request in the chat and a test delivery reach it signed, and the
// delivery log in settings shows them delivered.
import { createHmac, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { setPolicy } from "./api";
import { expect, scenario, test } from "./fixtures";
import { ChatPage } from "./pages";

type Received = { event: string; delivery: string; signature: string; body: string };

function verify(secret: string, r: Received): boolean {
  const parts = Object.fromEntries(r.signature.split(",").map((kv) => kv.split("=", 2) as [string, string]));
  if (Math.abs(Date.now() / 1000 - Number(parts.t)) > 300) return false;
  const want = createHmac("sha256", secret).update(`${parts.t}.${r.body}`).digest("hex");
  return want.length === (parts.v1 ?? "").length && timingSafeEqual(Buffer.from(want), Buffer.from(parts.v1));
}

test("a webhook added in settings gets the approval request and a test, signed, and the log shows them",
  scenario("webhooks"), async ({ page, api, shot }) => {
    const received: Received[] = [];
    const receiver = createServer((req: IncomingMessage, res) => {
      let body = "";
      req.on("data", (c: Buffer) => { body += c.toString(); });
      req.on("end", () => {
        received.push({ event: String(req.headers["toolgate-event"]), delivery: String(req.headers["toolgate-delivery"]),
          signature: String(req.headers["toolgate-signature"]), body });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    try {
      await page.goto("/settings");
      const section = page.getByRole("region", { name: "Webhooks" });
      await section.getByLabel("Webhook URL").fill(url);
      await section.getByRole("button", { name: "Add webhook" }).click();
      const secretBox = page.getByRole("region", { name: "New webhook secret" });
      const secret = (await secretBox.getByLabel("Signing secret").textContent()) ?? "";
      expect(secret).toMatch(/^whsec_/);
      await shot("secret");
      await secretBox.getByRole("button", { name: "I have copied it" }).click();
      await expect(page.getByText(secret)).toHaveCount(0);

      const hook = section.getByRole("listitem", { name: url });
      await hook.getByRole("button", { name: "Send test" }).click();
      const log = hook.getByRole("table", { name: "Delivery log" });
      await expect(log.getByRole("row", { name: /ping/ })).toContainText("delivered", { timeout: 15_000 });

      await setPolicy(api, "demo", "delete_forecast", "always");
      const chat = new ChatPage(page);
      await chat.open();
      await chat.send('delete_forecast {"city": "Oslo"}');
      await chat.card("delete_forecast").waitFor();
      await expect.poll(() => received.filter((r) => r.event === "approval.required").length, { timeout: 15_000 }).toBe(1);
      const approval = received.find((r) => r.event === "approval.required")!;
      expect(verify(secret, approval), "the signature checks out with the secret shown once").toBe(true);
      const payload = JSON.parse(approval.body) as { id: string; url: string; text: string; data: { tool_name: string } };
      expect(payload.id).toBe(approval.delivery);
      expect(payload.data.tool_name).toBe("delete_forecast");
      expect(payload.text).toMatch(/^Approval needed: demo \/ delete_forecast/);

      // The link opens the conversation with the card.
      await page.goto(payload.url);
      await chat.card("delete_forecast").waitFor();

      await page.goto("/settings");
      await hook.getByRole("button", { name: "Delivery log" }).click();
      await expect(log.getByRole("row", { name: /approval\.required/ })).toContainText("delivered");
      await shot("log");
    } finally {
      receiver.close();
    }
  });
