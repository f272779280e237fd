// Load test of the web app: how it copes with a long conversation (not part
// of the suite; `npm run bench -- [TURNS] [DELTAS]` runs it through
// bench.config.ts). Builds a conversation of TURNS turns through the API
// (each: a message, a tool listed or called, an answer), then measures
//   1. opening it: navigation to the transcript being on screen;
//   2. streaming one more answer of DELTAS pieces into it: the main thread's
//      script and task time (CDP Performance metrics) per delta.
import { ok, type Api } from "./api";
import { scenario, test } from "./fixtures";

const turns = Number(process.env.BENCH_TURNS || 100);
const deltas = Number(process.env.BENCH_DELTAS || 400);

async function stream(api: Api, body: { input: string; conversation_id?: string }) {
  const text = await ok(api.POST("/api/responses", { body, parseAs: "text" }));
  const conv = /"conversation_id":"(conv_[^"]+)"/.exec(text)?.[1];
  if (!conv) throw new Error("no conversation_id in the stream:\n" + text.slice(0, 2000));
  return { conv, deltas: text.split("event: text.delta").length - 1 };
}

test("bench: a long conversation", scenario("bench"), async ({ page, api }) => {
  const input = `[emulator: deltas=${deltas}, event-delay=2ms] one more, please`;
  // The answer may have fewer pieces than asked (one per character at most): count them.
  const sent = (await stream(api, { input })).deltas;
  const { conv } = await stream(api, { input: "list_forecasts" });
  for (let i = 1; i < turns; i++) {
    await stream(api, {
      conversation_id: conv,
      input: i % 2 ? `get_forecast {"city": "Berlin"} turn ${i}` : `**turn ${i}**: tell me something with \`code\` and a [link](https://example.com)`,
    });
  }
  const transcript = await ok(api.GET("/api/conversations/{conversationId}", { params: { path: { conversationId: conv } } }));

  const t0 = Date.now();
  await page.goto(`/c/${conv}`);
  await page.locator(".msg.assistant").nth(turns - 1).waitFor({ timeout: 120_000 });
  const openMs = Date.now() - t0;

  const cdp = await page.context().newCDPSession(page);
  await cdp.send("Performance.enable");
  const metric = async () => Object.fromEntries((await cdp.send("Performance.getMetrics")).metrics.map((m) => [m.name, m.value]));
  const before = await metric();
  const s0 = Date.now();
  await page.getByRole("textbox", { name: "Message" }).fill(input);
  await page.getByRole("button", { name: "Send", exact: true }).click();
  await page.getByRole("button", { name: "Stop" }).waitFor({ state: "hidden", timeout: 120_000 });
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
