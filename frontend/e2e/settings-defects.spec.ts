// Defects of the settings and audit pages, each pinned by a test that failed
// before its fix: arrow keys in a policy control saving every option they
// passed (Use default → Auto → Ask → Blocked: three saves, the tool briefly
// Auto), and the audit log and the settings page cut off on a phone.
import type { Page } from "@playwright/test";
import { ok, setPolicy } from "./api";
import { expect, scenario, test } from "./fixtures";
import { overflow, radio, SettingsPage } from "./pages";

test("arrow keys in a policy control move without saving; only the option chosen is saved", scenario("policy-arrow-keys"),
  async ({ page, api }) => {
    await page.goto("/settings");
    const settings = new SettingsPage(page);
    const group = settings.policy("get_forecast");
    await expect(radio(group, "Use default")).toBeChecked();

    // Every write to a policy, as the browser sends it.
    const writes: string[] = [];
    page.on("request", (r) => {
      if (/\/approval-polic/.test(r.url()) && r.method() !== "GET") writes.push(`${r.method()} ${r.postData() ?? ""}`);
    });

    // From Use default, three steps right (wrapping): Auto, Ask, Blocked. A
    // person takes their time; a save in flight would show as busy.
    await radio(group, "Use default").focus();
    for (const passing of ["Auto", "Ask", "Blocked"]) {
      await page.keyboard.press("ArrowRight");
      await page.waitForTimeout(300);
      await expect(group).not.toHaveAttribute("aria-busy", "true");
      await expect(radio(group, passing), `${passing} has the focus`).toBeFocused();
    }
    expect(writes, "moving saved nothing").toEqual([]);
    await expect(radio(group, "Use default")).toBeChecked();

    await page.keyboard.press("Enter");
    await settings.savedNear(group);
    await expect(radio(group, "Blocked")).toBeChecked();
    expect(writes).toEqual(['PUT {"policy":"blocked","locked":false}']);

    // The server never held Auto or Ask: one policy change, to Blocked.
    const audit = await ok(api.GET("/api/audit", { params: { query: { action: "policy.set" } } }));
    expect(audit.entries.filter((e) => e.tool_name === "get_forecast").map((e) => e.after?.policy)).toEqual(["blocked"]);
  });

/** Elements whose own content is wider than their box (cut off or scrolling sideways); not the 1 px boxes kept for screen readers. */
async function clipped(page: Page, selector: string): Promise<string[]> {
  return page.evaluate((sel) => [...document.querySelectorAll(sel)]
    .filter((el) => el.clientWidth > 1 && el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).overflowX !== "visible")
    .map((el) => `${el.tagName.toLowerCase()}.${el.className} (${el.scrollWidth} > ${el.clientWidth})`), selector);
}

test.describe("at 390 px", () => {
  test.use({ viewport: { width: 390, height: 844 } });

  test("the audit log reflows: each entry a stacked card, nothing cut off", scenario("audit-mobile"), async ({ page, api, shot }) => {
    await setPolicy(api, "demo", "delete_forecast", "always");
    await setPolicy(api, "demo", "send_alert", "blocked", { locked: true });
    await ok(api.PATCH("/api/mcp/servers/{serverId}", {
      params: { path: { serverId: "demo" } },
      body: { description: "Weather forecasts for the whole team, with alerts sent to every subscriber of a city", default_policy: "always" },
    }));
    await ok(api.PUT("/api/settings", { body: { default_policy: "never", default_policy_locked: true } }));

    await page.goto("/audit");
    const table = page.getByRole("table");
    const rows = table.getByRole("row").filter({ has: page.getByRole("cell") });
    await expect(rows.first()).toBeVisible();
    expect(await rows.count()).toBeGreaterThanOrEqual(5);
    await shot("audit");

    expect(await overflow(page, ".audit-table, .audit-table *"), "nothing sticks out of the window").toEqual([]);
    expect(await clipped(page, ".audit-table, .audit-table *"), "nothing scrolls sideways or is cut off").toEqual([]);

    // Each entry is a card: when and who on top, what below at the card's full width.
    for (let i = 0; i < await rows.count(); i++) {
      const row = rows.nth(i);
      const box = (await row.boundingBox())!;
      const when = (await row.locator(".col-when").boundingBox())!;
      const what = (await row.locator(".col-what").boundingBox())!;
      expect(what.y, `entry ${i}: what is below when`).toBeGreaterThanOrEqual(when.y + when.height - 1);
      expect(what.width, `entry ${i}: what uses the card's width`).toBeGreaterThan(box.width * 0.8);
      await expect(row.locator(".col-who")).toBeVisible();
    }
  });

  test("the settings page fits: tool rows and their policy controls inside the window", scenario("settings-mobile"), async ({ page, shot }) => {
    await page.goto("/settings");
    const settings = new SettingsPage(page);
    const group = settings.policy("delete_forecast");
    await group.waitFor();
    await shot("settings");
    expect(await overflow(page, ".settings, .settings *"), "nothing sticks out of the window").toEqual([]);

    const width = page.viewportSize()!.width;
    for (const row of await page.locator(".tool-row").all()) {
      for (const control of await row.getByRole("radiogroup").all()) {
        const box = (await control.boundingBox())!;
        expect(box.x, "the control starts inside the window").toBeGreaterThanOrEqual(0);
        expect(box.x + box.width, "the control ends inside the window").toBeLessThanOrEqual(width);
        for (const option of await control.locator("label").all()) {
          const o = (await option.boundingBox())!;
          expect(o.width, "every option can be tapped").toBeGreaterThanOrEqual(40);
        }
      }
    }
    // And it works there: a tap chooses and saves.
    await radio(group, "Blocked").click();
    await settings.savedNear(group);
    await expect(radio(group, "Blocked")).toBeChecked();
  });
});
