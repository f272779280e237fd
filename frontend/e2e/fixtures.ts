// Playwright fixtures for the browser tests: every test that uses them gets
// its own toolgate (the real binary, offline, on a fresh database) and a
// page signed in as the offline demo's admin. See README.md here.
//
//   import { expect, test } from "./fixtures";
//   test("…", async ({ page, api, toolgate, shot }) => { await page.goto("/"); … });
//
// Options (test.use): toolgateEnv (more environment for the binary, e.g.
// {OFFLINE_DEMO: "false"}), signIn (false: the page starts signed out).
import { test as base, expect, type BrowserContext, type Page, type TestInfo } from "@playwright/test";
import { mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createApi, ok, type Api } from "./api";
import { shotsDir, startDemoMCP, startToolgate, type Toolgate } from "./toolgate";

export { expect };
export type { Api, Toolgate };

/** A second person: a member made by the admin, signed in through the login page in their own browser context. */
export type Member = {
  user: Awaited<ReturnType<typeof createMember>>;
  email: string;
  password: string;
  context: BrowserContext;
  page: Page;
  /** The typed client with the member's session. */
  api: Api;
};

type Options = {
  /** More environment for the binary (added to the offline defaults). */
  toolgateEnv: Record<string, string>;
  /** Whether the page starts signed in as the demo admin (default true). */
  signIn: boolean;
};

type Fixtures = {
  /** The running toolgate of this test (baseURL is its url). */
  toolgate: Toolgate;
  /** The typed REST client with the admin page's session (needs signIn). */
  api: Api;
  /** Console errors and uncaught exceptions of `page` so far (a 401 while signed out is not one). */
  consoleErrors: string[];
  /** Saves a full-page screenshot of page (or of another page p) as test-results/e2e/<test>-<label>.png. */
  shot: (label: string, p?: Page) => Promise<void>;
  /** Creates a member (with the admin's api) and signs them in, in a new browser context. */
  newMember: (email: string, password?: string) => Promise<Member>;
  /** A signed-out page in a new browser context (another person's browser), with this test's baseURL. */
  newPage: () => Promise<Page>;
  /** Starts the standalone demo MCP server requiring this bearer token; stopped when the test ends. */
  demoMCP: (token: string) => Promise<{ url: string }>;
};

/** The name of a test's screenshots and database: the "scenario" annotation (see scenario()), else the title's first words. */
export function scenarioName(info: TestInfo): string {
  const named = info.annotations.find((a) => a.type === "scenario")?.description;
  return named ?? info.title.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "").slice(0, 48).replace(/-$/, "");
}

/** Test details naming the test's screenshots: test("…", scenario("approve-remember"), async (…) => …). */
export function scenario(name: string) {
  return { annotation: { type: "scenario", description: name } };
}

/** What the page fixture records for consoleErrors. */
const consoleErrorsOf = new WeakMap<Page, string[]>();

const failed = (info: TestInfo) => info.status !== info.expectedStatus;

/** Opens the one-time sign-in link as a person would (one click from the terminal) and waits for the app. */
export async function openSignInLink(page: Page, link: string): Promise<void> {
  await page.goto(link);
  await page.waitForURL((u) => !u.pathname.startsWith("/api/") && !u.pathname.startsWith("/login"));
  // The user menu, in English or German (test.use({ locale: "de-DE" })).
  await page.getByRole("button", { name: /^(Account|Konto): / }).waitFor();
}

/** Signs in through the login page (email and password) and waits for the app. */
export async function signInThroughLoginPage(page: Page, email: string, password: string): Promise<void> {
  await page.goto("/");
  await page.getByRole("heading", { name: "Sign in to Toolgate" }).waitFor();
  await page.getByRole("textbox", { name: "Email" }).fill(email);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
  await page.getByRole("button", { name: `Account: ${email}` }).waitFor();
}

/** The session cookie a browser context holds, as a Cookie header value. */
export async function sessionCookie(context: BrowserContext): Promise<string> {
  const c = (await context.cookies()).find((x) => x.name === "toolgate_session");
  if (!c) throw new Error("the browser has no toolgate_session cookie: signing in did not work");
  return `${c.name}=${c.value}`;
}

