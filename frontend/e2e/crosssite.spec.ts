// Pages on other origins, in real Chromium, against the real binary with a
// signed-in admin. A page on another local origin tries what the issue found
// working: a plain HTML form that sends a chat message which would run
// reset_forecasts, a text/plain no-cors fetch that registers an MCP server,
// and (DNS rebinding, simulated with --host-resolver-rules) requests under a
// foreign Host name. Every one is refused by the guard, and the API, asked as
// the signed-in admin, shows nothing changed.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { ok, setPolicy, type Api } from "./api";
import { launchOptions } from "./chromium";
import { expect, scenario, test } from "./fixtures";

// evil.test resolves to 127.0.0.1 in this browser (a new worker starts for this file).
test.use({ launchOptions: launchOptions(["--host-resolver-rules=MAP evil.test 127.0.0.1"]) });

const attackMessage = "reset_forecasts {}";

type Site = { origin: string; close: () => Promise<void> };

/** The attacker's site: a tiny server on host that serves html at every path. */
function attackerSite(host: string, html: string): Promise<Site> {
  const server = createServer((_req, res) => {
    res.writeHead(200, { "Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store" });
    res.end(html);
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, host, () => resolve({
      origin: `http://${host}:${(server.address() as AddressInfo).port}`,
      close: () => new Promise((done) => server.close(() => done())),
    }));
  });
}

/** The attack page: two HTML forms (JSON smuggled as text/plain, and urlencoded) that post a chat message. */
function attackPage(api: string): string {
  // enctype=text/plain sends name=value as is: {"input":"reset_forecasts {}","pad":"="}
  const name = JSON.stringify({ input: attackMessage, pad: "" }).slice(0, -2);
  return `<!doctype html><meta charset="utf-8"><title>Free weather widget</title>
<form id="json" method="POST" action="${api}/api/responses" enctype="text/plain">
  <input type="hidden" name='${name}' value='"}'><button id="send-json">Send JSON form</button>
</form>
<form id="plain" method="POST" action="${api}/api/responses">
  <input type="hidden" name="input" value="${attackMessage}"><button id="send-plain">Send form</button>
</form>`;
}

/** Everything the attacks could change, as the signed-in admin sees it, and the demo's own record of tool calls. */
async function state(api: Api) {
  const servers = await ok(api.GET("/api/mcp/servers"));
  const demo = servers.servers.find((s) => s.label === "demo");
  if (!demo) throw new Error("no demo server");
  const demoState = await fetch(new URL("/state", demo.url)).then((r) => r.json() as Promise<{ calls?: Record<string, number> }>);
  return {
    servers,
    tools: await ok(api.GET("/api/mcp/servers/{serverId}/tools", { params: { path: { serverId: "demo" } } })),
    settings: await ok(api.GET("/api/settings")),
    audit: await ok(api.GET("/api/audit", { params: { query: { limit: 500 } } })),
    conversations: await ok(api.GET("/api/conversations")),
    demo: demoState,
  };
}

type ErrorBody = { error: { code: string; message: string } };

