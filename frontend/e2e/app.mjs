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

  /** The workspace policy control (admins); exact, so "My policy for …" is not matched too. */
  policy(tool, server = "demo") { return this.server(server).getByRole("radiogroup", { name: `Policy for ${tool}`, exact: true }); }

  /** The personal ("mine") policy control. */
  mine(tool, server = "demo") { return this.server(server).getByRole("radiogroup", { name: `My policy for ${tool}`, exact: true }); }

  /** Chooses Auto, Ask, Blocked or Use default for a tool and waits until it is saved. */
  async setPolicy(tool, choice, server = "demo") {
    const group = this.policy(tool, server);
    await group.getByRole("radio", { name: new RegExp(`^${choice}`) }).check();
    await this.savedNear(group);
  }

  /** The control's own status line says "Saved" (it rolls back and says why when saving fails). */
  async savedNear(group) {
    await group.locator("xpath=..").getByRole("status").filter({ hasText: /^Saved$/ }).waitFor();
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
    await this.page.getByRole("button", { name: "Send", exact: true }).click();
  }

  /** Waits until no turn is streaming (the Stop button is gone). */
  async idle() {
    await this.page.getByRole("button", { name: "Stop" }).waitFor({ state: "hidden", timeout: 15000 });
  }

  card(tool, server = "demo") { return this.page.getByRole("article", { name: `Approval request: ${tool} on ${server}` }); }

  /** The model's answers, in order. */
  answers() { return this.page.locator(".msg.assistant"); }

  /** Waits for an answer of the model that contains text. */
  async answerContaining(text) {
    await this.answers().filter({ hasText: text }).first().waitFor();
  }

  /** Opens the transcript's entry of a tool call and returns its text (arguments, output or error). */
  async openCall(tool, server = "demo") {
    const call = this.page.locator(".tool-call")
      .filter({ has: this.page.locator(".call-server", { hasText: server }) })
      .filter({ has: this.page.locator("summary", { hasText: tool }) }).last();
    await call.locator("summary").click();
    await call.locator(".call-output").first().waitFor();
    return call.innerText();
  }
}
