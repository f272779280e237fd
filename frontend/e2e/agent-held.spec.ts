// An agent's held call, decided in the browser. Real third-party MCP clients
// (scripts/mcp-face-client.mjs: the official MCP TypeScript SDK;
// scripts/agents-face-client.mjs: the OpenAI Agents SDK's
// MCPServerStreamableHttp), started here as separate node processes, call
// an asking tool at Toolgate's MCP face for any client (/mcp) with the signed-in
// person's API token. The call is held until a person decides: in the inbox
// ("Waiting for me", live), by the signed link of a webhook delivery in a
// browser that is not signed in, or by denying with a reason at 390 px; a
// client killed while held withdraws its request. Each time the demo server's
// own call log says whether the tool ran, and how often.
import { spawn, type ChildProcess } from "node:child_process";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { Page } from "@playwright/test";
import { ok, setPolicy, type Api } from "./api";
import { expect, scenario, test } from "./fixtures";
import { overflow } from "./pages";

const frontendDir = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/** What the client scripts print once the call returned. */
type Printed = { tools: string[]; result: { isError?: boolean; content: { type: string; text?: string }[] } };

/** A client script running one call: done resolves with what it printed, or rejects with its output when it failed. */
type Client = { done: Promise<Printed>; kill: () => void; exited: Promise<void> };

/** The client processes a test started: whatever is left when it ends is killed. */
const running = new Set<ChildProcess>();
test.afterEach(() => {
  for (const c of running) c.kill("SIGKILL");
  running.clear();
});

/** Starts node scripts/<script> <url> <token> <tool> <args> in frontend/, as a person's agent would run. */
function startClient(script: "mcp-face-client.mjs" | "agents-face-client.mjs", url: string, token: string, tool: string, args: object): Client {
  const child = spawn(process.execPath, [`scripts/${script}`, url, token, tool, JSON.stringify(args)],
    { cwd: frontendDir, stdio: ["ignore", "pipe", "pipe"] });
  running.add(child);
  let out = "";
  let err = "";
  child.stdout.on("data", (c: Buffer) => { out += c.toString(); });
  child.stderr.on("data", (c: Buffer) => { err += c.toString(); });
  const exited = new Promise<void>((done) => child.once("exit", () => done()));
  const done = new Promise<Printed>((resolveDone, reject) => {
    child.once("exit", (code, signal) => {
      if (code !== 0) return reject(new Error(`node ${script} ended with ${code ?? signal}:\n${err}${out}`));
      try {
        resolveDone(JSON.parse(out) as Printed);
      } catch {
        reject(new Error(`node ${script} printed no JSON:\n${out}${err}`));
      }
    });
  });
  done.catch(() => {}); // a test that kills it on purpose does not await it
  return { done, exited, kill: () => { child.kill("SIGKILL"); } };
}

const textOf = (p: Printed) => p.result.content.map((c) => c.text ?? "").join("");

/** A new API token of the signed-in person (POST /api/tokens with the page's session). */
async function newToken(api: Api): Promise<string> {
  return (await ok(api.POST("/api/tokens", { body: { name: "held-call agent" } }))).token;
}

/** How often the demo MCP server ran tool with city, from its own call log (GET /calls). */
async function ran(api: Api, tool: string, city: string): Promise<number> {
  const servers = await ok(api.GET("/api/mcp/servers"));
  const demo = servers.servers.find((s) => s.label === "demo");
  if (!demo) throw new Error("no demo server registered");
  const log = await fetch(new URL("/calls", demo.url)).then((r) => r.json() as Promise<{ calls: { tool: string; arguments: { city?: string } }[] }>);
  return log.calls.filter((c) => c.tool === tool && c.arguments.city === city).length;
}

type Receipt = { tool_name?: string; after?: { state?: string; client?: { name?: string }; decided_by?: string; approval_request_id?: string } };

/** The receipts (tool.call in the audit log) of the calls of tool that ran through the face (state done). */
async function ranReceipts(api: Api, tool: string): Promise<Receipt[]> {
  const log = await ok(api.GET("/api/audit", { params: { query: { action: "tool.call", limit: 500 } } }));
  return (log.entries as Receipt[]).filter((e) => e.tool_name === tool && e.after?.state === "done");
}

/** The one request waiting for the person, by the API (GET /api/approvals?state=pending). */
async function waiting(api: Api) {
  return (await ok(api.GET("/api/approvals", { params: { query: { state: "pending" } } }))).approvals;
}

