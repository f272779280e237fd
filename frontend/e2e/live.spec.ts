// Every open tab follows its conversation live (GET
// /api/conversations/{id}/events): a decision in one tab settles the card in
// the other at once, with who decided; a message sent in one tab streams in
// the other; a reload mid-answer shows what streamed so far and goes on.
import type { Page } from "@playwright/test";
import { setPolicy } from "./api";
import { expect, scenario, test } from "./fixtures";
import { ChatPage } from "./pages";

/** A second tab of the same browser (same person, same session) on the conversation page shows. */
async function secondTab(page: Page): Promise<{ tab: Page; chat: ChatPage }> {
  await page.waitForURL(/\/c\/conv_/);
  const tab = await page.context().newPage();
  await tab.goto(page.url());
  return { tab, chat: new ChatPage(tab) };
}

test("deciding in one tab settles the card in the other at once, saying who decided", scenario("live-decision"),
  async ({ page, api, shot, consoleErrors }) => {
    await setPolicy(api, "demo", "delete_forecast", "always");
    await page.goto("/");
    const a = new ChatPage(page);
    await a.send('delete_forecast {"city": "Oslo"}');
    await a.card("delete_forecast").waitFor();
    await a.idle();
    const { tab, chat: b } = await secondTab(page);
    const cardB = b.card("delete_forecast");
    await expect(cardB.getByRole("button", { name: "Approve" })).toBeEnabled();

    await a.card("delete_forecast").getByRole("button", { name: "Approve" }).click();
    // Tab B was not touched: its card turns into the decision, and then the result, by itself.
    await expect(tab.getByText("approved by demo@toolgate.local", { exact: true })).toBeVisible({ timeout: 5000 });
    // …and tells screen readers who decided.
    await expect(tab.getByText("delete_forecast on demo: approved by demo@toolgate.local", { exact: true })).toBeAttached();
    await expect(cardB).toHaveCount(0);
    await expect(tab.getByRole("button", { name: "Approve" })).toHaveCount(0);
    await b.answerContaining("Deleted the forecast for Oslo.");
    await b.idle();
    await shot("tab-b", tab);
    expect(consoleErrors).toEqual([]);
  });

test("a message sent in one tab streams in the other", scenario("live-message"), async ({ page, shot }) => {
  await page.goto("/");
  const a = new ChatPage(page);
  await a.send("list_forecasts");
  await a.answerContaining("Lisbon");
  await a.idle();
  const { tab, chat: b } = await secondTab(page);
  await b.answerContaining("Lisbon");

  await a.send("[emulator: event-delay=120ms, deltas=30] tell me about Toolgate");
  // Tab B shows the message and the answer while it streams (its Stop cancels the turn on the server).
  await expect(tab.locator(".msg.user").filter({ hasText: "tell me about Toolgate" })).toBeVisible({ timeout: 5000 });
  const streaming = tab.locator(".assistant-body.streaming");
  await expect(streaming).toHaveText(/\w+/, { timeout: 5000 });
  await expect(tab.getByRole("button", { name: "Stop" })).toBeVisible();
  await shot("streaming", tab);
  await b.idle();
  await expect(streaming).toHaveCount(0);
  // Both tabs end with the same answer.
  const last = async (p: Page) => (await p.locator(".msg.assistant").last().innerText()).trim();
  expect(await last(tab)).toBe(await last(page));
});

test("a reload mid-answer shows the text streamed so far, then the rest as it comes", scenario("live-reload"),
  async ({ page, shot, consoleErrors }) => {
    await page.goto("/");
    const chat = new ChatPage(page);
    await chat.send("[emulator: event-delay=150ms, deltas=40] tell me about Toolgate");
    await page.waitForURL(/\/c\/conv_/);
    const streaming = page.locator(".assistant-body.streaming");
    await expect(streaming).toHaveText(/(\w+\W+){4}/); // a few words in
    const before = (await streaming.innerText()).trim();

    await page.reload();
    // What had streamed is back at once (the stream replays the running turn), and it goes on.
    await expect(streaming).toContainText(before, { timeout: 3000 });
    const after = (await streaming.innerText()).trim();
    await expect(async () => {
      expect((await streaming.innerText()).trim().length).toBeGreaterThan(after.length);
    }).toPass({ timeout: 5000 });
    await shot("resumed");
    await chat.idle();
    await expect(streaming).toHaveCount(0);
    await expect(chat.answers().last()).toContainText(before);
    await expect(page.getByText("cut short")).toHaveCount(0);
    expect(consoleErrors).toEqual([]);
  });
