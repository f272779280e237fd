// Argument rules in a turn, in the browser: a rule that approves runs the
// call with no card and the transcript names the rule; a rule that denies
// stops the call and the model is told which rule; when no rule holds the
// card appears and says how many rules were checked.
import { ok } from "./api";
import { expect, scenario, test } from "./fixtures";
import { ChatPage } from "./pages";

test("rules answer for the person: approve and deny without a card, the rest asks", scenario("rules-in-turn"),
  async ({ page, api, consoleErrors, shot }) => {
    await ok(api.PUT("/api/mcp/servers/{serverId}/tools/{toolName}/rules", {
      params: { path: { serverId: "demo", toolName: "delete_forecast" } },
      body: { rules: [
        { when: 'args.city in ["Oslo", "Sandbox"]', decision: "approve", reason: "test data" },
        { when: 'args.city == "Berlin"', decision: "deny", reason: "Berlin is production" },
      ] },
    }));
    await page.goto("/");
    const chat = new ChatPage(page);

    await chat.send('delete_forecast {"city": "Oslo"}');
    await chat.idle();
    await chat.answerContaining("Deleted the forecast for Oslo.");
    await page.getByText('approved by rule 1 (this tool\'s rules): args.city in ["Oslo", "Sandbox"] — test data', { exact: true }).waitFor();
    await expect(chat.card("delete_forecast"), "no card for a call a rule approved").toHaveCount(0);
    const call = page.locator(".tool-call").filter({ hasText: "delete_forecast" }).last();
    await call.getByText('approved by rule 1 (this tool\'s rules): args.city in ["Oslo", "Sandbox"]').waitFor();

    await chat.send('delete_forecast {"city": "Berlin"}');
    await chat.idle();
    await page.getByText('denied by rule 2 (this tool\'s rules): args.city == "Berlin" — Berlin is production', { exact: true }).waitFor();
    await expect(page.getByText("Deleted the forecast for Berlin."), "the denied call did not run").toHaveCount(0);
    await expect(chat.card("delete_forecast")).toHaveCount(0);

    await chat.send('delete_forecast {"city": "Lisbon"}');
    const card = chat.card("delete_forecast");
    await card.waitFor();
    await card.getByText("2 rules checked; none decided, so you decide.").waitFor();
    await shot("card-rules-checked");
    expect(consoleErrors).toEqual([]);
  });
