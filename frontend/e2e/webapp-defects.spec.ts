// Smaller defects of the web app, each pinned by a test that failed before
// its fix: the correction editor opening below the bottom of the chat, the
// German policy control sticking out of its server card, and the audit log's
// WHO column cutting emails off.
import type { Locator } from "@playwright/test";
import { setPolicy } from "./api";
import { expect, scenario, test } from "./fixtures";
import { ChatPage } from "./pages";

/** Where el sticks out of box (its right or bottom edge past box's), if it does. */
async function outside(el: Locator, box: Locator): Promise<string | null> {
  const [r, b] = [await el.boundingBox(), await box.boundingBox()];
  if (!r || !b) return "not shown";
  if (r.x + r.width > b.x + b.width + 0.5) return `right edge ${Math.round(r.x + r.width)} past ${Math.round(b.x + b.width)}`;
  if (r.y + r.height > b.y + b.height + 0.5) return `bottom edge ${Math.round(r.y + r.height)} past ${Math.round(b.y + b.height)}`;
  if (r.y < b.y - 0.5) return `top edge ${Math.round(r.y)} above ${Math.round(b.y)}`;
  return null;
}

test("Deny with correction opens its editor in view, its send button on screen", scenario("correction-in-view"), async ({ page, api }) => {
  await setPolicy(api, "demo", "delete_forecast", "always");
  await page.goto("/");
  const chat = new ChatPage(page);
  await chat.send('delete_forecast {"city": "Oslo"}');
  const card = chat.card("delete_forecast");
  await card.waitFor();
  await card.getByRole("button", { name: "Deny with correction…" }).click();
  const send = card.getByRole("form", { name: "Deny with a correction" }).getByRole("button", { name: "Deny with these arguments" });
  await send.waitFor();
  // No scrolling by the test: what the person sees after the click.
  await expect.poll(() => outside(send, page.locator(".chat-scroll")), "the editor's send button lies inside the visible chat").toBeNull();
});

test("in German, the server default's policy control stays inside its server card", scenario("settings-german-fit"), async ({ page }) => {
  await page.goto("/");
  await page.evaluate(() => localStorage.setItem("toolgate.language", "de"));
  await page.goto("/settings");
  const card = page.locator(".server-card").first();
  await card.locator(".default-controls .policy-control").first().waitFor();
  const found: string[] = [];
  for (const c of await page.locator(".server-card .policy-control, .server-card .lock-toggle").all()) {
    const o = await outside(c, card);
    if (o) found.push(`${(await c.innerText()).replace(/\s+/g, " ").slice(0, 60)}: ${o}`);
  }
  expect(found).toEqual([]);
});

test("the audit log's WHO column shows the whole email", scenario("audit-who"), async ({ page, api }) => {
  await setPolicy(api, "demo", "delete_forecast", "always");
  await page.goto("/audit");
  const who = page.locator("td.col-who").first();
  await expect(who).toHaveText("demo@toolgate.local");
  const cut = await page.locator("td.col-who").evaluateAll((cells) =>
    cells.filter((c) => c.scrollWidth > c.clientWidth + 1).map((c) => `${c.textContent}: ${c.scrollWidth}px in ${c.clientWidth}px`));
  expect(cut, "no email is wider than its cell").toEqual([]);
});
