// A phone-sized window (390 px): the top bar, the user menu and the account
// pages fit the width; nothing makes the page scroll sideways. In English and
// in German (longer words).
import { expect, scenario, test } from "./fixtures";
import { overflow } from "./pages";

test.use({ viewport: { width: 390, height: 844 } });

const shellParts = ".topbar, .topbar > *, .topbar nav a, .user-menu-panel, .user-menu-panel *";

for (const lang of ["en", "de"] as const) {
  test(`at 390 px the shell and the account pages fit the width (${lang})`, scenario(`shell-mobile-${lang}`), async ({ page, shot }) => {
    await page.evaluate((l) => localStorage.setItem("toolgate.language", l), lang);
    const menu = lang === "en" ? /^Account: / : /^Konto: /;
    const found: Record<string, string[]> = {};
    for (const path of ["/", "/settings", "/audit", "/tokens", "/users", "/approvals/stats"]) {
      // The settings page keeps its live stream open (GET /api/settings/events), so the
      // network never goes idle there: it has settled once its servers are read and the stream is open.
      const settled = path === "/settings"
        ? Promise.all(["/api/mcp/servers", "/api/settings/events"].map((u) => page.waitForResponse((r) => new URL(r.url()).pathname === u)))
        : null;
      await page.goto(path);
      await page.getByRole("button", { name: menu }).waitFor();
      if (settled) await settled;
      else await page.waitForLoadState("networkidle");
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
