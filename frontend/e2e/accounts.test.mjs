// End-to-end: accounts in real Chromium against the real binary. Signing in
// (login page, setup page, sign-in link), two people in two browser contexts
// (ownership of conversations, personal "remember", locked workspace
// policies), signing out, personal API tokens and the admin's Users page.
import assert from "node:assert/strict";
import { before, test } from "node:test";
import { ChatPage, SettingsPage } from "./app.mjs";
import { preflight, scenario } from "./harness.mjs";

before(() => preflight());

const ADMIN = { email: "admin@example.com", password: "correct horse battery staple" };
const adminEnv = { TOOLGATE_ADMIN_EMAIL: ADMIN.email, TOOLGATE_ADMIN_PASSWORD: ADMIN.password };

/** The radio of a policy control, by the option's name (Auto, Ask, Blocked, Use …). */
const radio = (group, name) => group.getByRole("radio", { name: new RegExp(`^${name}`) });

test("login page: a wrong password shows the API's sentence, the right one signs in and returns to the page asked for", () =>
  scenario("login", async ({ page, url, shot }) => {
    await page.goto(url + "/settings");
    await page.waitForURL(/\/login\?next=%2Fsettings$/);
    await page.getByRole("heading", { name: "Sign in to Toolgate" }).waitFor();
    await page.getByRole("textbox", { name: "Email" }).fill(ADMIN.email);
    await page.getByLabel("Password").fill("not the password");
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    const error = page.getByRole("alert");
    await error.waitFor();
    assert.match(await error.innerText(), /\w+ \w+/, "a sentence from the API");
    assert.equal(await page.getByRole("button", { name: /^Account: / }).count(), 0, "not signed in");
    await shot("wrong-password");

    await page.getByLabel("Password").fill(ADMIN.password);
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await page.getByRole("button", { name: `Account: ${ADMIN.email}` }).waitFor();
    await page.waitForURL(url + "/settings");
    await page.getByRole("heading", { name: "Tools & policies" }).waitFor();
  }, { env: adminEnv, signIn: false }));

test("setup page: the first-run link creates the first admin, who is then in the app", () =>
  scenario("setup", async ({ page, tg, shot }) => {
    assert.ok(tg.setupLink, "Toolgate printed a setup link");
    await page.goto(tg.setupLink);
    await page.getByRole("heading", { name: "Set up Toolgate" }).waitFor();
    await page.getByRole("textbox", { name: "Email" }).fill("first@example.com");
    await page.getByLabel("Password", { exact: true }).fill("a long enough password");
    await page.getByLabel("Password again").fill("a different password");
    await page.getByText("The passwords differ.").waitFor();
    await shot("mismatch");
    await page.getByLabel("Password again").fill("a long enough password");
    await page.getByRole("button", { name: "Create admin and sign in" }).click();
    await page.getByRole("button", { name: "Account: first@example.com" }).waitFor();
    await page.getByRole("button", { name: "Account: first@example.com" }).click();
    await page.getByText("admin", { exact: true }).waitFor();
    await page.getByRole("link", { name: "Users" }).waitFor();
  }, { env: { OFFLINE_DEMO: "false" }, signIn: false }));

test("two people: the member does not see the admin's conversation, in the list or by its URL", () =>
  scenario("two-users-ownership", async ({ page, url, newMember, shot }) => {
    const chat = new ChatPage(page);
    await chat.send("hello from the admin");
    await chat.idle();
    await page.waitForURL(/\/c\/conv_/);
    const adminConversation = new URL(page.url()).pathname;

    const ann = await newMember("ann@example.com");
    const list = ann.page.getByRole("navigation", { name: "Conversations" });
    await list.waitFor();
    assert.equal(await list.getByRole("link", { name: /hello from the admin/ }).count(), 0, "not in the member's list");

    await ann.page.goto(url + adminConversation);
    await ann.page.getByText(/This conversation does not exist/).waitFor();
    assert.equal(await ann.page.getByText("hello from the admin").count(), 0, "the transcript is not shown");
    await shot("member-not-found", ann.page);
  }));

