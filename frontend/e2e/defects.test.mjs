// Defects a new user hit (issue 12, item 6), each pinned by a scenario that
// failed before its fix: the page itself scrolling past a long transcript,
// cut-off conversation titles without a tooltip, blocked tools listed without
// a badge, and the chat saying "never" where settings say Auto.
import assert from "node:assert/strict";
import { before, test } from "node:test";
import { ChatPage, SettingsPage } from "./app.mjs";
import { preflight, scenario } from "./harness.mjs";

before(() => preflight());

test("a transcript longer than the window scrolls in its pane; the page itself never scrolls", () =>
  scenario("no-page-scroll", async ({ page, url }) => {
    await page.setViewportSize({ width: 1280, height: 600 });
    await page.goto(url + "/");
    const chat = new ChatPage(page);
    const pane = page.locator(".chat-scroll");
    for (let i = 0; i < 12; i++) {
      await chat.send(`list_forecasts message ${i}`);
      await chat.idle();
      const [sh, ch] = await pane.evaluate((el) => [el.scrollHeight, el.clientHeight]);
      if (sh > 2 * ch) break;
    }
    const [sh, ch] = await pane.evaluate((el) => [el.scrollHeight, el.clientHeight]);
    assert.ok(sh > 2 * ch, `the transcript is longer than its pane (${sh} > 2 × ${ch})`);

    const doc = () => page.evaluate(() => ({
      scrollHeight: document.scrollingElement.scrollHeight, innerHeight, scrollY,
    }));
    const before = await doc();
    assert.ok(before.scrollHeight <= before.innerHeight,
      `the page is no taller than the window (scrollHeight ${before.scrollHeight}, innerHeight ${before.innerHeight})`);

    // Wheel well past the end of the transcript, over the transcript.
    const box = await pane.boundingBox();
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    for (let i = 0; i < 10; i++) await page.mouse.wheel(0, 2000);
    await page.waitForTimeout(300);
    const after = await doc();
    assert.equal(after.scrollY, 0, "the page did not scroll");
    const paneAtEnd = await pane.evaluate((el) => el.scrollTop + el.clientHeight >= el.scrollHeight - 2);
    assert.ok(paneAtEnd, "the transcript pane scrolled to its end");
  }));

test("a conversation title cut off in the sidebar shows in full in its tooltip", () =>
  scenario("title-tooltip", async ({ page, url, api }) => {
    await page.goto(url + "/");
    const chat = new ChatPage(page);
    await chat.send("list_forecasts");
    await chat.idle();
    await page.waitForURL(/\/c\/conv_/);
    const id = /\/c\/(conv_[^/?#]+)/.exec(page.url())[1];
    const title = "Weekly forecast review for Oslo, Berlin, Lisbon and Paris with the whole team before Friday";
    await api.call("PATCH", `/api/conversations/${id}`, { title });
    await page.reload();

    const sidebar = page.getByRole("navigation", { name: "Conversations" });
    const link = sidebar.getByRole("link", { name: new RegExp(`^${title}`) });
    await link.waitFor();
    const cut = await link.locator(".conv-title").evaluate((el) => el.scrollWidth > el.clientWidth);
    assert.ok(cut, "the title is cut off in the sidebar");
    assert.equal(await link.getAttribute("title"), title, "the tooltip holds the full title");
  }));

test("a tool blocked for me carries a Blocked badge in the chat's list of tools", () =>
  scenario("blocked-badge", async ({ page, url, api }) => {
    await api.setPolicy("demo", "delete_forecast", "blocked", { layer: "workspace" });
    await page.goto(url + "/");
    const chat = new ChatPage(page);
    await chat.send("list_forecasts");
    await chat.idle();

    const listing = page.locator("details.list-tools").last();
    await listing.locator("summary").click();
    const blocked = listing.getByRole("listitem").filter({ hasText: "delete_forecast" });
    await blocked.getByText("Blocked", { exact: true }).waitFor();
    const open = listing.getByRole("listitem").filter({ hasText: "get_forecast" });
    await open.waitFor();
    assert.equal(await open.getByText("Blocked", { exact: true }).count(), 0, "an allowed tool has no badge");
    assert.equal(await listing.getByText("Blocked", { exact: true }).count(), 1, "only the blocked tool is badged");
  }));

test("the chat names policies as settings do: Auto, not never", () =>
  scenario("one-vocabulary", async ({ page, url }) => {
    await page.goto(url + "/");
    const settings = new SettingsPage(page);
    const chat = new ChatPage(page);
    await settings.open();
    await settings.setPolicy("get_forecast", "Auto");

    await chat.open();
    await chat.send('get_forecast {"city": "Berlin"}');
    await chat.idle();
    const call = page.locator(".tool-call").filter({ hasText: "get_forecast" }).last();
    const footer = call.locator(".call-footer");
    await footer.getByText(/ran without asking/).waitFor();
    const text = await footer.innerText();
    assert.match(text, /\bAuto\b/, `the line says Auto: ${text}`);
    assert.doesNotMatch(text, /\bnever\b/, `the line does not say never: ${text}`);
  }));
