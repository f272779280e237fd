// Accessibility: axe-core finds no violations on any page of the app, in the
// states people use it in (an approval card pending, a tool call opened, the
// add-server form open, a new API token shown, the user menu open). Keyboard
// use is covered in approvals.spec.ts.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { Page } from "@playwright/test";
import { setPolicy } from "./api";
import { expect, scenario, test } from "./fixtures";
import { ChatPage } from "./pages";

const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

type Axe = { run: (ctx: Document, opts: object) => Promise<{ violations: { id: string; impact: string; help: string; nodes: { target: string[] }[] }[] }> };

/** Runs axe on the page as it is now; the page's CSP forbids injected script tags, so it is evaluated directly. */
async function violations(page: Page): Promise<string[]> {
  await page.evaluate(axeSource);
  return page.evaluate(async () =>
    (await (window as unknown as { axe: Axe }).axe.run(document, { resultTypes: ["violations"] })).violations.map((v) =>
      `${v.id} (${v.impact}): ${v.help} — ${v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join(", ")}`));
}

test("no axe violations on the chat, inbox, settings, audit, approvals, tokens, users and login pages", scenario("a11y"), async ({ page, api }) => {
  await setPolicy(api, "demo", "delete_forecast", "always");
  const found: Record<string, string[]> = {};
  await page.goto("/");
  const chat = new ChatPage(page);
  // Rendered, not just loaded: the app's first paint waits for who is signed in.
  await chat.composer().waitFor();
  found["empty chat"] = await violations(page);

  await chat.send('list_forecasts delete_forecast {"city": "Oslo", "api_token": "secret-123"}');
  await chat.card("delete_forecast").waitFor();
  await chat.idle();
  await chat.openCall("list_forecasts");
  found["chat with a card pending and a call open"] = await violations(page);
  await chat.card("delete_forecast").getByRole("button", { name: "More approval choices" }).click();
  await page.getByRole("menuitem", { name: "Approve once" }).waitFor();
  found["chat, the Approve menu open"] = await violations(page);
  await page.keyboard.press("Escape");
  await page.getByRole("button", { name: "Grants" }).click();
  await page.getByText("No grants: every tool that asks will ask.").waitFor();
  found["chat, the Grants popover open"] = await violations(page);
  await page.getByRole("button", { name: /^Tools/ }).click();
  await page.getByRole("group", { name: "Tools offered in this conversation" }).waitFor();
  found["chat with the Tools control open"] = await violations(page);
  await page.keyboard.press("Escape");

  // The inbox, with the same request waiting (the chat's card, and where it came from).
  await page.goto("/inbox");
  await page.getByRole("article", { name: "Approval request: delete_forecast on demo" }).waitFor();
  found["waiting for me, a request waiting"] = await violations(page);

  await page.goto("/settings");
  await page.getByRole("radiogroup", { name: "Policy for get_forecast", exact: true }).waitFor();
  found["settings"] = await violations(page);
  await page.getByRole("button", { name: "Add server" }).click();
  await page.getByRole("button", { name: /Add header/ }).click();
  found["settings, add-server form"] = await violations(page);
  await page.getByRole("button", { name: "Rules for delete_forecast" }).click();
  const rules = page.getByRole("group", { name: "Argument rules for delete_forecast" });
  await rules.getByRole("button", { name: "Add rule" }).click();
  await rules.getByRole("textbox", { name: "Rule 1: when (CEL expression)" }).fill("args.city ==");
  await rules.getByRole("button", { name: "Save rules" }).click();
  await rules.getByRole("alert").waitFor();
  found["settings, rule editor with an error"] = await violations(page);
  await rules.getByRole("textbox", { name: "Rule 1: when (CEL expression)" }).fill('args.city == "Oslo"');
  await rules.getByRole("button", { name: "Try it" }).click();
  await rules.getByText("On recent requests:").waitFor();
  found["settings, rule editor's Try it results"] = await violations(page);

  await page.goto("/audit");
  await page.getByRole("table").waitFor();
  found["audit log"] = await violations(page);

  await page.goto("/tokens");
  await page.getByRole("textbox", { name: "Token name" }).fill("a11y");
  await page.getByRole("button", { name: "Create token" }).click();
  await page.getByRole("region", { name: "New token a11y" }).waitFor();
  found["tokens, a new token shown"] = await violations(page);

  await page.goto("/users");
  await page.getByRole("table").waitFor();
  found["users"] = await violations(page);

  await page.goto("/grants");
  await page.getByText("You have no grants.").waitFor();
  found["my grants"] = await violations(page);

  await page.goto("/approvals/stats");
  await page.getByText(/^From .* to .*\.$/).waitFor();
  found["approvals"] = await violations(page);

  await page.getByRole("button", { name: /^Account: / }).click();
  found["user menu open"] = await violations(page);
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.getByRole("heading", { name: "Sign in to Toolgate" }).waitFor();
  found["login"] = await violations(page);

  expect(found).toEqual(Object.fromEntries(Object.keys(found).map((k) => [k, []])));
});
