// Stop: the model asks for three calls in one response; the card shows the
// other two, Stop denies all three with the person's reason, the turn ends
// as stopped by the user, and nothing goes to the model until the next
// message, which carries the three denials. The model is the standalone
// emulator behind a tap that records every request Toolgate sends it.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { setPolicy } from "./api";
import { startEmulator } from "./chat-helpers";
import { expect, scenario, test } from "./fixtures";
import { ChatPage } from "./pages";

type Sent = { input?: unknown };

/** A proxy in front of the emulator's /v1/ that keeps the body of every POST …/responses. */
async function startTap(target: string): Promise<{ url: string; sent: Sent[]; stop: () => Promise<void> }> {
  const t = new URL(target);
  const sent: Sent[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      if (req.method === "POST" && req.url?.endsWith("/responses")) sent.push(JSON.parse(body.toString()) as Sent);
      const up = http.request({ host: t.hostname, port: t.port, path: req.url, method: req.method, headers: { ...req.headers, host: t.host } }, (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers);
        r.pipe(res);
      });
      up.on("error", (e) => { res.statusCode = 502; res.end(String(e)); });
      up.end(body);
    });
  });
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/v1/`, sent, stop: () => new Promise((ok) => server.close(() => ok())) };
}

const tapped = test.extend<{ tap: { url: string; sent: Sent[] } }>({
  tap: async ({ browserName: _ }, provide) => {
    const emu = await startEmulator("event-delay=1ms");
    const tap = await startTap(emu.url);
    try { await provide(tap); } finally { await tap.stop(); await emu.stop(); }
  },
  toolgateEnv: async ({ tap }, provide) => provide({ OPENAI_BASE_URL: tap.url }),
});

/** The mcp_approval_response entries of a request's input. */
const answers = (req: Sent) => (Array.isArray(req.input) ? req.input : [])
  .filter((x): x is { type: string; approval_request_id: string; approve: boolean; reason?: string } =>
    typeof x === "object" && x !== null && (x as { type?: string }).type === "mcp_approval_response");

tapped("Stop denies every call of the batch, sends nothing, and the next message carries the denials",
  scenario("stop-batch"), async ({ page, api, tap, consoleErrors, shot }) => {
    await setPolicy(api, "demo", "delete_forecast", "always");
    await page.goto("/");
    const chat = new ChatPage(page);
    await chat.send('delete_forecast {"city": "Oslo"} and delete_forecast {"city": "Lisbon"} and delete_forecast {"city": "Rome"}');
    const cards = chat.card("delete_forecast");
    await expect(cards).toHaveCount(3);
    await chat.idle();
    const first = cards.filter({ has: page.getByText('"city": "Oslo"') }).first();
    // The card shows the other calls of the response, with their tools and arguments.
    const batch = first.getByRole("region", { name: "2 more calls wait after this one" });
    await expect(batch.getByRole("listitem")).toHaveCount(2);
    await expect(batch.getByRole("listitem").nth(0)).toContainText("delete_forecast on demo");
    await expect(batch.getByRole("listitem").nth(0)).toContainText('"city": "Lisbon"');
    await expect(batch.getByRole("listitem").nth(1)).toContainText('"city": "Rome"');
    const before = tap.sent.length;
    expect(before, "one request asked for the three calls").toBe(1);

    await first.getByRole("textbox", { name: "Reason (optional, sent to the model)" }).fill("wrong plan");
    await first.getByRole("button", { name: "More denial choices" }).click();
    const stop = page.getByRole("menuitem", { name: /^Stop/ });
    await expect(stop).toContainText("Deny this call and the 2 others waiting");
    await shot("stop-menu");
    await stop.click();

    // The transcript says the person stopped; every call is denied with the reason; no card is left.
    await page.getByText("You stopped here.").waitFor();
    await expect(cards).toHaveCount(0);
    await expect(page.getByText("denied by demo@toolgate.local: wrong plan", { exact: true })).toHaveCount(3);
    await expect(page.getByText("stopped: the model got no turn")).toHaveCount(3);
    await expect(page.getByRole("button", { name: "Retry" }), "a stop is not a failure to retry").toHaveCount(0);
    // Nothing went to the model: give a follow-up time to leave, then count.
    await page.waitForTimeout(1500);
    expect(tap.sent.length, "no follow-up after the stop").toBe(before);

    // A reload shows the same: the stop is stored.
    await page.reload();
    await page.getByText("You stopped here.").waitFor();
    await expect(page.getByText("stopped: the model got no turn")).toHaveCount(3);
    expect(tap.sent.length).toBe(before);

    // The next message carries the three denials, the stop said first, then the reason.
    await chat.send("thanks, let us talk first");
    await chat.idle();
    await expect.poll(() => tap.sent.length).toBe(before + 1);
    const denials = answers(tap.sent[before]);
    expect(denials).toHaveLength(3);
    for (const d of denials) {
      expect(d.approve).toBe(false);
      expect(d.reason).toMatch(/^The user stopped here: .* wrong plan$/);
    }
    await chat.answerContaining("wrong plan");
    await expect(page.getByText(/Deleted the forecast/), "no call ran").toHaveCount(0);
    expect(consoleErrors).toEqual([]);
  });