test("the member's remember sets the member's own policy; the admin's workspace policy stays Ask", () =>
  scenario("member-remember", async ({ page, api, newMember, shot }) => {
    await api.setPolicy("demo", "delete_forecast", "always", { layer: "workspace" });
    const ann = await newMember("ann@example.com");
    const chat = new ChatPage(ann.page);
    await chat.send('delete_forecast {"city": "Oslo"}');
    const card = chat.card("delete_forecast");
    await card.waitFor();
    await card.getByRole("checkbox", { name: "Remember for this tool" }).check();
    await card.getByRole("button", { name: "Approve" }).click();
    await chat.answerContaining("Deleted the forecast for Oslo.");
    await chat.idle();

    const annSettings = new SettingsPage(ann.page);
    await annSettings.open();
    const mine = annSettings.mine("delete_forecast");
    await radio(mine, "Auto").waitFor();
    assert.equal(await radio(mine, "Auto").isChecked(), true, "the member's own policy is Auto");
    assert.equal(await annSettings.policy("delete_forecast").count(), 0,
      "a member has no workspace control");
    await shot("member-settings", ann.page);

    const settings = new SettingsPage(page);
    await settings.open();
    const workspace = settings.policy("delete_forecast");
    await radio(workspace, "Ask").waitFor();
    assert.equal(await radio(workspace, "Ask").isChecked(), true, "the admin's workspace policy is still Ask");
    const [tool] = (await api.tools("demo")).filter((t) => t.name === "delete_forecast");
    assert.equal(tool.policy, "always");
    assert.equal(tool.effective_policy, "always", "the admin is still asked");
    await shot("admin-settings");
  }));

test("a locked workspace policy cannot be loosened: the looser option is disabled and a stale attempt shows the lock", () =>
  scenario("locked-policy", async ({ page, newMember, shot }) => {
    const ann = await newMember("ann@example.com");
    const annSettings = new SettingsPage(ann.page);
    await annSettings.open();
    const mine = annSettings.mine("delete_forecast");
    await mine.waitFor();

    // The admin sets Ask and locks it while the member's page is open.
    const settings = new SettingsPage(page);
    await settings.open();
    await settings.setPolicy("delete_forecast", "Ask");
    const lock = settings.server("demo").getByRole("checkbox", { name: "Lock the policy for delete_forecast" });
    await lock.check();
    // Saved: the toggle is usable again and the row says locked.
    await page.locator("li", { has: page.getByRole("radiogroup", { name: "Policy for delete_forecast", exact: true }) })
      .locator(".locked-badge").waitFor();
    assert.equal(await lock.isChecked(), true);
    assert.equal(await lock.isEnabled(), true);
    await shot("admin-locked");

    // The member's page still offers Auto: trying it, the API refuses and says why.
    await radio(mine, "Auto").click();
    await mine.locator("xpath=..").getByRole("status").filter({ hasText: /Could not save: .*locked/ }).waitFor();
    assert.equal(await radio(mine, "Auto").isChecked(), false, "rolled back");
    // The page now knows the lock: Auto is disabled, stricter choices are not.
    await ann.page.waitForFunction(() => {
      const g = document.querySelector('[role=radiogroup][aria-label="My policy for delete_forecast"]');
      return g?.querySelector('input[value=never]')?.disabled === true;
    });
    assert.equal(await radio(mine, "Blocked").isDisabled(), false, "a stricter choice stays open");
    await annSettings.server("demo").getByText(/locked this tool at Ask/).waitFor();

    // A forced attempt through the API is refused too.
    const res = await ann.api.raw("PUT", "/api/mcp/servers/demo/tools/delete_forecast/approval-policy?layer=user", { policy: "never" });
    assert.equal(res.status, 403);
    assert.equal((await res.json()).error.code, "policy_locked");
    await shot("member-locked", ann.page);
  }));

