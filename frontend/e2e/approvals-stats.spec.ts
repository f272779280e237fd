// The Approvals page end to end: after real approvals in the chat (five
// of delete_forecast, approved every time; one of set_forecast, denied) and
// a call that ran without asking, an admin opens "Approvals" from the user
// menu, reads the counts the audit log holds, follows "Make it Auto?" to the
// tool's setting and sets it; the suggestion is then gone. At 390 px the
// page fits the width. Against the real binary, its Responses emulator and
// the demo MCP server.
import { ok, setPolicy } from "./api";
import { expect, scenario, test } from "./fixtures";
import { ChatPage, SettingsPage, overflow, radio } from "./pages";

test("an admin sees each tool's approvals and follows \"Make it Auto?\" to the tool's setting",
  scenario("approvals-stats"), async ({ page, api, consoleErrors, shot }) => {
    await setPolicy(api, "demo", "delete_forecast", "always");
    await setPolicy(api, "demo", "set_forecast", "always");
    await page.goto("/");
    const chat = new ChatPage(page);

    // Five approvals of delete_forecast, in one batch.
    const cities = ["Oslo", "Lisbon", "Rome", "Paris", "Vienna"];
    await chat.send(cities.map((c) => `delete_forecast {"city": "${c}"}`).join(" and "));
    const cards = chat.card("delete_forecast");
    await expect(cards).toHaveCount(5);
    for (let left = 5; left > 0; left--) {
      await cards.first().getByRole("button", { name: "Approve" }).click();
      await expect(cards).toHaveCount(left - 1);
    }
    await chat.answerContaining("Vienna"); // the demo knows few cities: the later ones fail, approved all the same
    await chat.idle();
    // One denial of set_forecast; get_forecast (read-only) runs without asking.
    await chat.send('set_forecast {"city": "Oslo", "summary": "Sunny", "temperature_c": 20}');
    await chat.card("set_forecast").getByRole("button", { name: "Deny", exact: true }).click();
    await chat.idle();
    await chat.send('get_forecast {"city": "Berlin"}');
    await chat.idle();

    await page.getByRole("button", { name: /^Account: / }).click();
    await page.getByRole("link", { name: "Approvals" }).click();
    await expect(page.getByRole("heading", { name: "Approvals" })).toBeVisible();
    await expect(page).toHaveURL(/\/approvals\/stats$/);
    const row = (tool: string) => page.getByRole("row", { name: new RegExp(`^${tool} demo`) });
    const cell = (tool: string, label: string) => row(tool).locator(`td[data-label="${label}"]`);
    await expect(cell("delete_forecast", "Asked")).toHaveText("5");
    await expect(cell("delete_forecast", "Approved")).toHaveText("5");
    await expect(cell("delete_forecast", "Denied")).toHaveText("0");
    await expect(cell("delete_forecast", "Approval rate")).toHaveText("100%");
    await expect(cell("delete_forecast", "Top deciders")).toHaveText("demo@toolgate.local (5)");
    await expect(cell("set_forecast", "Asked")).toHaveText("1");
    await expect(cell("set_forecast", "Denied")).toHaveText("1");
    await expect(cell("get_forecast", "Ran unasked")).toHaveText("1");
    await expect(row("set_forecast").getByRole("link")).toHaveCount(0);

    // The page's numbers are the API's, which count the audit log.
    const stats = await ok(api.GET("/api/approvals/stats"));
    const del = stats.tools.find((t) => t.tool_name === "delete_forecast");
    expect(del).toMatchObject({ asked: 5, approved: 5, suggest_auto: true, workspace_policy: "always" });
    const log = await ok(api.GET("/api/audit", { params: { query: { action: "approval.decide", limit: 500 } } }));
    expect(log.entries.filter((e) => e.tool_name === "delete_forecast" && (e.after as { state?: string }).state === "approved")).toHaveLength(5);

    const suggest = row("delete_forecast").getByRole("link", { name: "Make delete_forecast on demo Auto? Opens its setting" });
    await expect(row("delete_forecast")).toContainText("Approved every time it asked (5 times).");
    await shot("stats");

    // The link leads to the tool's setting, focused; set it to Auto there.
    await suggest.click();
    await expect(page).toHaveURL(/\/settings\?server=demo&tool=delete_forecast$/);
    const settings = new SettingsPage(page);
    await expect(radio(settings.policy("delete_forecast"), "Ask")).toBeFocused();
    await settings.setPolicy("delete_forecast", "Auto");
    await page.goBack();
    await expect(page.getByRole("heading", { name: "Approvals" })).toBeVisible();
    await expect(row("delete_forecast")).toContainText("now: Auto");
    await expect(row("delete_forecast").getByRole("link")).toHaveCount(0);

    // A phone-sized window: the page fits the width.
    await page.setViewportSize({ width: 390, height: 844 });
    await expect(cell("delete_forecast", "Asked")).toBeVisible();
    expect(await overflow(page, ".stats-page, .stats-page *")).toEqual([]);
    await shot("stats-390");
    expect(consoleErrors).toEqual([]);
  });
