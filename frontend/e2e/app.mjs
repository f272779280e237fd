// Page objects: how a person uses Toolgate's web app, by what they see
// (roles and accessible names), so the scenarios read like the steps.

/** The settings page ("Tools & policies"). */
export class SettingsPage {
  constructor(page) { this.page = page; }

  async open() {
    await this.page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Tools & policies" }).click();
    await this.page.getByRole("heading", { name: /MCP servers/i }).first().waitFor();
  }

  server(label) { return this.page.getByRole("region", { name: `Server ${label}` }); }

  policy(tool) { return this.page.getByRole("radiogroup", { name: `Policy for ${tool}` }); }

  /** Chooses Auto, Ask, Blocked or Use default for a tool and waits until it is saved. */
  async setPolicy(tool, choice) {
    const group = this.policy(tool);
    await group.getByRole("radio", { name: new RegExp(`^${choice}`) }).check();
    await this.savedNear(group);
  }

  async savedNear(group) {
    const row = group.locator("xpath=ancestor::*[@data-tool-row or self::li or self::tr][1]");
    await row.getByRole("status").filter({ hasText: /saved/i }).waitFor();
  }

  async checkedPolicy(tool) {
    const radios = this.policy(tool).getByRole("radio");
    const n = await radios.count();
    for (let i = 0; i < n; i++) {
      const r = radios.nth(i);
      if (await r.isChecked()) return (await r.getAttribute("aria-label")) ?? (await r.evaluate((el) => el.labels?.[0]?.textContent ?? ""));
    }
    return null;
  }
}

/** The chat page. */
export class ChatPage {
  constructor(page) { this.page = page; }

  async open() {
    await this.page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Chat" }).click();
    await this.composer().waitFor();
  }

  composer() { return this.page.getByRole("textbox", { name: "Message" }); }

  async send(text) {
    await this.composer().fill(text);
    await this.page.getByRole("button", { name: "Send" }).click();
  }

  /** Waits until no turn is streaming (the Stop button is gone). */
  async idle() {
    await this.page.getByRole("button", { name: "Stop" }).waitFor({ state: "hidden", timeout: 15000 });
  }

  card(tool, server = "demo") { return this.page.getByRole("article", { name: `Approval request: ${tool} on ${server}` }); }

  transcript() { return this.page.getByRole("log"); }
}
