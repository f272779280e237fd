// Deny with a correction end to end: the person changes an argument on the
// card and denies with it; the model (the binary's emulator) asks again
// with the corrected arguments; the new card says what changed; approved,
// the tool runs with the corrected argument.
import { setPolicy } from "./api";
import { expect, scenario, test } from "./fixtures";
import { ChatPage } from "./pages";

test("deny with a correction: the model asks again, the new card shows what changed, approved it runs with the correction",
  scenario("deny-with-correction"), async ({ page, api, consoleErrors, shot }) => {
    await setPolicy(api, "demo", "delete_forecast", "always");
    await page.goto("/");
    const chat = new ChatPage(page);
    await chat.send('delete_forecast {"city": "Oslo"}');
    const first = chat.card("delete_forecast");
    await first.waitFor();
    await chat.idle();

    await first.getByRole("textbox", { name: "Reason (optional, sent to the model)" }).fill("Oslo's forecast is still needed");
    await first.getByRole("button", { name: "Deny with correction…" }).click();
    const editor = first.getByRole("form", { name: "Deny with a correction" });
    const city = editor.getByRole("textbox", { name: /city/ });
    await expect(city, "the form is prefilled with the request's arguments").toHaveValue("Oslo");

    // A bad edit is caught on the card, before anything is sent.
    await city.fill("");
    await editor.getByRole("button", { name: "Deny with these arguments" }).click();
    await expect(city).toHaveAccessibleDescription(/Required by the tool/);

    await city.fill("Lisbon");
    await shot("editor");
    await editor.getByRole("button", { name: "Deny with these arguments" }).click();

    // The model asked again: a new card for the same tool, saying what changed.
    const again = chat.card("delete_forecast");
    const changes = again.getByRole("region", { name: "Changes since your correction" });
    await changes.waitFor();
    await expect(changes).toContainText("Changed since your correction:");
    await expect(changes).toContainText("It matches your correction.");
    await expect(changes.getByRole("listitem")).toHaveText(/city: "Oslo"\s*→\s*(to\s*)?"Lisbon"/);
    await expect(again.getByText('"city": "Lisbon"'), "the new card shows the corrected arguments").toBeVisible();
    await page.getByText(/denied by demo@toolgate\.local: Oslo's forecast is still needed/).waitFor();
    await page.getByText('Asked the model to use instead: city: "Lisbon"').waitFor();
    await chat.idle();
    await shot("changed");

    await again.getByRole("button", { name: "Approve" }).click();
    await chat.answerContaining("Deleted the forecast for Lisbon.");
    await chat.idle();
    expect(await chat.openCall("delete_forecast"), "the tool ran with the corrected argument").toMatch(/Deleted the forecast for Lisbon\./);

    // What a person would check: Oslo's forecast is still there.
    await chat.send('get_forecast {"city": "Oslo"}');
    await chat.idle();
    await chat.answerContaining("Overcast with snow showers");
    expect(consoleErrors).toEqual([]);
  });