test("sign out returns to the login page and the session is gone", () =>
  scenario("sign-out", async ({ page, url }) => {
    await page.getByRole("button", { name: /^Account: / }).click();
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByRole("heading", { name: "Sign in to Toolgate" }).waitFor();
    const status = await page.evaluate(() => fetch("/api/auth/me").then((r) => r.status));
    assert.equal(status, 401);
    await page.goto(url + "/settings");
    await page.getByRole("heading", { name: "Sign in to Toolgate" }).waitFor();
  }));

test("API tokens: created and shown once, usable as a Bearer token, deleted and then refused", () =>
  scenario("tokens", async ({ page, url, shot }) => {
    await page.getByRole("button", { name: /^Account: / }).click();
    await page.getByRole("link", { name: "API tokens" }).click();
    await page.getByRole("heading", { name: "API tokens" }).waitFor();
    await page.getByRole("textbox", { name: "Token name" }).fill("laptop curl");
    await page.getByRole("button", { name: "Create token" }).click();
    const shown = page.getByRole("region", { name: "New token laptop curl" });
    await shown.getByText(/shown only this once/).waitFor();
    const token = (await shown.getByLabel("Token").innerText()).trim();
    assert.match(token, /^tg_/);
    await shot("shown-once");

    const me = await fetch(url + "/api/auth/me", { headers: { Authorization: `Bearer ${token}` } });
    assert.equal(me.status, 200, "the token works like curl -H 'Authorization: Bearer …'");
    assert.equal((await me.json()).role, "admin");

    await shown.getByRole("button", { name: "I have copied it" }).click();
    await page.reload();
    await page.getByRole("row", { name: /laptop curl/ }).waitFor();
    assert.equal(await page.getByText(token).count(), 0, "the token is never shown again");

    await page.getByRole("button", { name: "Delete laptop curl" }).click();
    await page.getByRole("group", { name: "Confirm deleting laptop curl" }).getByRole("button", { name: "Delete" }).click();
    await page.getByRole("row", { name: /laptop curl/ }).waitFor({ state: "detached" });
    const after = await fetch(url + "/api/auth/me", { headers: { Authorization: `Bearer ${token}` } });
    assert.equal(after.status, 401, "a deleted token is refused");
  }));

test("users page: the admin adds a member, the last admin cannot be demoted, a disabled member is signed out", () =>
  scenario("users", async ({ page, url, browser, shot }) => {
    await page.getByRole("button", { name: /^Account: / }).click();
    await page.getByRole("link", { name: "Users" }).click();
    await page.getByRole("heading", { name: "Users", exact: true }).waitFor();
    await page.getByRole("textbox", { name: "Email" }).fill("bo@example.com");
    await page.getByLabel("Password").fill("bo's password 123");
    await page.getByRole("button", { name: "Add person" }).click();
    await page.getByRole("row", { name: /bo@example.com/ }).waitFor();

    // The only admin cannot make themselves a member: the API's 409 is shown inline.
    const self = page.getByRole("row", { name: /\(you\)/ });
    await self.getByRole("combobox").selectOption("member");
    await self.getByRole("alert").filter({ hasText: /last active admin/ }).waitFor();
    await shot("last-admin");

    // Bo signs in, and the admin disables Bo: Bo's next request lands on the login page.
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const bo = await ctx.newPage();
    bo.setDefaultTimeout(10000);
    const { signInThroughLoginPage } = await import("./harness.mjs");
    await signInThroughLoginPage(bo, url, "bo@example.com", "bo's password 123");
    await page.getByRole("button", { name: "Disable bo@example.com" }).click();
    await page.getByRole("button", { name: "Enable bo@example.com" }).waitFor();
    await bo.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Tools & policies" }).click();
    await bo.getByRole("heading", { name: "Sign in to Toolgate" }).waitFor();
    await bo.waitForURL(/\/login\?next=%2Fsettings/);
    await bo.getByText("Your session ended").waitFor();
    await shot("disabled-member", bo);
  }));
