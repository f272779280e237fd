// "Waiting for me" (/inbox) end to end, against the real binary, its
// Responses emulator and the demo MCP server: a request a chat turn makes
// appears in the open inbox (and its count in the nav and the title) without
// a reload; approving it there runs the tool, the request leaves the list,
// and the chat, open in another tab, shows the outcome. On a desktop and on
// a phone (390 px), where nothing may stick out sideways.
import type { Page } from "@playwright/test";
import { setPolicy } from "./api";
import { expect, scenario, test } from "./fixtures";
import { ChatPage, overflow } from "./pages";

async function approveFromTheInbox(page: Page, shot: (label: string) => Promise<void>, phone: boolean) {
  // The inbox is open first: the request must come to it live.
  const inbox = await page.context().newPage();
  await inbox.goto("/inbox");
  await inbox.getByRole("heading", { name: "Waiting for me" }).waitFor();
  await inbox.getByText("Nothing waits for you.").waitFor();

  const chat = new ChatPage(page);
  await page.goto("/");
  await chat.send('delete_forecast {"city": "Oslo"}');
  await chat.card("delete_forecast").waitFor();
  await chat.idle();

  const card = inbox.getByRole("article", { name: "Approval request: delete_forecast on demo" });
  await card.waitFor();
  await expect(card.getByText('"city": "Oslo"'), "the card shows the arguments").toBeVisible();
  await expect(inbox.getByText("In the chat"), "the request says where it came from").toBeVisible();
  await expect(inbox.getByRole("navigation", { name: "Main" }).getByRole("link", { name: /Waiting for me \(1 request waits\)/ }),
    "the nav counts it").toBeVisible();
  await expect(inbox).toHaveTitle("(1) Waiting for me · Toolgate");
  if (phone) {
    expect(await overflow(inbox, ".topbar, .topbar nav a, .inbox-page, .inbox-page *"), "nothing sticks out at 390 px").toEqual([]);
  }
  await inbox.bringToFront();
  await shot("waiting");

  await card.getByRole("button", { name: "Approve", exact: true }).click();
  await inbox.getByText("Approved: delete_forecast on demo.").waitFor();
  await expect(card, "the request left the list").toHaveCount(0);
  await inbox.getByText("Nothing waits for you.").waitFor();
  await expect(inbox).toHaveTitle("Waiting for me · Toolgate");

  // The chat, in its own tab, shows the decision and the tool's outcome.
  await page.bringToFront();
  await chat.answerContaining("Deleted the forecast for Oslo.");
  await page.getByText("approved by demo@toolgate.local", { exact: true }).waitFor();
  await expect(chat.card("delete_forecast"), "no card is left pending in the chat").toHaveCount(0);
  await inbox.close();
}

test("a chat's request appears in the inbox live; approved there, it leaves the list and the chat shows the outcome",
  scenario("inbox-approve"), async ({ page, api, consoleErrors, shot }) => {
    await setPolicy(api, "demo", "delete_forecast", "always");
    await approveFromTheInbox(page, shot, false);
    expect(consoleErrors).toEqual([]);
  });

test.describe("on a phone", () => {
  test.use({ viewport: { width: 390, height: 844 } });

  test("at 390 px the inbox fits the width and decides like the chat",
    scenario("inbox-approve-390"), async ({ page, api, consoleErrors, shot }) => {
      await setPolicy(api, "demo", "delete_forecast", "always");
      await approveFromTheInbox(page, shot, true);
      expect(consoleErrors).toEqual([]);
    });
});
