// Chat defects, each fixed and kept fixed: the sidebar and the approval card
// on a phone-sized window; what runs while a tool runs, asked or not;
// whether a tool ran after Stop.
import type { Locator, Page } from "@playwright/test";
import { ok } from "./api";
import { expect, slowTest, startEmulator } from "./chat-helpers";
import { scenario, test } from "./fixtures";

const oslo = 'delete_forecast {"city":"Oslo"}';
const forecast = 'get_forecast {"city":"Oslo"}';

/**
 * A model whose every stream event comes 800 ms after the one before: a
 * tool that runs without asking (get_forecast, read-only) is running for
 * seconds between the provider's start of the call and its result.
 */
const pacedTest = test.extend<{ pacedModel: string }>({
  pacedModel: async ({ browserName: _ }, provide) => {
    const emu = await startEmulator("event-delay=800ms; deltas=2");
    try { await provide(emu.url); } finally { await emu.stop(); }
  },
  toolgateEnv: async ({ pacedModel }, provide) => provide({ OPENAI_BASE_URL: pacedModel }),
});

async function send(page: Page, text: string): Promise<void> {
  await page.getByRole("textbox", { name: "Message" }).fill(text);
  await page.getByRole("button", { name: "Send", exact: true }).click();
}

/** The box of a locator, which must lie wholly inside the window. */
async function inWindow(page: Page, l: Locator, what: string): Promise<void> {
  await expect(l, `${what} is on screen`).toBeInViewport({ ratio: 1 });
  const box = await l.boundingBox();
  const vp = page.viewportSize()!;
  expect(box, `${what} has a box`).not.toBeNull();
  expect(box!.x, `${what} starts inside the window`).toBeGreaterThanOrEqual(0);
  expect(box!.y, `${what} starts inside the window`).toBeGreaterThanOrEqual(0);
  expect(box!.x + box!.width, `${what} ends inside the window`).toBeLessThanOrEqual(vp.width);
  expect(box!.y + box!.height, `${what} ends inside the window`).toBeLessThanOrEqual(vp.height);
}

test.describe("at 390 px", () => {
  test.use({ viewport: { width: 390, height: 844 } });

  test("the sidebar is a drawer: the menu button opens it over the chat, Escape and picking a conversation close it",
    scenario("chat-mobile-drawer"), async ({ page, api, shot }) => {
      const first = await ok(api.POST("/api/conversations", { body: { title: "Weather chores" } }));
      await page.goto("/");
      const nav = page.getByRole("navigation", { name: "Conversations" });
      const menu = page.getByRole("button", { name: "Conversations" });
      await expect(menu).toBeVisible();
      await expect(menu).toHaveAttribute("aria-expanded", "false");
      await expect(nav).toBeHidden();

      await menu.click();
      await expect(nav).toBeVisible();
      await expect(menu).toHaveAttribute("aria-expanded", "true");
      await expect(nav.getByRole("button", { name: "New chat" })).toBeFocused();
      // Over the chat, not beside it: the chat keeps the whole width under the drawer.
      await expect.poll(async () => (await nav.boundingBox())?.x, { message: "the drawer has slid in" }).toBe(0);
      const drawer = (await nav.boundingBox())!;
      const main = (await page.getByRole("region", { name: "Chat" }).boundingBox())!;
      expect(main.x).toBe(0);
      expect(main.width).toBeGreaterThan(380);
      expect(drawer.width).toBeLessThan(390);
      await shot("drawer-open");

      await page.keyboard.press("Escape");
      await expect(nav).toBeHidden();
      await expect(menu).toBeFocused();
      await expect(menu).toHaveAttribute("aria-expanded", "false");

      await menu.click();
      await nav.getByRole("link", { name: "Weather chores" }).click();
      await expect(page).toHaveURL(new RegExp(`/c/${first.id}$`));
      await expect(nav).toBeHidden();
      await expect(page.getByRole("heading", { level: 1, name: "Weather chores" })).toBeFocused();
    });

  test("the approval card shows the tool, its arguments and Approve together, without sideways scrolling",
    scenario("chat-mobile-card"), async ({ page, shot }) => {
      await page.goto("/");
      await send(page, oslo);
      const card = page.getByRole("article", { name: "Approval request: delete_forecast on demo" });
      await expect(card).toBeVisible();
      await expect(card.getByRole("button", { name: "Approve" })).toBeEnabled();
      await shot("card");
      await inWindow(page, card.getByRole("heading", { name: "delete_forecast on demo" }), "the tool's name");
      await inWindow(page, card.getByRole("region", { name: "Arguments" }), "the arguments");
      await expect(card.getByRole("region", { name: "Arguments" })).toContainText('"city": "Oslo"');
      await inWindow(page, card.getByRole("button", { name: "Approve" }), "the Approve button");
      const widths = await page.evaluate(() => ({
        page: document.documentElement.scrollWidth,
        window: document.documentElement.clientWidth,
        card: [...document.querySelectorAll(".approval-card, .approval-card *")].filter((e) => e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).overflowX !== "visible").length,
      }));
      expect(widths.page).toBeLessThanOrEqual(widths.window);
      expect(widths.card).toBe(0);
    });
});

