// Argument rules in settings, end to end: the rule editor of demo's
// delete_forecast shows a CEL error at the rule it is about, saves once it
// is fixed, and its Try it panel evaluates the rules on sample arguments and
// on the tool's recent approval requests (one made by a chat turn first).
import { ok, setPolicy } from "./api";
import { expect, scenario, test } from "./fixtures";
import { ChatPage, SettingsPage } from "./pages";

test("rule editor: an error at its rule, fixed and saved; Try it on a sample and on recent requests",
  scenario("rules-editor"), async ({ page, api, consoleErrors, shot }) => {
    // A chat turn asks about delete_forecast first (before any rule exists,
    // so the request is a card whatever rules would decide).
    await setPolicy(api, "demo", "delete_forecast", "always");
    await page.goto("/");
    const chat = new ChatPage(page);
    await chat.send('delete_forecast {"city": "Test"}');
    await chat.card("delete_forecast").waitFor();

    const settings = new SettingsPage(page);
    await settings.open();
    await settings.server("demo").getByRole("button", { name: "Rules for delete_forecast" }).click();
    const editor = page.getByRole("group", { name: "Argument rules for delete_forecast" });
    await editor.getByText("No rules: the policy decides.").waitFor();

    // Rule 1 from the examples, rule 2 typed with a missing parenthesis.
    await editor.getByRole("button", { name: 'Add example rule: args.city in ["Test", "Sandbox"] → Approve' }).click();
    await editor.getByRole("button", { name: "Add rule" }).click();
    const second = editor.getByRole("textbox", { name: "Rule 2: when (CEL expression)" });
    await second.fill('args.city.startsWith("Ber"');
    await editor.getByRole("combobox", { name: "Rule 2: decision" }).selectOption("deny");
    await editor.getByRole("button", { name: "Save rules" }).click();

    const rules = editor.getByRole("list", { name: "Rules for delete_forecast, in order" }).getByRole("listitem");
    const error = rules.nth(1).getByRole("alert");
    await expect(error, "the error sits at rule 2 with its position").toContainText(/Rule 2, line 1, column \d+:/);
    // It names the rule, and the position, once.
    await expect(error).toHaveText(/^Rule 2, line 1, column \d+: Syntax error: /);
    await expect(error).not.toContainText(/rule \d|\(line \d/);
    await expect(second).toHaveAttribute("aria-invalid", "true");
    await expect(rules.nth(0).getByRole("alert"), "rule 1 has no error").toHaveCount(0);
    await shot("error-at-rule");

    await second.fill('args.city.startsWith("Ber")');
    await expect(error).toHaveCount(0);
    await editor.getByRole("button", { name: "Save rules" }).click();
    await editor.getByText("Saved.").waitFor();
    const saved = await ok(api.GET("/api/mcp/servers/{serverId}/tools/{toolName}/rules",
      { params: { path: { serverId: "demo", toolName: "delete_forecast" } } }));
    expect(saved.rules.map((r) => [r.when, r.decision])).toEqual([
      ['args.city in ["Test", "Sandbox"]', "approve"], ['args.city.startsWith("Ber")', "deny"]]);

    await editor.getByRole("textbox", { name: "Sample arguments (JSON)" }).fill('{"city": "Sandbox"}');
    await editor.getByRole("button", { name: "Try it" }).click();
    await expect(editor.getByText("On the sample:"), "the sample is decided by rule 1").toContainText("Approve by rule 1");
    await expect(editor.getByText("On recent requests:")).toContainText("would have approved 1 of 1 recent request");
    const recent = editor.getByRole("list", { name: "Recent requests and what the rules would have decided" }).getByRole("listitem");
    await expect(recent).toHaveCount(1);
    await expect(recent.first()).toContainText('{"city":"Test"}');
    await expect(recent.first()).toContainText("Approve by rule 1");
    await shot("try-it");
    // The refused save is a 400 the browser logs; nothing else may be.
    expect(consoleErrors.filter((m) => !/status of 400/.test(m))).toEqual([]);
  });
