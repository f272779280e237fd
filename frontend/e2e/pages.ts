// Page objects: how a person uses Toolgate's web app, by what they see
// (roles and accessible names), so the tests read like the steps.
import { expect, type Locator, type Page } from "@playwright/test";

/** The settings page ("Tools & policies"). */
export class SettingsPage {
  constructor(readonly page: Page) {}

  async open(): Promise<void> {
    await this.page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Tools & policies" }).click();
    await this.page.getByRole("heading", { name: /MCP servers/i }).first().waitFor();
  }

  server(label: string): Locator { return this.page.getByRole("region", { name: `Server ${label}` }); }

  /** The workspace policy control (admins); exact, so "My policy for …" is not matched too. */
  policy(tool: string, server = "demo"): Locator {
    return this.server(server).getByRole("radiogroup", { name: `Policy for ${tool}`, exact: true });
  }

  /** The personal ("mine") policy control. */
  mine(tool: string, server = "demo"): Locator {
    return this.server(server).getByRole("radiogroup", { name: `My policy for ${tool}`, exact: true });
  }

  /** Chooses Auto, Ask, Blocked or Use default for a tool and waits until it is saved. */
  async setPolicy(tool: string, choice: string, server = "demo"): Promise<void> {
    const group = this.policy(tool, server);
    // Not .check(): the checked state comes from the query cache, updated
    // optimistically a task after the click (TanStack Query notifies React
    // on its next tick), so it is asserted with retries instead.
    const option = radio(group, choice);
    await option.click();
    await expect(option).toBeChecked();
    await this.savedNear(group);
  }

  /** The control's own status line says "Saved" (it rolls back and says why when saving fails). */
  async savedNear(group: Locator): Promise<void> {
    await this.statusNear(group).filter({ hasText: /^Saved$/ }).waitFor();
  }

  /** The status line of a policy control. */
  statusNear(group: Locator): Locator { return group.locator("xpath=..").getByRole("status"); }
}

/** The radio of a policy control, by the start of the option's name (Auto, Ask, Blocked, Use …). */
export function radio(group: Locator, name: string): Locator {
  return group.getByRole("radio", { name: new RegExp(`^${name}`) });
}

/** The chat page. */
export class ChatPage {
  constructor(readonly page: Page) {}

  async open(): Promise<void> {
    await this.page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Chat" }).click();
    await this.composer().waitFor();
  }

  composer(): Locator { return this.page.getByRole("textbox", { name: "Message" }); }

  async send(text: string): Promise<void> {
    await this.composer().fill(text);
    await this.page.getByRole("button", { name: "Send", exact: true }).click();
  }

  /** Waits until no turn is streaming (the Stop button is gone). */
  async idle(): Promise<void> {
    await this.page.getByRole("button", { name: "Stop" }).waitFor({ state: "hidden", timeout: 15000 });
  }

  card(tool: string, server = "demo"): Locator {
    return this.page.getByRole("article", { name: `Approval request: ${tool} on ${server}` });
  }

  /** The model's answers, in order. */
  answers(): Locator { return this.page.locator(".msg.assistant"); }

  /** Waits for an answer of the model that contains text. */
  async answerContaining(text: string): Promise<void> {
    await this.answers().filter({ hasText: text }).first().waitFor();
  }

  /** The transcript's entry of the last call of tool. */
  call(tool: string, server = "demo"): Locator {
    return this.page.locator(".tool-call")
      .filter({ has: this.page.locator(".call-server", { hasText: server }) })
      .filter({ has: this.page.locator("summary", { hasText: tool }) }).last();
  }

  /** Opens the transcript's entry of a tool call and returns its text (arguments, output or error). */
  async openCall(tool: string, server = "demo"): Promise<string> {
    const call = this.call(tool, server);
    await call.locator("summary").click();
    await call.locator(".call-output").first().waitFor();
    return call.innerText();
  }
}

/** Where something sticks out past either edge of the window, if anywhere (and whether the page scrolls sideways). */
export async function overflow(page: Page, selector: string): Promise<string[]> {
  return page.evaluate((sel) => {
    const width = document.documentElement.clientWidth;
    const out: string[] = [];
    if (document.documentElement.scrollWidth > width) out.push(`the page is ${document.documentElement.scrollWidth}px wide`);
    for (const el of document.querySelectorAll(sel)) {
      const r = el.getBoundingClientRect();
      if (r.width > 0 && (r.right > width + 0.5 || r.left < -0.5)) {
        out.push(`${el.tagName.toLowerCase()}.${el.className} "${(el.textContent ?? "").trim().slice(0, 30)}" spans ${Math.round(r.left)}–${Math.round(r.right)}px`);
      }
    }
    return out;
  }, selector);
}
