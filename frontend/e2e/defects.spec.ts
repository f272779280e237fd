// Defects a new user hit (issue 12, item 6), each pinned by a test that
// failed before its fix: the page itself scrolling past a long transcript,
// cut-off conversation titles without a tooltip, blocked tools listed without
// a badge, and the chat saying "never" where settings say Auto.
import { ok, setPolicy } from "./api";
import { expect, scenario, test } from "./fixtures";
import { ChatPage, SettingsPage } from "./pages";

test("a transcript longer than the window scrolls in its pane; the page itself never scrolls",
  scenario("no-page-scroll"), async ({ page }) => {
    await page.setViewportSize({ width: 1280, height: 600 });
    await page.goto("/");
    const chat = new ChatPage(page);
    const pane = page.locator(".chat-scroll");
    const heights = () => pane.evaluate((el) => ({ scroll: el.scrollHeight, client: el.clientHeight }));
    for (let i = 0; i < 12; i++) {
      await chat.send(`list_forecasts message ${i}`);
      await chat.idle();
      const h = await heights();
      if (h.scroll > 2 * h.client) break;
    }
    const h = await heights();
    expect(h.scroll, `the transcript is longer than its pane (${h.scroll} > 2 × ${h.client})`).toBeGreaterThan(2 * h.client);

    const doc = () => page.evaluate(() => ({
      scrollHeight: document.scrollingElement!.scrollHeight, innerHeight, scrollY,
    }));
    const before = await doc();
    expect(before.scrollHeight,
      `the page is no taller than the window (scrollHeight ${before.scrollHeight}, innerHeight ${before.innerHeight})`)
      .toBeLessThanOrEqual(before.innerHeight);

    // Wheel well past the end of the transcript, over the transcript.
    const box = (await pane.boundingBox())!;
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    for (let i = 0; i < 10; i++) await page.mouse.wheel(0, 2000);
    await page.waitForTimeout(300);
    const after = await doc();
    expect(after.scrollY, "the page did not scroll").toBe(0);
    const paneAtEnd = await pane.evaluate((el) => el.scrollTop + el.clientHeight >= el.scrollHeight - 2);
    expect(paneAtEnd, "the transcript pane scrolled to its end").toBe(true);
  });

test("a conversation title cut off in the sidebar shows in full in its tooltip", scenario("title-tooltip"), async ({ page, api }) => {
  await page.goto("/");
  const chat = new ChatPage(page);
  await chat.send("list_forecasts");
  await chat.idle();
  await page.waitForURL(/\/c\/conv_/);
  const id = /\/c\/(conv_[^/?#]+)/.exec(page.url())![1];
  const title = "Weekly forecast review for Oslo, Berlin, Lisbon and Paris with the whole team before Friday";
  await ok(api.PATCH("/api/conversations/{conversationId}", { params: { path: { conversationId: id } }, body: { title } }));
  await page.reload();

  const sidebar = page.getByRole("navigation", { name: "Conversations" });
  const link = sidebar.getByRole("link", { name: new RegExp(`^${title}`) });
  await link.waitFor();
  const cut = await link.locator(".conv-title").evaluate((el) => el.scrollWidth > el.clientWidth);
  expect(cut, "the title is cut off in the sidebar").toBe(true);
  await expect(link, "the tooltip holds the full title").toHaveAttribute("title", title);
});

test.describe("direct mode (MCP_ROUTE=direct)", () => {
  test.use({ toolgateEnv: { MCP_ROUTE: "direct" } });
  test("a tool blocked for me carries a Blocked badge in the chat's list of tools", scenario("blocked-badge"), async ({ page, api }) => {
    await setPolicy(api, "demo", "delete_forecast", "blocked", { layer: "workspace" });
    await page.goto("/");
    const chat = new ChatPage(page);
    await chat.send("list_forecasts");
    await chat.idle();

    const listing = page.locator("details.list-tools").last();
    await listing.locator("summary").click();
    const blocked = listing.getByRole("listitem").filter({ hasText: "delete_forecast" });
    await blocked.getByText("Blocked", { exact: true }).waitFor();
    const open = listing.getByRole("listitem").filter({ hasText: "get_forecast" });
    await open.waitFor();
    await expect(open.getByText("Blocked", { exact: true }), "an allowed tool has no badge").toHaveCount(0);
    await expect(listing.getByText("Blocked", { exact: true }), "only the blocked tool is badged").toHaveCount(1);
  });
});

// Through Toolgate's MCP face (the offline default) the provider's listing
// leaves a blocked tool out altogether: the model never learns of it.
test("through the MCP face a blocked tool is not even listed", scenario("blocked-unlisted"), async ({ page, api }) => {
  await setPolicy(api, "demo", "delete_forecast", "blocked", { layer: "workspace" });
  await page.goto("/");
  const chat = new ChatPage(page);
  await chat.send("list_forecasts");
  await chat.idle();

  const listing = page.locator("details.list-tools").last();
  await listing.locator("summary").click();
  await listing.getByRole("listitem").filter({ hasText: "get_forecast" }).waitFor();
  await expect(listing.getByRole("listitem").filter({ hasText: "delete_forecast" }), "the blocked tool is not listed").toHaveCount(0);
});

test("the chat names policies as settings do: Auto, not never", scenario("one-vocabulary"), async ({ page }) => {
  await page.goto("/");
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
  expect(text, `the line says Auto: ${text}`).toMatch(/\bAuto\b/);
  expect(text, `the line does not say never: ${text}`).not.toMatch(/\bnever\b/);
});
