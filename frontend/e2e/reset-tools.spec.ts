// "Reset this server's tools" on the settings page: the confirmation says
// how many workspace policies go, Cancel keeps them, Remove puts the
// server's tools back to the default (the person's own policies stay).
import { ok, setPolicy, tools } from "./api";
import { expect, scenario, test } from "./fixtures";
import { radio, SettingsPage } from "./pages";

test("an admin resets a server's tools from the settings page and they follow the default again", scenario("reset-server-tools"),
  async ({ page, api, shot }) => {
    await setPolicy(api, "demo", "delete_forecast", "blocked", { locked: true });
    await setPolicy(api, "demo", "send_alert", "never");
    await setPolicy(api, "demo", "set_forecast", "always");
    await setPolicy(api, "demo", "get_forecast", "blocked", { layer: "user" }); // the admin's own: not the workspace's

    await page.goto("/settings");
    const settings = new SettingsPage(page);
    const demo = settings.server("demo");
    await expect(radio(settings.policy("delete_forecast"), "Blocked")).toBeChecked();

    await demo.getByRole("button", { name: "Reset this server's tools" }).click();
    const confirm = demo.getByRole("group", { name: "Confirm resetting the tool policies of demo" });
    await expect(confirm).toContainText("Remove 3 tool policies of demo?");
    await confirm.getByRole("button", { name: "Cancel" }).click();
    await expect(confirm).toBeHidden();
    expect((await tools(api, "demo")).filter((x) => x.policy !== null).length, "Cancel removed nothing").toBe(3);

    await demo.getByRole("button", { name: "Reset this server's tools" }).click();
    await shot("confirm");
    await confirm.getByRole("button", { name: "Remove policies" }).click();
    await expect(demo.getByText("Removed 3 tool policies: delete_forecast, send_alert, set_forecast.")).toBeVisible();
    for (const name of ["delete_forecast", "send_alert", "set_forecast"]) {
      await expect(radio(settings.policy(name), "Use default"), `${name} back to the default`).toBeChecked();
    }
    await expect(demo.getByRole("button", { name: "Reset this server's tools" })).toBeDisabled();

    const after = await tools(api, "demo");
    expect(after.filter((x) => x.policy !== null).map((x) => x.name)).toEqual([]);
    expect(after.find((x) => x.name === "get_forecast")?.user_policy, "the admin's own policy stays").toBe("blocked");
    const audit = await ok(api.GET("/api/audit", { params: { query: { action: "policy.clear" } } }));
    expect(audit.entries.map((e) => e.before)).toEqual([
      { layer: "workspace", locked: ["delete_forecast"], policies: { delete_forecast: "blocked", send_alert: "never", set_forecast: "always" } },
    ]);
  });
