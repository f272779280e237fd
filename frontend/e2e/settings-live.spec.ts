// Settings that stay current: two admins have the settings page open, each
// in a browser of their own. What one changes (a tool policy, a lock, a
// server default, a rule) shows on the other's page within a second,
// without a reload (GET /api/settings/events).
import { ok } from "./api";
import { expect, scenario, signInThroughLoginPage, test } from "./fixtures";
import { radio, SettingsPage } from "./pages";

const live = { timeout: 1_000 };

test("a change on one admin's settings page shows on another's within a second, without a reload", scenario("settings-live"),
  async ({ page, api, newPage, shot }) => {
    await ok(api.POST("/api/users", { body: { email: "second@toolgate.test", password: "second-admin-pw-1", role: "admin" } }));
    const otherPage = await newPage();
    await signInThroughLoginPage(otherPage, "second@toolgate.test", "second-admin-pw-1");

    const mine = new SettingsPage(page);
    const theirs = new SettingsPage(otherPage);
    await page.goto("/settings");
    // The stream is open (its headers came) before the first change.
    const streaming = otherPage.waitForResponse((r) => r.url().endsWith("/api/settings/events") && r.status() === 200);
    await otherPage.goto("/settings");
    await streaming;
    await expect(radio(mine.policy("delete_forecast"), "Use default")).toBeChecked();
    await expect(radio(theirs.policy("delete_forecast"), "Use default")).toBeChecked();
    // Open the other page's rule editor of delete_forecast, and mark the
    // page: a reload would lose the mark.
    await theirs.server("demo").getByRole("button", { name: "Rules for delete_forecast" }).click();
    const theirRules = otherPage.getByRole("group", { name: "Argument rules for delete_forecast" });
    await theirRules.getByText("No rules: the policy decides.").waitFor();
    await otherPage.evaluate(() => { (window as unknown as { notReloaded: boolean }).notReloaded = true; });

    // A tool policy.
    await mine.setPolicy("delete_forecast", "Blocked");
    await expect(radio(theirs.policy("delete_forecast"), "Blocked"), "the policy").toBeChecked(live);

    // A lock.
    const lock = (s: SettingsPage) => s.server("demo").getByRole("checkbox", { name: "Lock the policy for delete_forecast" });
    await lock(mine).click();
    await expect(lock(mine)).toBeChecked();
    await expect(lock(theirs), "the lock").toBeChecked(live);

    // A server default.
    const serverDefault = (s: SettingsPage) => s.server("demo").getByRole("radiogroup", { name: "Default for server demo" });
    await radio(serverDefault(mine), "Auto").click();
    await expect(radio(serverDefault(mine), "Auto")).toBeChecked();
    await expect(radio(serverDefault(theirs), "Auto"), "the server default").toBeChecked(live);

    // A rule.
    await mine.server("demo").getByRole("button", { name: "Rules for delete_forecast" }).click();
    const myRules = page.getByRole("group", { name: "Argument rules for delete_forecast" });
    await myRules.getByRole("button", { name: /^Add example rule: / }).first().click();
    await myRules.getByRole("button", { name: "Save rules" }).click();
    await expect(myRules.getByRole("button", { name: "Save rules" })).toBeDisabled();
    await expect(theirRules.getByRole("list", { name: "Rules for delete_forecast, in order" }).getByRole("listitem"), "the rule")
      .toHaveCount(1, live);

    expect(await otherPage.evaluate(() => (window as unknown as { notReloaded?: boolean }).notReloaded), "the other page was not reloaded")
      .toBe(true);
    await shot("other-admin", otherPage);
  });
