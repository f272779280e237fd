// Grants end to end: "Approve for this conversation" on one of two cards of
// the same tool settles both (one follow-up), the grant is listed in the
// chat's Grants popover and on My grants, revoking it makes the tool ask
// again, against the real binary, its Responses emulator and the demo MCP
// server.
import { setPolicy } from "./api";
import { expect, scenario, test } from "./fixtures";
import { ChatPage } from "./pages";

test("approve for this conversation on one of two cards settles both; the grant is listed, revoked, and the tool asks again",
  scenario("grants"), async ({ page, api, consoleErrors, shot }) => {
    await setPolicy(api, "demo", "delete_forecast", "always");
    await page.goto("/");
    const chat = new ChatPage(page);

    await chat.send('delete_forecast {"city": "Oslo"} and delete_forecast {"city": "Lisbon"}');
    const cards = chat.card("delete_forecast");
    await expect(cards, "two cards of the same tool").toHaveCount(2);
    const first = cards.first();
    await first.getByRole("button", { name: "More approval choices" }).click();
    // Once, conversation, 1 hour, always; and, for an admin, every tool of demo and everything.
    await expect(first.getByRole("menuitem")).toHaveCount(6);
    await shot("menu");
    await first.getByRole("menuitem", { name: "Approve for this conversation" }).click();

    await chat.answerContaining("Deleted the forecast for Oslo.");
    await chat.answerContaining("Deleted the forecast for Lisbon.");
    await chat.idle();
    await expect(cards, "no card is left pending").toHaveCount(0);
    await expect(page.locator(".decided-state", { hasText: /Covered by your grant for this conversation/ }), "the second says what settled it").toHaveCount(1);

    // Listed in the conversation's Grants popover.
    await page.getByRole("button", { name: "Grants" }).click();
    const panel = page.getByRole("region", { name: "Allowed without asking here" });
    await expect(panel.getByRole("listitem")).toHaveCount(1);
    await expect(panel.getByRole("listitem")).toContainText("delete_forecast");
    await expect(panel.getByRole("listitem")).toContainText("for this conversation");
    await shot("grants");

    // While it lasts, the tool runs without asking.
    await panel.getByRole("button", { name: "Close" }).click();
    await chat.send('delete_forecast {"city": "Berlin"}');
    await chat.answerContaining("Deleted the forecast for Berlin.");
    await chat.idle();
    await expect(cards).toHaveCount(0);

    // Revoked: the next turn asks again.
    await page.getByRole("button", { name: "Grants" }).click();
    await panel.getByRole("button", { name: "Revoke the grant for delete_forecast on demo" }).click();
    await expect(panel.getByRole("status")).toContainText("Revoked: delete_forecast asks again from the next message.");
    await expect(panel.getByRole("listitem")).toHaveCount(0);
    await panel.getByRole("button", { name: "Close" }).click();
    await chat.send('delete_forecast {"city": "Berlin"}');
    await expect(cards, "the tool asks again after the revoke").toHaveCount(1);

    // My grants lists it as revoked.
    await page.getByRole("button", { name: /Account/ }).click();
    await page.getByRole("link", { name: "My grants" }).click();
    await expect(page.getByRole("heading", { name: "My grants" })).toBeVisible();
    await expect(page.getByText("You have no grants.")).toBeVisible();
    await page.getByRole("checkbox", { name: "Show expired and revoked grants" }).check();
    const row = page.getByRole("row", { name: /delete_forecast/ });
    await expect(row).toContainText("revoked");
    await shot("my-grants");
    expect(consoleErrors).toEqual([]);
  });
