// Starts the real Toolgate binary (bin/api, offline: with its built-in
// Responses emulator and demo MCP server) on a fresh Postgres database, and
// a real Chromium. Each scenario gets its own API and database, so one
// scenario's remembered policies cannot leak into the next. The browser signs
// in the way a person does: it opens the one-time sign-in link the binary
// prints (`toolgate: sign in: http://…/api/auth/link?token=…`).
import { spawn, execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const here = dirname(fileURLToPath(import.meta.url));
export const repo = resolve(here, "../..");
export const outDir = resolve(here, "../test-results/e2e");
export const chromiumPath = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
/** The binaries under test: bin/ of the repo, or TOOLGATE_BIN_DIR (e.g. a build of another checkout). */
export const binDir = process.env.TOOLGATE_BIN_DIR || join(repo, "bin");

/** Fails the whole run with one clear sentence when something it needs is missing. */
export function preflight() {
  const problems = [];
  if (!process.env.TEST_DATABASE_URL) {
    problems.push("TEST_DATABASE_URL is not set: the browser tests need Postgres (make test sets it when 127.0.0.1:5432 answers).");
  }
  if (!existsSync(chromiumPath)) {
    problems.push(`Chromium is not at ${chromiumPath}: install it with "apt-get install -y chromium" (or set CHROMIUM_PATH).`);
  }
  for (const bin of ["api", "demo-mcp"]) {
    if (!existsSync(join(binDir, bin))) problems.push(`bin/${bin} is missing: build it with "go build -o bin/ ./cmd/${bin}".`);
  }
  if (!existsSync(resolve(here, "../dist/index.html"))) {
    problems.push('frontend/dist is not built: run "npm run build" in frontend/.');
  }
  if (problems.length) throw new Error("the end-to-end tests cannot run:\n  " + problems.join("\n  "));
  mkdirSync(outDir, { recursive: true });
}

function databaseURL(name) {
  const u = new URL(process.env.TEST_DATABASE_URL);
  u.pathname = "/" + name;
  return u.toString();
}

/** Runs a binary until it logs `pattern`; resolves with the match and a stop function. */
function startProcess(cmd, args, env, pattern, label) {
  return new Promise((resolveStart, rejectStart) => {
    const child = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let log = "";
    let started = false;
    const onData = (chunk) => {
      log += chunk;
      const m = pattern.exec(log);
      if (m && !started) {
        started = true;
        resolveStart({
          match: m,
          log: () => log,
          /** Waits up to ms for the log to match pattern; resolves with the match, or null. */
          waitFor: async (re, ms = 5000) => {
            const end = Date.now() + ms;
            for (;;) {
              const found = re.exec(log);
              if (found || Date.now() > end) return found;
              await new Promise((r) => setTimeout(r, 50));
            }
          },
          stop: () => new Promise((done) => {
            if (child.exitCode !== null) return done();
            child.once("exit", done);
            child.kill("SIGTERM");
            setTimeout(() => child.kill("SIGKILL"), 8000).unref();
          }),
        });
      }
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    child.once("exit", (code) => {
      if (!started) rejectStart(new Error(`${label} exited with ${code} before it was ready:\n${log}`));
    });
    setTimeout(() => { if (!started) { child.kill("SIGKILL"); rejectStart(new Error(`${label} did not start in 30 s:\n${log}`)); } }, 30000).unref();
  });
}

/**
 * Starts Toolgate offline on a new database. Returns {url, log, stop}. The
 * demo MCP server is registered as "demo" (tools get_forecast,
 * list_forecasts, set_forecast, delete_forecast, send_alert, reset_forecasts).
 */
export async function startToolgate(name, env = {}) {
  const db = `toolgate_e2e_${name.replace(/\W/g, "_")}_${process.pid}`.toLowerCase();
  dropDatabase(db);
  const keyFile = join(tmpdir(), `${db}.secrets.key`);
  rmSync(keyFile, { force: true });
  const proc = await startProcess(join(binDir, "api"), [], {
    OPENAI_API_KEY: "",
    OPENAI_BASE_URL: "",
    DATABASE_URL: databaseURL(db),
    LISTEN_ADDR: "127.0.0.1:0",
    EMULATOR_ADDR: "127.0.0.1:0",
    DEMO_MCP_ADDR: "127.0.0.1:0",
    WEB_DIR: resolve(here, "../dist"),
    LOG_FORMAT: "text",
    TOOLGATE_ADMIN_EMAIL: "",
    TOOLGATE_ADMIN_PASSWORD: "",
    AUTH_MODE: "local",
    // Offline, the key for header secrets is a file made on first run: one per scenario, outside the repo.
    SECRETS_KEY: "",
    SECRETS_KEY_FILE: keyFile,
    ...env,
  }, /toolgate is listening"? url=(http:\/\/[^\s"]+)/, "toolgate");
  const url = proc.match[1];
  // The printed links name LISTEN_ADDR's host; with port 0 the real port is
  // only known once listening, so the token is put on the real address.
  const onUrl = (m, path) => (m ? `${url}${path}?token=${m[1]}` : null);
  const signIn = await proc.waitFor(/toolgate: sign in: \S*\/api\/auth\/link\?token=([^\s"]+)/, 1000);
  const setup = signIn ? null : await proc.waitFor(/\/setup\?token=([^\s"]+)/, 1000);
  return {
    url,
    /** The one-time sign-in link of the offline demo's admin (null when none was printed). */
    signInLink: onUrl(signIn, "/api/auth/link"),
    /** The first-run setup link (null when an account exists). */
    setupLink: onUrl(setup, "/setup"),
    log: proc.log,
    stop: async () => { await proc.stop(); dropDatabase(db); rmSync(keyFile, { force: true }); },
  };
}

/** Starts a standalone demo MCP server (cmd/demo-mcp) requiring a bearer token. */
export async function startDemoMCP(token) {
  const proc = await startProcess(join(binDir, "demo-mcp"), ["-addr", "127.0.0.1:0", "-token", token], {},
    /serving MCP"? url=(http:\/\/[^\s"]+)/, "demo-mcp");
  return { url: proc.match[1], stop: proc.stop };
}

function dropDatabase(db) {
  try {
    execFileSync("psql", [process.env.TEST_DATABASE_URL, "-qc", `DROP DATABASE IF EXISTS ${db} WITH (FORCE)`], { stdio: "ignore" });
  } catch { /* psql missing or the server refused: a leftover database harms nothing */ }
}

/** Launches headless Chromium with the flags that work on a machine without network (plus extraArgs). */
export async function launchBrowser(extraArgs = []) {
  return chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-quic",
      "--no-first-run", "--disable-component-update", "--disable-sync", ...extraArgs],
  });
}

/**
 * Runs one scenario against a fresh Toolgate and browser page, and saves a
 * screenshot of the page's end state (also when the scenario fails, named
 * *-FAILED.png, with the API's log beside it).
 */
export async function scenario(name, fn, opts = {}) {
  const { env = {}, signIn = true } = opts;
  // Only this run's pictures: drop what an earlier run of this scenario left.
  for (const f of readdirSync(outDir)) if (f === `${name}.png` || f.startsWith(`${name}-`)) rmSync(join(outDir, f));
  const tg = await startToolgate(name, env);
  const browser = await launchBrowser();
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const consoleErrors = [];
  page.on("console", (m) => {
    // A 401 answered while signed out is the app working as meant (the login page follows).
    if (m.type() === "error" && !/status of 401/.test(m.text())) consoleErrors.push(m.text());
  });
  page.on("pageerror", (e) => consoleErrors.push(String(e)));
  page.setDefaultTimeout(10000);
  let failed = true;
  try {
    const shot = (label, p = page) => p.screenshot({ path: join(outDir, `${name}-${label}.png`), fullPage: true });
    if (signIn) {
      if (!tg.signInLink) throw new Error("toolgate printed no sign-in link (toolgate: sign in: …):\n" + tg.log());
      await openSignInLink(page, tg.signInLink);
    }
    const api = apiClient(tg.url, signIn ? await sessionCookie(context) : undefined);
    await fn({
      page, context, browser, url: tg.url, api, consoleErrors, shot, tg,
      /** Creates a member with the admin's session and signs them in, through the login page, in a new browser context. */
      newMember: (email, password = "member-password-1") => newMember(browser, tg.url, api, email, password),
    });
    failed = false;
  } finally {
    const file = join(outDir, `${name}${failed ? "-FAILED" : ""}.png`);
    await page.screenshot({ path: file, fullPage: true }).catch(() => {});
    if (failed) {
      const { writeFileSync } = await import("node:fs");
      writeFileSync(join(outDir, `${name}-FAILED-api.log`), tg.log());
    }
    await browser.close().catch(() => {});
    await tg.stop();
  }
}

/** Opens the one-time sign-in link as a person would (one click from the terminal) and waits for the app. */
export async function openSignInLink(page, link) {
  await page.goto(link);
  await page.waitForURL((u) => !u.pathname.startsWith("/api/") && !u.pathname.startsWith("/login"));
  await page.getByRole("button", { name: /^Account: / }).waitFor();
}

/** The session cookie a browser context holds, as a Cookie header value. */
export async function sessionCookie(context) {
  const c = (await context.cookies()).find((x) => x.name === "toolgate_session");
  if (!c) throw new Error("the browser has no toolgate_session cookie: signing in did not work");
  return `${c.name}=${c.value}`;
}

/** Signs in through the login page (email and password) and waits for the app. */
export async function signInThroughLoginPage(page, url, email, password) {
  await page.goto(url + "/");
  await page.getByRole("heading", { name: "Sign in to Toolgate" }).waitFor();
  await page.getByRole("textbox", { name: "Email" }).fill(email);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
  await page.getByRole("button", { name: `Account: ${email}` }).waitFor();
}

async function newMember(browser, url, adminApi, email, password) {
  const user = await adminApi.call("POST", "/api/users", { email, password, role: "member" });
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  page.setDefaultTimeout(10000);
  await signInThroughLoginPage(page, url, email, password);
  return { user, context, page, email, password, api: apiClient(url, await sessionCookie(context)) };
}

/**
 * A small REST client for setting up state the scenario is not about. auth is
 * a Cookie header value (a browser's session) or "Bearer tg_…" (a token).
 */
export function apiClient(base, auth) {
  const authHeaders = !auth ? {} : auth.startsWith("Bearer ") ? { Authorization: auth } : { Cookie: auth };
  const raw = (method, path, body) => fetch(base + path, {
    method,
    headers: { ...authHeaders, ...(body ? { "Content-Type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const call = async (method, path, body) => {
    const res = await raw(method, path, body);
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return text ? JSON.parse(text) : undefined;
  };
  return {
    call,
    raw,
    setPolicy: (server, tool, policy, extra = {}) =>
      call("PUT", `/api/mcp/servers/${server}/tools/${tool}/approval-policy${extra.layer ? `?layer=${extra.layer}` : ""}`,
        extra.locked === undefined ? { policy } : { policy, locked: extra.locked }),
    tools: (server) => call("GET", `/api/mcp/servers/${server}/tools`).then((r) => r.tools),
  };
}
