// A phone-sized window (390 px): the top bar, the user menu and the account
// pages fit the width; nothing makes the page scroll sideways. In English and
// in German (longer words).
import { expect, scenario, test } from "./fixtures";
import { overflow } from "./pages";

test.use({ viewport: { width: 390, height: 844 } });

/** What each page reads before it shows (besides the shell's). */
const reads: Record<string, string[]> = {
  "/": ["/api/conversations"], "/settings": ["/api/mcp/servers", "/api/settings/events"], "/audit": ["/api/audit"],
  "/tokens": ["/api/tokens"], "/users": ["/api/users"], "/approvals/stats": ["/api/approvals/stats"],
};

const shellParts = ".topbar, .topbar > *, .topbar nav a, .user-menu-panel, .user-menu-panel *";

for (const lang of ["en", "de"] as const) {
  test(`at 390 px the shell and the account pages fit the width (${lang})`, scenario(`shell-mobile-${lang}`), async ({ page, shot }) => {
    await page.evaluate((l) => localStorage.setItem("toolgate.language", l), lang);
    const menu = lang === "en" ? /^Account: / : /^Konto: /;
    const found: Record<string, string[]> = {};
    for (const path of ["/", "/settings", "/audit", "/tokens", "/users", "/approvals/stats"]) {
      // Every page of the shell keeps the inbox's live stream open (GET /api/approvals/events), and the
      // settings page its own too, so the network never goes idle: a page has settled once what it
      // shows is read and the streams are open.
      const settled = Promise.all([...reads[path], "/api/approvals", "/api/approvals/events"]
        .map((u) => page.waitForResponse((r) => new URL(r.url()).pathname === u)));
      await page.goto(path);
      await page.getByRole("button", { name: menu }).waitFor();
      await settled;
      // The chat, settings and audit pages are their own; the shell's top bar must fit on each.
      found[path] = await overflow(page, ["/tokens", "/users", "/approvals/stats"].includes(path) ? `${shellParts}, .account-page, .account-page *` : shellParts);
    }
    await page.getByRole("button", { name: menu }).click();
    await page.locator(".user-menu-panel").waitFor();
    found["user menu open"] = await overflow(page, shellParts);
    await shot("menu");
    // The top bar keeps to two short rows: brand, model and menu; then the pages.
    expect((await page.locator(".topbar").boundingBox())!.height).toBeLessThan(110);

    await page.getByRole("button", { name: lang === "en" ? "Sign out" : "Abmelden" }).click();
    await page.getByRole("heading", { name: lang === "en" ? "Sign in to Toolgate" : "Bei Toolgate anmelden" }).waitFor();
    found["login"] = await overflow(page, ".auth-card, .auth-card *");
    expect(found).toEqual({ "/": [], "/settings": [], "/audit": [], "/tokens": [], "/users": [], "/approvals/stats": [], "user menu open": [], login: [] });
  });
}