function createMember(api: Api, email: string, password: string) {
  return ok(api.POST("/api/users", { body: { email, password, role: "member" } }));
}

export const test = base.extend<Options & Fixtures>({
  toolgateEnv: [{}, { option: true }],
  signIn: [true, { option: true }],

  toolgate: async ({ toolgateEnv }, provide, info) => {
    const name = scenarioName(info);
    const tg = await startToolgate(name, toolgateEnv);
    try {
      await provide(tg);
    } finally {
      if (failed(info)) {
        writeFileSync(join(shotsDir, `${name}-FAILED-api.log`), tg.log());
        await info.attach("toolgate.log", { body: tg.log(), contentType: "text/plain" });
      }
      await tg.destroy();
    }
  },

  baseURL: async ({ toolgate }, provide) => provide(toolgate.url),

  consoleErrors: async ({ page }, provide) => provide(consoleErrorsOf.get(page) ?? []),

  // The built-in page, signed in (unless signIn is false); its end state is
  // saved as test-results/e2e/<name>.png (<name>-FAILED.png when it failed).
  page: async ({ page, toolgate, signIn }, provide, info) => {
    const name = scenarioName(info);
    // Only this run's pictures: drop what an earlier run of this test left.
    mkdirSync(shotsDir, { recursive: true });
    for (const f of readdirSync(shotsDir)) if (f === `${name}.png` || f.startsWith(`${name}-`)) rmSync(join(shotsDir, f));
    const consoleErrors: string[] = [];
    consoleErrorsOf.set(page, consoleErrors);
    page.on("console", (m) => {
      // A 401 answered while signed out is the app working as meant (the login page follows).
      if (m.type() === "error" && !/status of 401/.test(m.text())) consoleErrors.push(m.text());
    });
    page.on("pageerror", (e) => consoleErrors.push(String(e)));
    if (signIn) {
      if (!toolgate.signInLink) throw new Error("toolgate printed no sign-in link (toolgate: sign in: …):\n" + toolgate.log());
      await openSignInLink(page, toolgate.signInLink);
    }
    await provide(page);
    const file = join(shotsDir, `${name}${failed(info) ? "-FAILED" : ""}.png`);
    await page.screenshot({ path: file, fullPage: true }).catch(() => {});
  },

  api: async ({ page, toolgate, signIn }, provide) => {
    if (!signIn) throw new Error("the api fixture uses the admin page's session: with signIn false, make a client with createApi(toolgate.url, \"Bearer \" + await toolgate.createToken(email))");
    await provide(createApi(toolgate.url, await sessionCookie(page.context())));
  },

  shot: async ({ page }, provide, info) => {
    const name = scenarioName(info);
    await provide(async (label, p = page) => {
      await p.screenshot({ path: join(shotsDir, `${name}-${label}.png`), fullPage: true });
    });
  },

  // The same window size and language as the test's own page.
  newPage: async ({ browser, toolgate, viewport, locale }, provide) => {
    const contexts: BrowserContext[] = [];
    await provide(async () => {
      const context = await browser.newContext({ viewport, locale, baseURL: toolgate.url });
      contexts.push(context);
      return context.newPage();
    });
    for (const c of contexts) await c.close().catch(() => {});
  },

  newMember: async ({ api, newPage, toolgate }, provide) => {
    await provide(async (email, password = "member-password-1") => {
      const user = await createMember(api, email, password);
      const page = await newPage();
      await signInThroughLoginPage(page, email, password);
      const context = page.context();
      return { user, email, password, context, page, api: createApi(toolgate.url, await sessionCookie(context)) };
    });
  },

  demoMCP: async ({ browserName: _ }, provide) => {
    const running: { stop: () => Promise<void> }[] = [];
    await provide(async (token) => {
      const mcp = await startDemoMCP(token);
      running.push(mcp);
      return { url: mcp.url };
    });
    for (const m of running) await m.stop();
  },
});
