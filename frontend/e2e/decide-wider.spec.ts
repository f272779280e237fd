// Deciding wider from the card, end to end: an admin approves a
// delete_forecast card "for every tool of demo", confirms what changes, the
// call runs, the settings page shows demo's default as Auto, and the next
// call of another tool of demo (set_forecast, which asked before) runs
// without asking; against the real binary, its Responses emulator and the
// demo MCP server.
import { tools } from "./api";
import { expect, scenario, test } from "./fixtures";
import { ChatPage, radio, SettingsPage } from "./pages";

test("an admin approves every tool of the server from the card; the settings show it and the next tool runs without asking",
  scenario("decide-wider"), async ({ page, api, consoleErrors, shot }) => {
    const before = Object.fromEntries((await tools(api, "demo")).map((t) => [t.name, t.effective_policy]));
    expect(before.set_forecast, "set_forecast asks before").toBe("always");
    await page.goto("/");
    const chat = new ChatPage(page);

    await chat.send('delete_forecast {"city": "Oslo"}');
    const card = chat.card("delete_forecast");
    await expect(card).toHaveCount(1);
    await card.getByRole("button", { name: "More approval choices" }).click();
    await page.getByRole("menuitem", { name: /Approve for every tool of demo/ }).click();
    const confirm = card.getByRole("group", { name: "Confirm approving every tool of demo" });
    await expect(confirm).toContainText("The server's default policy becomes Auto.");
    await expect(confirm).toContainText("locked at Ask still asks");
    await shot("confirm");
    await confirm.getByRole("button", { name: "Approve and set demo to Auto" }).click();

    await chat.answerContaining("Deleted the forecast for Oslo.");
    await chat.idle();
    await expect(card).toHaveCount(0);

    const settings = new SettingsPage(page);
    await settings.open();
    const def = settings.server("demo").getByRole("radiogroup", { name: "Default for server demo" });
    await expect(radio(def, "Auto")).toBeChecked();
    await shot("settings");

    await chat.open();
    await chat.send('set_forecast {"city": "Rome", "summary": "Rain", "temperature_c": 12}');
    await chat.answerContaining("the forecast for Rome");
    await chat.idle();
    await expect(chat.card("set_forecast"), "set_forecast ran without asking").toHaveCount(0);
    expect(consoleErrors).toEqual([]);
  });
