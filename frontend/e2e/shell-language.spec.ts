// The app's language: the browser's at first (German for a German browser),
// then the one picked in the user menu, kept across reloads.
import { expect, scenario, test } from "./fixtures";

test.use({ locale: "de-DE", signIn: false });

test("a German browser gets the German app; English from the user menu stays after a reload", scenario("shell-language"),
  async ({ page, toolgate, shot }) => {
    if (!toolgate.signInLink) throw new Error("toolgate printed no sign-in link:\n" + toolgate.log());
    await page.goto(toolgate.signInLink);
    const nav = page.getByRole("navigation", { name: "Hauptnavigation" });
    await expect(nav.getByRole("link", { name: "Tools & Richtlinien" })).toBeVisible();
    await expect(nav.getByRole("link", { name: "Audit-Protokoll" })).toBeVisible();
    await expect(page.locator("html")).toHaveAttribute("lang", "de");
    await expect(page.getByText("Offline-Demo (emuliertes Modell)")).toBeVisible();

    await page.getByRole("button", { name: /^Konto: / }).click();
    await expect(page.getByRole("link", { name: "API-Tokens" })).toBeVisible();
    await expect(page.getByRole("button", { name: "Abmelden" })).toBeVisible();
    await shot("german-menu");
    await page.getByRole("combobox", { name: "Sprache" }).selectOption({ label: "English" });

    const en = page.getByRole("navigation", { name: "Main" });
    await expect(en.getByRole("link", { name: "Tools & policies" })).toBeVisible();
    await expect(page.getByRole("button", { name: "Sign out" })).toBeVisible();
    await expect(page.locator("html")).toHaveAttribute("lang", "en");

    await page.reload();
    await expect(en.getByRole("link", { name: "Audit log" })).toBeVisible();
    await expect(page.getByRole("button", { name: /^Account: / })).toBeVisible();
    await expect(page.locator("html")).toHaveAttribute("lang", "en");
    expect(await page.evaluate(() => localStorage.getItem("toolgate.language"))).toBe("en");
  });