test("pages on other origins cannot chat, register a server or reach the API under a rebound name",
  scenario("crosssite"), async ({ page, api, toolgate, shot }) => {
    const apiURL = new URL(toolgate.url);
    expect(apiURL.hostname).toBe("127.0.0.1");
    const sites: Site[] = [];
    try {
      // Without the guard the chat message would run reset_forecasts at once.
      await setPolicy(api, "demo", "reset_forecasts", "never");
      const before = await state(api);
      expect(before.conversations.conversations).toHaveLength(0);
      expect(before.demo.calls?.reset_forecasts ?? 0).toBe(0);

      // The same site on another port (the session cookie, SameSite=Lax, goes
      // along: only the guard stands in the way) and another site (127.0.0.2).
      sites.push(await attackerSite("127.0.0.1", attackPage(toolgate.url)));
      sites.push(await attackerSite("127.0.0.2", attackPage(toolgate.url)));
      for (const site of sites) {
        for (const form of ["send-json", "send-plain"]) {
          await page.goto(site.origin + "/widget");
          const [res] = await Promise.all([
            page.waitForResponse((r) => r.url() === toolgate.url + "/api/responses"),
            page.click("#" + form),
          ]);
          expect(res.status(), `${site.origin} ${form}: status`).toBe(403);
          await page.waitForURL(toolgate.url + "/api/responses");
          const body = JSON.parse(await page.locator("body").innerText()) as ErrorBody;
          expect(body.error.code, `${site.origin} ${form}: ${JSON.stringify(body)}`).toBe("cross_origin");
          if (site.origin.startsWith("http://127.0.0.1:")) {
            const { cookie = "" } = await res.request().allHeaders();
            expect(cookie, "the same-site form carried the session cookie").toMatch(/toolgate_session=/);
            await shot(`form-${form}`);
          }
        }

        // A no-cors fetch with a text/plain JSON body: the page cannot read
        // the answer, the browser (and this test) can.
        await page.goto(site.origin + "/widget");
        const [res] = await Promise.all([
          page.waitForResponse((r) => r.url() === toolgate.url + "/api/mcp/servers"),
          page.evaluate(async ({ api }) => {
            await fetch(api + "/api/mcp/servers", {
              method: "POST", mode: "no-cors", credentials: "include",
              headers: { "Content-Type": "text/plain" },
              body: JSON.stringify({ label: "evil", url: api + "/mcp" }),
            });
          }, { api: toolgate.url }),
        ]);
        // 403, not 401: the guard answered before sign-in was even looked at
        // (the opaque answer's body is not kept, even for the test).
        expect(res.status(), `${site.origin} no-cors fetch: status`).toBe(403);
      }

      // DNS rebinding: evil.test now resolves to 127.0.0.1, so a page the
      // attacker served as http://evil.test:PORT talks to Toolgate as its own
      // origin (every request is same-origin to the browser) with Host evil.test.
      const rebound = `http://evil.test:${apiURL.port}`;
      const nav = await page.goto(rebound + "/");
      expect(nav?.status(), "the web app under a rebound name").toBe(421);
      expect((JSON.parse(await page.locator("body").innerText()) as ErrorBody).error.code).toBe("misdirected_host");
      await shot("rebound");
      const got = await page.evaluate(async ({ message }) => {
        const out = [];
        const calls: [string, string, object?][] = [
          ["GET", "/api/mcp/servers"],
          ["GET", "/api/auth/me"],
          ["POST", "/api/mcp/servers", { label: "rebound", url: "http://127.0.0.1:1/mcp" }],
          ["POST", "/api/responses", { input: message }],
        ];
        for (const [method, path, body] of calls) {
          const res = await fetch(path, {
            method, body: body && JSON.stringify(body),
            headers: body ? { "Content-Type": "application/json" } : {},
          });
          out.push({ method, path, status: res.status, body: await res.json() as ErrorBody });
        }
        return out;
      }, { message: attackMessage });
      for (const r of got) {
        expect(r.status, `${r.method} ${r.path} under a rebound name: ${JSON.stringify(r.body)}`).toBe(421);
        expect(r.body.error.code).toBe("misdirected_host");
        expect(r.body.error.message).toMatch(/ALLOWED_HOSTS/);
        expect(r.body.error.message).toMatch(/evil\.test/);
      }

      // Nothing changed: no server, no conversation, reset_forecasts never ran.
      const afterAttacks = await state(api);
      expect(afterAttacks).toEqual(before);
      expect(afterAttacks.servers.servers.map((s) => s.label)).toEqual(["demo"]);
      expect(afterAttacks.demo.calls?.reset_forecasts ?? 0).toBe(0);

      // The control: the same message from a script (no Origin, the admin's
      // session) does run the tool, so the attacks failed because of the
      // guard and not because the message could not work.
      const { response, data: streamed, error } = await api.POST("/api/responses", { body: { input: attackMessage }, parseAs: "text" });
      expect(response.status, streamed ?? JSON.stringify(error)).toBe(200);
      const control = await state(api);
      expect(control.demo.calls?.reset_forecasts, "the control message ran reset_forecasts").toBe(1);
    } finally {
      for (const s of sites) await s.close();
    }
  });