/** Opens "Waiting for me" and waits until it says nothing waits: what comes later must come live. */
async function openInbox(page: Page) {
  await page.goto("/inbox");
  await page.getByRole("heading", { name: "Waiting for me" }).waitFor();
  await page.getByText("Nothing waits for you.").waitFor();
}

const cardOf = (page: Page) => page.getByRole("article", { name: "Approval request: delete_forecast on demo" });

/** A webhook receiver for approval.required on 127.0.0.1, registered through the API; it keeps the payloads. */
async function receiver(api: Api): Promise<{ payloads: { data: { approval_request_id: string }; approve_url: string }[]; server: Server }> {
  const payloads: { data: { approval_request_id: string }; approve_url: string }[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    let body = "";
    req.on("data", (c: Buffer) => { body += c.toString(); });
    req.on("end", () => {
      if (req.headers["toolgate-event"] === "approval.required") payloads.push(JSON.parse(body) as (typeof payloads)[number]);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  await ok(api.POST("/api/webhooks", { body: { url, events: ["approval.required"] } }));
  return { payloads, server };
}

test("an agent's held call appears live in the inbox with its client; approved there, the client gets the result, the tool ran once",
  scenario("agent-held-inbox"), async ({ page, api, toolgate, consoleErrors, shot }) => {
    await setPolicy(api, "demo", "delete_forecast", "always");
    const token = await newToken(api);
    await openInbox(page);

    const agent = startClient("mcp-face-client.mjs", `${toolgate.url}/mcp`, token, "demo__delete_forecast", { city: "Oslo" });
    const card = cardOf(page);
    await card.waitFor({ timeout: 20_000 });
    await expect(card.getByText('"city": "Oslo"'), "the card shows the arguments").toBeVisible();
    await expect(page.getByText("From the agent ts-provider 1.0.0"), "the request says which client asked").toBeVisible();
    await expect(page).toHaveTitle("(1) Waiting for me · Toolgate");
    await shot("waiting");
    expect(await ran(api, "delete_forecast", "Oslo"), "held: nothing ran before the decision").toBe(0);

    await card.getByRole("button", { name: "Approve", exact: true }).click();
    await page.getByText("Approved: delete_forecast on demo.").waitFor();
    await expect(card, "the request left the list").toHaveCount(0);

    const printed = await agent.done;
    expect(printed.tools).toContain("demo__delete_forecast");
    expect(printed.result.isError ?? false, textOf(printed)).toBe(false);
    expect(textOf(printed)).toBe("Deleted the forecast for Oslo.");
    expect(await ran(api, "delete_forecast", "Oslo"), "the tool ran exactly once").toBe(1);

    const rs = await ranReceipts(api, "delete_forecast");
    expect(rs, "one receipt of a call that ran").toHaveLength(1);
    expect(rs[0].after?.client?.name, "the receipt names the client").toBe("ts-provider");
    expect(rs[0].after?.decided_by, "and who approved").toBe("demo@toolgate.local");
    expect(consoleErrors).toEqual([]);
  });

test("the signed approve link of a webhook delivery decides an agent's held call, signed out; the client gets the result once",
  scenario("agent-held-link"), async ({ page, api, toolgate, newPage, shot }) => {
    const hook = await receiver(api);
    try {
      await setPolicy(api, "demo", "delete_forecast", "always");
      const token = await newToken(api);
      const agent = startClient("agents-face-client.mjs", `${toolgate.url}/mcp`, token, "demo__delete_forecast", { city: "Berlin" });
      await expect.poll(() => hook.payloads.length, { timeout: 20_000 }).toBe(1);
      const p = hook.payloads[0];
      const [held] = await waiting(api);
      expect(p.data.approval_request_id, "the delivery is about the held call").toBe(held.approval_request_id);
      expect(held.source.kind).toBe("agent");

      const phone = await newPage(); // not signed in
      await phone.goto(p.approve_url);
      const card = cardOf(phone);
      await expect(card).toContainText("Berlin");
      await expect(card, "the card says where it came from: the client's session").toContainText("In “toolgate (MCP)”");
      await shot("link-card", phone);
      expect(await ran(api, "delete_forecast", "Berlin"), "opening the link decided nothing").toBe(0);
      await card.getByRole("button", { name: "Approve", exact: true }).click();
      await expect(phone.getByRole("heading", { name: "Approved: delete_forecast on demo" })).toBeVisible();
      await shot("link-approved", phone);

      const printed = await agent.done;
      expect(printed.tools).toContain("demo__delete_forecast");
      expect(printed.result.isError ?? false, textOf(printed)).toBe(false);
      expect(textOf(printed)).toBe("Deleted the forecast for Berlin.");
      expect(await ran(api, "delete_forecast", "Berlin"), "the tool ran exactly once").toBe(1);
      const rs = await ranReceipts(api, "delete_forecast");
      expect(rs, "one receipt of a call that ran").toHaveLength(1);
      // The Agents SDK introduces itself by its MCPServerStreamableHttp's name ("toolgate" in the script).
      expect(rs[0].after?.client?.name, "the receipt names the client").toBe("toolgate");
      expect(rs[0].after?.approval_request_id, "and the request the link decided").toBe(held.approval_request_id);

      // The used link again: it says so, and nothing runs again.
      await phone.reload();
      await expect(phone.getByRole("heading", { name: "This link was used already" })).toBeVisible();
      expect(await ran(api, "delete_forecast", "Berlin")).toBe(1);
      await page.goto("/inbox");
      await page.getByText("Nothing waits for you.").waitFor();
    } finally {
      hook.server.close();
    }
  });

test.describe("on a phone", () => {
  test.use({ viewport: { width: 390, height: 844 } });

  test("denied in the inbox with a reason at 390 px, the client gets an error result with the reason; nothing ran",
    scenario("agent-held-deny-390"), async ({ page, api, toolgate, consoleErrors, shot }) => {
      await setPolicy(api, "demo", "delete_forecast", "always");
      const token = await newToken(api);
      await openInbox(page);
      const agent = startClient("mcp-face-client.mjs", `${toolgate.url}/mcp`, token, "demo__delete_forecast", { city: "Lisbon" });
      const card = cardOf(page);
      await card.waitFor({ timeout: 20_000 });
      await card.getByLabel("Reason (optional, sent to the model)").fill("Lisbon stays, it is sunny");
      expect(await overflow(page, ".topbar, .inbox-page, .inbox-page *"), "nothing sticks out at 390 px").toEqual([]);
      await shot("deny-card");
      await card.getByRole("button", { name: "Deny", exact: true }).click();
      await page.getByText("Denied: delete_forecast on demo.").waitFor();

      const printed = await agent.done;
      expect(printed.result.isError, "a denial is an error result").toBe(true);
      expect(textOf(printed)).toContain("demo@toolgate.local denied this call, so it did not run.");
      expect(textOf(printed)).toContain("Reason: Lisbon stays, it is sunny");
      expect(await ran(api, "delete_forecast", "Lisbon"), "nothing ran").toBe(0);
      expect(await ranReceipts(api, "delete_forecast")).toEqual([]);
      expect(consoleErrors).toEqual([]);
    });
});

test("a client killed while its call is held withdraws the request: the card leaves the inbox, a decision is refused, nothing runs",
  scenario("agent-held-withdrawn"), async ({ page, api, toolgate, consoleErrors, shot }) => {
    await setPolicy(api, "demo", "delete_forecast", "always");
    const token = await newToken(api);
    await openInbox(page);
    const agent = startClient("mcp-face-client.mjs", `${toolgate.url}/mcp`, token, "demo__delete_forecast", { city: "Oslo" });
    const card = cardOf(page);
    await card.waitFor({ timeout: 20_000 });
    const [held] = await waiting(api);
    await shot("held");

    agent.kill();
    await agent.exited;
    await expect(card, "the withdrawn request leaves the inbox, live").toHaveCount(0, { timeout: 15_000 });
    await page.getByText("Nothing waits for you.").waitFor();
    await expect(page).toHaveTitle("Waiting for me · Toolgate");

    const late = await api.POST("/api/approvals/{approvalRequestId}/decision",
      { params: { path: { approvalRequestId: held.approval_request_id } }, body: { approve: true } });
    expect(late.response.status, "approving the withdrawn request is refused").toBe(409);
    const refusal = (late.error as { error: { code: string; details?: { approval?: { state?: string } } } }).error;
    expect(refusal.code).toBe("approval_withdrawn");
    expect(refusal.details?.approval?.state).toBe("withdrawn");
    expect(await waiting(api)).toEqual([]);
    // Give a wrongly revived call time to run, then check it never did.
    await page.waitForTimeout(1000);
    expect(await ran(api, "delete_forecast", "Oslo"), "nothing ran").toBe(0);
    expect(await ranReceipts(api, "delete_forecast")).toEqual([]);
    expect(consoleErrors).toEqual([]);
  });