slowTest("while an approved tool runs, the chat names it and counts the seconds; then says it ran",
  scenario("chat-running-tool"), async ({ page, shot }) => {
    await page.goto("/");
    await send(page, oslo);
    const card = page.getByRole("article", { name: "Approval request: delete_forecast on demo" });
    await card.getByRole("button", { name: "Approve" }).click();
    const status = page.getByRole("status").filter({ hasText: "Running delete_forecast…" });
    await expect(status).toBeVisible();
    await expect(status).toContainText(/Running delete_forecast… [1-9]\d* s/, { timeout: 3000 });
    await expect(page.getByText("The model is working…")).toHaveCount(0);
    await shot("running");
    await expect(page.getByText("delete_forecast ran: its result is below.")).toBeVisible({ timeout: 15000 });
    await expect(status).toHaveCount(0);
  });

slowTest("after Stop, the transcript says whether the approved tool ran, from what the server recorded",
  scenario("chat-stop-outcome"), async ({ page, api, shot }) => {
    await page.goto("/");
    await send(page, oslo);
    const card = page.getByRole("article", { name: "Approval request: delete_forecast on demo" });
    await card.getByRole("button", { name: "Approve" }).click();
    await expect(page.getByRole("status").filter({ hasText: "Running delete_forecast…" })).toBeVisible();
    await page.getByRole("button", { name: "Stop" }).click();
    await expect(page.getByText("Stopped.")).toBeVisible();
    // Offline every call passes Toolgate's MCP face, so Toolgate knows: Stop ended the turn before
    // the provider called the tool through the face, so it provably did not run (not "may have run").
    const outcome = page.getByText(/^delete_forecast did not run: Toolgate knows the call never reached its server/);
    await expect(outcome).toBeVisible();
    await expect(page.getByText("not run", { exact: true })).toBeVisible();
    await expect(page.getByText("may have run", { exact: true })).toHaveCount(0);
    await shot("stopped");
    const id = new URL(page.url()).pathname.split("/").pop()!;
    const tr = await ok(api.GET("/api/conversations/{conversationId}", { params: { path: { conversationId: id } } }));
    const approval = tr.items.find((i) => i.type === "mcp_approval_request")?.approval;
    expect(approval?.state).toBe("not_run");
    expect(approval?.call ?? null, "no call on it reached the face").toBeNull();
    expect(tr.items.some((i) => i.type === "mcp_call" && i.approval_request_id === approval?.approval_request_id)).toBe(false);
    // The same after a reload: it comes from the server, not from this page.
    await page.reload();
    await expect(outcome).toBeVisible();
  });

pacedTest("while a tool that runs without asking runs, the chat names it and counts the seconds",
  scenario("chat-auto-running-tool"), async ({ page, shot }) => {
    await page.goto("/");
    await send(page, forecast);
    const status = page.getByRole("status").filter({ hasText: "Running get_forecast…" });
    await expect(status).toBeVisible({ timeout: 20000 });
    await expect(status).toContainText(/Running get_forecast… [1-9]\d* s/, { timeout: 3000 });
    await expect(page.getByText("The model is working…")).toHaveCount(0);
    await shot("running");
    // Its result arrives: the call is in the transcript, and nothing is named running any more.
    await expect(page.getByText(/^ran without asking \(policy: Auto/)).toBeVisible({ timeout: 20000 });
    await expect(status).toHaveCount(0);
  });

pacedTest("after Stop while a tool that runs without asking runs, the transcript says it may have run",
  scenario("chat-stop-auto-tool"), async ({ page, api, shot }) => {
    await page.goto("/");
    await send(page, forecast);
    await expect(page.getByRole("status").filter({ hasText: "Running get_forecast…" })).toBeVisible({ timeout: 20000 });
    await page.getByRole("button", { name: "Stop" }).click();
    await expect(page.getByText("Stopped.")).toBeVisible();
    const mayHaveRun = page.getByText("get_forecast may have run: Toolgate stopped waiting before the provider reported its result.");
    await expect(mayHaveRun).toBeVisible();
    await expect(page.getByText("ok", { exact: true })).toHaveCount(0);
    await shot("stopped");
    const id = new URL(page.url()).pathname.split("/").pop()!;
    const tr = await ok(api.GET("/api/conversations/{conversationId}", { params: { path: { conversationId: id } } }));
    const calls = tr.items.filter((i) => i.type === "mcp_call");
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ name: "get_forecast", server_label: "demo", interrupted: true });
    // The same after a reload: it comes from the server, not from this page.
    await page.reload();
    await expect(mayHaveRun).toBeVisible();
  });
