// The approval card on a phone (390 × 844) and on a desktop: the tool, its
// arguments and every button lie inside the window, whole (no label cut
// off) and on top (the point at the centre of each is the element itself,
// not the composer or another button); the Approve and Deny menus open in
// view, never under the composer or past an edge (DecisionMenu places them
// with Floating UI). In English and in German (longer labels).
import type { Locator, Page } from "@playwright/test";
import { setPolicy } from "./api";
import { expect, scenario, test } from "./fixtures";
import { ChatPage } from "./pages";

/** What is wrong with where el is shown, if anything: outside the window, under the composer, covered, or its text cut off. */
async function placement(loc: Locator, what: string): Promise<string[]> {
  return loc.evaluate((el, what) => {
    const out: string[] = [];
    const r = el.getBoundingClientRect();
    const composer = document.querySelector(".composer")!.getBoundingClientRect();
    const W = document.documentElement.clientWidth, H = window.innerHeight;
    const box = `${Math.round(r.left)},${Math.round(r.top)}–${Math.round(r.right)},${Math.round(r.bottom)}`;
    if (r.width === 0 || r.height === 0) return [`${what} is not shown`];
    if (r.left < -0.5 || r.right > W + 0.5) out.push(`${what} (${box}) sticks out of the ${W}px wide window`);
    if (r.top < -0.5 || r.bottom > H + 0.5) out.push(`${what} (${box}) is outside the window's height ${H}px`);
    if (r.bottom > composer.top + 0.5) out.push(`${what} (${box}) reaches under the composer (top ${Math.round(composer.top)})`);
    if (el.scrollWidth > el.clientWidth + 1) out.push(`${what}: its content is ${el.scrollWidth}px wide in ${el.clientWidth}px (cut off)`);
    const x = r.left + r.width / 2, y = r.top + r.height / 2;
    const hit = document.elementFromPoint(x, y);
    if (!hit || !(el === hit || el.contains(hit))) {
      out.push(`${what}: at its centre (${Math.round(x)},${Math.round(y)}) is ${hit ? `${hit.tagName.toLowerCase()}.${hit.className}` : "nothing"}`);
    }
    return out;
  }, what);
}

/** The card's tool, arguments and every button. */
async function cardProblems(card: Locator): Promise<string[]> {
  const out: string[] = [];
  out.push(...await placement(card.locator(".approval-tool"), "the tool name"));
  out.push(...await placement(card.locator(".approval-args .json-view"), "the arguments"));
  const buttons = card.locator(".approval-actions button");
  expect(await buttons.count(), "Approve, its ▾, Deny, its ▾, Deny with correction").toBe(5);
  for (const b of await buttons.all()) {
    out.push(...await placement(b, `button "${(await b.getAttribute("aria-label")) ?? (await b.innerText())}"`));
  }
  return out;
}

/** Opens the card's nth menu (0: Approve, 1: Deny) and returns what is wrong with its items' places. */
async function menuProblems(page: Page, card: Locator, n: number): Promise<string[]> {
  await card.locator(".split-toggle").nth(n).click();
  const menu = page.getByRole("menu");
  await menu.waitFor();
  // Floating UI places the menu in the next frame.
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
  const out = await placement(menu, "the menu");
  for (const item of await menu.getByRole("menuitem").all()) {
    // An admin's Approve menu (with "every tool of demo" and "everything") can be taller than a phone's room: it
    // scrolls, as moving through it with the keyboard does; each item is judged where it shows then.
    await item.evaluate((el) => el.scrollIntoView({ block: "nearest" }));
    out.push(...await placement(item, `menu item "${(await item.locator(".menu-label").innerText())}"`));
  }
  await page.keyboard.press("Escape");
  await expect(menu).toHaveCount(0);
  return out;
}

const request = 'set_forecast {"city": "Oslo", "summary": "Heavy snow in the morning, clearing by the afternoon with strong northerly winds", "temperature_c": -4}';

for (const lang of ["en", "de"] as const) {
  test.describe(`at 390 px (${lang})`, () => {
    test.use({ viewport: { width: 390, height: 844 } });
    test(`the approval card shows its tool, arguments and every button whole, and its menus open above the composer (${lang})`,
      scenario(`card-mobile-${lang}`), async ({ page, api, shot }) => {
        await setPolicy(api, "demo", "set_forecast", "always");
        await page.goto("/");
        await page.evaluate((l) => localStorage.setItem("toolgate.language", l), lang);
        await page.reload();
        await page.locator(".composer textarea").fill(request);
        await page.locator(".composer textarea").press("Enter");
        const card = page.locator(".approval-card");
        await card.waitFor();
        await expect(card.locator(".approval-tool")).toHaveText("set_forecast");
        await shot("card");
        expect(await cardProblems(card), "the card as it first shows").toEqual([]);
        const approve = await menuProblems(page, card, 0);
        await card.locator(".split-toggle").first().click();
        await shot("approve-menu");
        await page.keyboard.press("Escape");
        expect(approve, "the Approve menu").toEqual([]);
        expect(await menuProblems(page, card, 1), "the Deny menu").toEqual([]);
      });
  });
}

test("at 1280 px the Approve and Deny menus of a card at the bottom of the chat open in view", scenario("card-desktop-menus"),
  async ({ page, api, shot }) => {
    await setPolicy(api, "demo", "set_forecast", "always");
    await page.goto("/");
    const chat = new ChatPage(page);
    await chat.send(request);
    const card = chat.card("set_forecast");
    await card.waitFor();
    expect(await cardProblems(card), "the card").toEqual([]);
    const approve = await menuProblems(page, card, 0);
    await card.getByRole("button", { name: "More approval choices" }).click();
    await shot("approve-menu");
    await page.keyboard.press("Escape");
    expect(approve, "the Approve menu").toEqual([]);
    expect(await menuProblems(page, card, 1), "the Deny menu").toEqual([]);
  });
