// End-to-end: pages on other origins, in real Chromium, against the real
// binary with a signed-in admin. A page on another local origin tries what
// the issue found working: a plain HTML form that sends a chat message which
// would run reset_forecasts, a text/plain no-cors fetch that registers an MCP
// server, and (DNS rebinding, simulated with --host-resolver-rules) requests
// under a foreign Host name. Every one is refused by the guard, and the API,
// asked as the signed-in admin, shows nothing changed.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { apiClient, launchBrowser, openSignInLink, outDir, preflight, sessionCookie, startToolgate } from "./harness.mjs";

before(() => preflight());

const attackMessage = "reset_forecasts {}";

/** The attacker's site: a tiny server on host that serves html at every path. */
function attackerSite(host, html) {
  const server = createServer((req, res) => {
    res.writeHead(200, { "Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store" });
    res.end(html);
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, host, () => resolve({
      origin: `http://${host}:${server.address().port}`,
      close: () => new Promise((done) => server.close(done)),
    }));
  });
}

/** The attack page: two HTML forms (JSON smuggled as text/plain, and urlencoded) that post a chat message. */
function attackPage(api) {
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
async function state(api) {
  const servers = await api.call("GET", "/api/mcp/servers");
  const demo = servers.servers.find((s) => s.label === "demo");
  const demoState = await fetch(new URL("/state", demo.url)).then((r) => r.json());
  return {
    servers,
    tools: await api.call("GET", "/api/mcp/servers/demo/tools"),
    settings: await api.call("GET", "/api/settings"),
    audit: await api.call("GET", "/api/audit?limit=500"),
    conversations: await api.call("GET", "/api/conversations"),
    demo: demoState,
  };
}

let tg;
let browser;
after(async () => {
  await browser?.close().catch(() => {});
  await tg?.stop();
});

test("pages on other origins cannot chat, register a server or reach the API under a rebound name", async () => {
  tg = await startToolgate("crosssite");
  const apiURL = new URL(tg.url);
  assert.equal(apiURL.hostname, "127.0.0.1");
  browser = await launchBrowser([`--host-resolver-rules=MAP evil.test 127.0.0.1`]);
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  page.setDefaultTimeout(10000);
  let failed = true;
  const sites = [];
  try {
    await openSignInLink(page, tg.signInLink);
    const api = apiClient(tg.url, await sessionCookie(context));
    // Without the guard the chat message would run reset_forecasts at once.
    await api.setPolicy("demo", "reset_forecasts", "never");
    const before = await state(api);
    assert.equal(before.conversations.conversations.length, 0);
    assert.equal(before.demo.calls?.reset_forecasts ?? 0, 0);

    // The same site on another port (the session cookie, SameSite=Lax, goes
    // along: only the guard stands in the way) and another site (127.0.0.2).
    sites.push(await attackerSite("127.0.0.1", attackPage(tg.url)));
    sites.push(await attackerSite("127.0.0.2", attackPage(tg.url)));
    for (const site of sites) {
      for (const form of ["send-json", "send-plain"]) {
        await page.goto(site.origin + "/widget");
        const [res] = await Promise.all([
          page.waitForResponse((r) => r.url() === tg.url + "/api/responses"),
          page.click("#" + form),
        ]);
        assert.equal(res.status(), 403, `${site.origin} ${form}: status`);
        await page.waitForURL(tg.url + "/api/responses");
        const body = JSON.parse(await page.locator("body").innerText());
        assert.equal(body.error.code, "cross_origin", `${site.origin} ${form}: ${JSON.stringify(body)}`);
        if (site.origin.startsWith("http://127.0.0.1:")) {
          const { cookie = "" } = await res.request().allHeaders();
          assert.match(cookie, /toolgate_session=/, "the same-site form carried the session cookie");
          await page.screenshot({ path: join(outDir, `crosssite-form-${form}.png`), fullPage: true });
        }
      }

      // A no-cors fetch with a text/plain JSON body: the page cannot read
      // the answer, the browser (and this test) can.
      await page.goto(site.origin + "/widget");
      const [res] = await Promise.all([
        page.waitForResponse((r) => r.url() === tg.url + "/api/mcp/servers"),
        page.evaluate(async ({ api }) => {
          await fetch(api + "/api/mcp/servers", {
            method: "POST", mode: "no-cors", credentials: "include",
            headers: { "Content-Type": "text/plain" },
            body: JSON.stringify({ label: "evil", url: api + "/mcp" }),
          });
        }, { api: tg.url }),
      ]);
      // 403, not 401: the guard answered before sign-in was even looked at
      // (the opaque answer's body is not kept, even for the test).
      assert.equal(res.status(), 403, `${site.origin} no-cors fetch: status`);
    }

    // DNS rebinding: evil.test now resolves to 127.0.0.1, so a page the
    // attacker served as http://evil.test:PORT talks to Toolgate as its own
    // origin (every request is same-origin to the browser) with Host evil.test.
    const rebound = `http://evil.test:${apiURL.port}`;
    const nav = await page.goto(rebound + "/");
    assert.equal(nav.status(), 421, "the web app under a rebound name");
    assert.equal(JSON.parse(await page.locator("body").innerText()).error.code, "misdirected_host");
    await page.screenshot({ path: join(outDir, "crosssite-rebound.png"), fullPage: true });
    const got = await page.evaluate(async ({ message }) => {
      const out = [];
      for (const [method, path, body] of [
        ["GET", "/api/mcp/servers"],
        ["GET", "/api/auth/me"],
        ["POST", "/api/mcp/servers", { label: "rebound", url: "http://127.0.0.1:1/mcp" }],
        ["POST", "/api/responses", { input: message }],
      ]) {
        const res = await fetch(path, {
          method, body: body && JSON.stringify(body),
          headers: body ? { "Content-Type": "application/json" } : {},
        });
        out.push({ method, path, status: res.status, body: await res.json() });
      }
      return out;
    }, { message: attackMessage });
    for (const r of got) {
      assert.equal(r.status, 421, `${r.method} ${r.path} under a rebound name: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.error.code, "misdirected_host");
      assert.match(r.body.error.message, /ALLOWED_HOSTS/);
      assert.match(r.body.error.message, /evil\.test/);
    }

    // Nothing changed: no server, no conversation, reset_forecasts never ran.
    const afterAttacks = await state(api);
    assert.deepEqual(afterAttacks, before);
    assert.deepEqual(afterAttacks.servers.servers.map((s) => s.label), ["demo"]);
    assert.equal(afterAttacks.demo.calls?.reset_forecasts ?? 0, 0);

    // The control: the same message from a script (no Origin, the admin's
    // session) does run the tool, so the attacks failed because of the
    // guard and not because the message could not work.
    const res = await api.raw("POST", "/api/responses", { input: attackMessage });
    const streamed = await res.text();
    assert.equal(res.status, 200, streamed);
    const control = await state(api);
    assert.equal(control.demo.calls?.reset_forecasts, 1, "the control message ran reset_forecasts");
    failed = false;
  } finally {
    if (failed) {
      const { writeFileSync } = await import("node:fs");
      await page.screenshot({ path: join(outDir, "crosssite-FAILED.png"), fullPage: true }).catch(() => {});
      writeFileSync(join(outDir, "crosssite-FAILED-api.log"), tg.log());
    }
    for (const s of sites) await s.close();
  }
});
