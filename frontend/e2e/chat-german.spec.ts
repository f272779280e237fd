// The chat in German: a German browser gets the approval card, its buttons
// and the transcript's own words in German (the model's text is the
// emulator's, in English).
import { expect, scenario, test } from "./fixtures";

test.use({ locale: "de-DE", signIn: false });

test("a German browser approves a tool in German: Bestätigung erforderlich, Genehmigen, then the result",
  scenario("chat-german"), async ({ page, toolgate, shot, consoleErrors }) => {
    if (!toolgate.signInLink) throw new Error("toolgate printed no sign-in link:\n" + toolgate.log());
    const infoReads: string[] = [];
    page.on("request", (r) => { if (new URL(r.url()).pathname === "/api/info") infoReads.push(r.url()); });
    await page.goto(toolgate.signInLink);
    const box = page.getByRole("textbox", { name: "Nachricht" });
    await expect(box).toBeVisible();
    await expect(page.getByRole("heading", { name: "Chatten mit Tools – unter Ihrer Kontrolle" })).toBeVisible();
    await expect(page.getByRole("navigation", { name: "Unterhaltungen" }).getByRole("button", { name: "Neuer Chat" })).toBeVisible();

    await box.fill('delete_forecast {"city":"Oslo"}');
    await page.getByRole("button", { name: "Senden", exact: true }).click();
    const card = page.getByRole("article", { name: "Bestätigungsanfrage: delete_forecast auf demo" });
    await expect(card).toBeVisible();
    await expect(card).toContainText("Bestätigung erforderlich");
    await expect(card.getByRole("region", { name: "Argumente" })).toContainText('"city": "Oslo"');
    await card.getByRole("button", { name: "Weitere Genehmigungsoptionen" }).click();
    await expect(card.getByRole("menuitem", { name: "Für diese Unterhaltung genehmigen" })).toBeVisible();
    await expect(card.getByRole("menuitem", { name: "Für 1 Stunde genehmigen" })).toBeVisible();
    await page.keyboard.press("Escape");
    await expect(card.getByRole("button", { name: "Ablehnen", exact: true })).toBeEnabled();
    await expect(card).toContainText("Fragt nach, weil es nicht nur lesend ist.");
    await expect(page.getByText("1 wartet auf Bestätigung")).toBeVisible();
    await shot("card");

    await card.getByRole("button", { name: "Genehmigen" }).click();
    // The tool ran: its call, and the decision, in German words.
    await expect(page.getByText("genehmigt von demo@toolgate.local", { exact: true })).toBeVisible({ timeout: 15000 });
    // The decided card says it ran: in the stream's words until the transcript holds the face's
    // record of the call, then in the record's (which one shows first depends on timing).
    await expect(page.locator(".decided").first()).toContainText(
      /delete_forecast wurde ausgeführt: Das Ergebnis steht unten\.|Über Toolgate mit der Definition .* ausgeführt; erlaubt: von Ihnen genehmigt/);
    const call = page.locator(".tool-call").filter({ hasText: "delete_forecast" });
    await expect(call.getByText("ok")).toBeVisible();
    await call.locator("summary").click();
    // Offline the call runs through Toolgate's MCP face: its record's arguments and result.
    await expect(call.getByRole("heading", { name: "Argumente, mit denen es lief" })).toBeVisible();
    await expect(call.getByRole("heading", { name: "Ergebnis", exact: true })).toBeVisible();
    await expect(call).toContainText("Deleted the forecast for Oslo.");
    await expect(page.getByText(/Bestätigungsanfrage für delete_forecast auf demo:/)).toBeVisible();
    await expect(page.getByRole("button", { name: "Genehmigen" })).toHaveCount(0);
    // No English of the chat's own is left on the page.
    const main = page.getByRole("region", { name: "Chat" });
    for (const english of ["Approval needed", "Approve", "Deny", "approved by you", "Arguments", "Send", "Listed"]) {
      await expect(main.getByText(english, { exact: true })).toHaveCount(0);
    }
    await expect(main).toContainText("Tools von demo aufgelistet");
    await shot("approved");
    // The top bar and the chat share one read of /api/info.
    expect(infoReads).toHaveLength(1);
    expect(consoleErrors).toEqual([]);
  });
