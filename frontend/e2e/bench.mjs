// Load script for the web app: how it copes with a long conversation.
// Builds a conversation of TURNS turns through the API (each: a message, a
// tool listed or called, an answer), then in Chromium measures
//   1. opening it: navigation to the transcript being on screen;
//   2. streaming one more answer of DELTAS pieces into it: the main thread's
//      script and task time (CDP Performance metrics) per delta.
// Usage: make build && npm run build && node e2e/bench.mjs [TURNS] [DELTAS]
import { scenario, preflight } from "./harness.mjs";

process.env.TEST_DATABASE_URL ??= "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable";
const turns = Number(process.argv[2] ?? 100);
const deltas = Number(process.argv[3] ?? 400);
preflight();

async function stream(url, body) {
  const res = await fetch(url + "/api/responses", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
  if (!res.ok) throw new Error(`${res.status} ${await res.text()}`);
  const text = await res.text();
  return { conv: /"conversation_id":"(conv_[^"]+)"/.exec(text)[1], deltas: text.split("event: text.delta").length - 1 };
}

await scenario("bench", async ({ page, url }) => {
  const input = `[emulator: deltas=${deltas}, event-delay=2ms] one more, please`;
  // The answer may have fewer pieces than asked (one per character at most): count them.
  const sent = (await stream(url, { input })).deltas;
  const { conv } = await stream(url, { input: "list_forecasts" });
  for (let i = 1; i < turns; i++) {
    await stream(url, { conversation_id: conv, input: i % 2 ? `get_forecast {"city": "Berlin"} turn ${i}` : `**turn ${i}**: tell me something with \`code\` and a [link](https://example.com)` });
  }
  const transcript = await (await fetch(`${url}/api/conversations/${conv}`)).json();

  const t0 = Date.now();
  await page.goto(`${url}/c/${conv}`);
  await page.locator(".msg.assistant").nth(turns - 1).waitFor();
  const openMs = Date.now() - t0;

  const cdp = await page.context().newCDPSession(page);
  await cdp.send("Performance.enable");
  const metric = async () => Object.fromEntries((await cdp.send("Performance.getMetrics")).metrics.map((m) => [m.name, m.value]));
  const before = await metric();
  const s0 = Date.now();
  await page.getByRole("textbox", { name: "Message" }).fill(input);
  await page.getByRole("button", { name: "Send", exact: true }).click();
  await page.getByRole("button", { name: "Stop" }).waitFor({ state: "hidden", timeout: 120000 });
  await page.locator(".msg.assistant").nth(turns).waitFor();
  const streamMs = Date.now() - s0;
  const after = await metric();
  const script = (after.ScriptDuration - before.ScriptDuration) * 1000;
  const task = (after.TaskDuration - before.TaskDuration) * 1000;
  console.log(JSON.stringify({
    turns, items: transcript.items.length, open_ms: openMs,
    deltas: sent, stream_wall_ms: streamMs,
    script_ms_total: Math.round(script), task_ms_total: Math.round(task),
    script_ms_per_delta: +(script / sent).toFixed(2), task_ms_per_delta: +(task / sent).toFixed(2),
  }));
});
