// Approvals end to end: policies set in settings, approval cards in the chat,
// decisions relayed upstream, and the chat's streaming, stop, retry and
// conversation list, against the real binary, its Responses emulator and the
// demo MCP server.
import { setPolicy, tools } from "./api";
import { expect, scenario, test } from "./fixtures";
import { ChatPage, radio, SettingsPage } from "./pages";

test("set a tool to Ask, approve its request with remember: the output appears and my own policy is Auto",
  scenario("approve-remember"), async ({ page, consoleErrors, shot }) => {
    await page.goto("/");
    const settings = new SettingsPage(page);
    const chat = new ChatPage(page);

    await settings.open();
    await settings.setPolicy("delete_forecast", "Ask");

    await chat.open();
    await chat.send('delete_forecast {"city": "Oslo"}');
    const card = chat.card("delete_forecast");
    await card.waitFor();
    await expect(card.getByText('"city": "Oslo"'), "the card shows the arguments").toBeVisible();
    await card.getByText(/destructive/i).first().waitFor();
    await card.getByRole("button", { name: "More approval choices" }).click();
    await shot("card");
    await card.getByRole("menuitem", { name: "Approve always (remember)" }).click();

    await chat.answerContaining("Deleted the forecast for Oslo.");
    await chat.idle();
    await page.getByText("approved by demo@toolgate.local", { exact: true }).waitFor();
    expect(await chat.openCall("delete_forecast"), "the call shows its output").toMatch(/Deleted the forecast for Oslo\./);
    await expect(chat.card("delete_forecast"), "no card is left pending").toHaveCount(0);

    await settings.open();
    // "Remember" is personal: it sets my own policy to Auto; the workspace's Ask stays for everyone else.
    await expect(radio(settings.mine("delete_forecast"), "Auto"), "the remembered approval set my own policy to Auto").toBeChecked();
    await expect(radio(settings.policy("delete_forecast"), "Ask"), "the workspace policy is still Ask").toBeChecked();
    expect(consoleErrors).toEqual([]);
  });

test("deny with a reason: the tool does not run and the model is told why", scenario("deny-with-reason"), async ({ page, api }) => {
  await setPolicy(api, "demo", "delete_forecast", "always");
  await page.goto("/");
  const chat = new ChatPage(page);
  await chat.send('delete_forecast {"city": "Berlin"}');
  const card = chat.card("delete_forecast");
  await card.getByRole("textbox", { name: "Reason (optional, sent to the model)" }).fill("keep Berlin");
  await card.getByRole("button", { name: "Deny", exact: true }).click();
  await chat.idle();
  await page.getByText("denied by demo@toolgate.local: keep Berlin", { exact: true }).waitFor();
  await expect(page.getByText("Deleted the forecast for Berlin."), "the tool did not run").toHaveCount(0);

  // What a person would check: Berlin's forecast is still there.
  await chat.send('get_forecast {"city": "Berlin"}');
  await chat.idle();
  await chat.answerContaining("Light rain clearing by evening");

  // get_forecast ran without asking; its "change" link leads to its policy.
  const call = page.locator(".tool-call").filter({ hasText: "get_forecast" }).last();
  await call.getByText("ran without asking (policy: Auto, global default)").waitFor();
  await call.getByRole("link", { name: "change" }).click();
  await page.waitForURL(/\/settings\?server=demo&tool=get_forecast/);
  await page.waitForFunction(() => document.activeElement?.closest("[role=radiogroup]")?.getAttribute("aria-label") === "Policy for get_forecast",
    null, { timeout: 5000 });
});

test("two approvals in one turn: both cards, each decided, then one continuation", scenario("two-approvals"), async ({ page, api, shot }) => {
  await setPolicy(api, "demo", "delete_forecast", "always");
  await setPolicy(api, "demo", "send_alert", "always");
  await page.goto("/");
  const chat = new ChatPage(page);
  await chat.send('delete_forecast {"city": "Lisbon"} then send_alert {"city": "Berlin", "message": "storm"}');
  const del = chat.card("delete_forecast");
  const alert = chat.card("send_alert");
  await del.waitFor();
  await alert.waitFor();
  await chat.idle();
  await shot("cards");

  await del.getByRole("button", { name: "Approve" }).click();
  await page.getByText(/1 of 2/).first().waitFor();
  await expect(page.getByText("Deleted the forecast for Lisbon."), "nothing runs before both are decided").toHaveCount(0);

  await alert.getByRole("textbox", { name: "Reason (optional, sent to the model)" }).fill("no alerts today");
  await alert.getByRole("button", { name: "Deny", exact: true }).click();
  await chat.answerContaining("Deleted the forecast for Lisbon.");
  await chat.idle();
  await expect(chat.answers(), "one continuation answered both decisions").toHaveCount(1);
  await page.getByText("denied by demo@toolgate.local: no alerts today", { exact: true }).waitFor();
  await expect(page.getByText(/Sent a weather alert/), "the denied tool did not run").toHaveCount(0);
});

test("a reload brings a pending card back, and it can still be decided", scenario("reload-pending"), async ({ page, api }) => {
  await setPolicy(api, "demo", "delete_forecast", "always");
  await page.goto("/");
  const chat = new ChatPage(page);
  await chat.send('delete_forecast {"city": "Oslo"}');
  await chat.card("delete_forecast").waitFor();
  await chat.idle();
  await page.waitForURL(/\/c\/conv_/);

  await page.reload();
  const card = chat.card("delete_forecast");
  await card.waitFor();
  await card.getByRole("button", { name: "Approve" }).click();
  await chat.answerContaining("Deleted the forecast for Oslo.");
  await chat.idle();
});

test("a blocked tool is never offered to the model", scenario("blocked-never-offered"), async ({ page }) => {
  await page.goto("/");
  const settings = new SettingsPage(page);
  const chat = new ChatPage(page);
  await settings.open();
  await settings.setPolicy("delete_forecast", "Blocked");

  await chat.open();
  await chat.send('delete_forecast {"city": "Oslo"}');
  await chat.idle();
  // The emulated model calls any tool it is offered and names; offered
  // nothing by that name, it answers with the tools it has.
  await page.getByText(/get_forecast/).last().waitFor();
  await expect(chat.card("delete_forecast"), "no approval card").toHaveCount(0);
  await expect(page.getByText("Deleted the forecast for Oslo."), "the tool did not run").toHaveCount(0);
  const answer = await chat.answers().last().innerText();
  const offered = /Tools available: (.*)/.exec(answer)?.[1];
  expect(offered, `the answer lists the tools on offer: ${answer}`).toContain("demo.get_forecast");
  expect(offered, "the model was not offered delete_forecast").not.toMatch(/delete_forecast/);
});

test("a newcomer registers an MCP server with a secret header, sets a policy and uses it",
  scenario("register-server"), async ({ page, demoMCP }) => {
    const token = "e2e-token-9f8e7d6c5b4a";
    const mcp = await demoMCP(token);
    await page.goto("/settings");
    await page.getByRole("button", { name: "Add server" }).click();
    // The server form (Settings also has a webhook form with its own URL field further down).
    const form = page.locator("form").filter({ has: page.getByRole("textbox", { name: "Label", exact: true }) });
    await form.getByRole("textbox", { name: "Label", exact: true }).fill("weather");
    await form.getByRole("textbox", { name: "URL", exact: true }).fill(mcp.url);
    await form.getByRole("textbox", { name: "Description", exact: true }).fill("Forecasts, with a token");
    await form.getByRole("button", { name: /Add header/ }).click();
    await form.getByRole("textbox", { name: "Header name" }).first().fill("Authorization");
    await form.getByLabel("Header value").first().fill("Bearer " + token);
    await form.getByRole("button", { name: /^(Add|Save|Create)/ }).last().click();

    const settings = new SettingsPage(page);
    const server = settings.server("weather");
    await server.waitFor();
    await server.getByText(/6 tools/).waitFor();
    await expect(page.getByText(token), "the token is never shown").toHaveCount(0);

    await settings.setPolicy("set_forecast", "Ask", "weather");
    const chat = new ChatPage(page);
    await chat.open();
    await chat.send('weather.set_forecast {"city": "Paris", "summary": "Clear skies", "temperature_c": 21}');
    const card = chat.card("set_forecast", "weather");
    await card.getByRole("button", { name: "Approve" }).click();
    await chat.idle();
    await chat.answerContaining("Paris");
    await chat.send('weather.get_forecast {"city": "Paris"}');
    await chat.idle();
    await chat.answerContaining("Clear skies");
  });

test("keyboard only: focus moves to the card, Tab reaches Approve, Enter approves", scenario("keyboard-only"), async ({ page, api }) => {
  await setPolicy(api, "demo", "delete_forecast", "always");
  await page.goto("/");
  const chat = new ChatPage(page);
  await chat.composer().focus();
  await page.keyboard.type('delete_forecast {"city": "Oslo"}');
  await page.keyboard.press("Enter");
  const card = chat.card("delete_forecast");
  await card.waitFor();
  await chat.idle();
  await page.waitForFunction(() => document.activeElement?.closest("article.approval-card") !== null, null, { timeout: 5000 });
  // The live region told a screen reader about it.
  await page.getByText("Approval needed: delete_forecast on demo").waitFor({ state: "attached" });
  let onApprove = false;
  for (let i = 0; i < 12 && !onApprove; i++) {
    await page.keyboard.press("Tab");
    onApprove = await page.evaluate(() => document.activeElement?.textContent?.trim() === "Approve");
  }
  expect(onApprove, "Tab reaches the Approve button from the card").toBe(true);
  await page.keyboard.press("Enter");
  await chat.answerContaining("Deleted the forecast for Oslo.");
  await chat.idle();
});

test("Stop ends a streaming answer; what arrived stays, marked as cut short", scenario("stop"), async ({ page }) => {
  await page.goto("/");
  const chat = new ChatPage(page);
  await chat.send("[emulator: event-delay=150ms, deltas=40] tell me about Toolgate");
  const stop = page.getByRole("button", { name: "Stop" });
  await stop.waitFor();
  await chat.answers().first().filter({ hasText: /\w+/ }).waitFor(); // some text streamed in
  await stop.click();
  await chat.idle();
  await page.getByText("Stopped.").waitFor();
  await page.getByText("cut short").first().waitFor();
  await expect(page.getByRole("button", { name: "Retry" }), "a stopped turn is not offered for retry").toHaveCount(0);
  // The conversation goes on.
  await chat.send("list_forecasts");
  await chat.answerContaining("Berlin");
});

test("an error shows inline with Retry, and Retry sends the message again", scenario("retry"), async ({ page }) => {
  await page.goto("/");
  const chat = new ChatPage(page);
  // The emulated provider answers 503 three times: the first attempt and
  // Toolgate's two automatic retries. The fourth request (Retry) is healthy.
  await chat.send("[emulator: status=503, times=3] list_forecasts");
  await chat.idle();
  const retry = page.getByRole("button", { name: "Retry" });
  await retry.waitFor({ timeout: 20000 });
  await page.getByText(/upstream_unavailable/).waitFor();
  await retry.click();
  await chat.answerContaining("Lisbon");
  await chat.idle();
  // The error goes once the transcript is read back after the retried turn.
  await retry.waitFor({ state: "detached", timeout: 5000 });
  await expect(page.getByRole("button", { name: "Retry" }), "the error is resolved").toHaveCount(0);
  await expect(page.locator(".msg.user"), "the message was not stored twice").toHaveCount(1);
});

test("a policy change is saved at once and survives a reload; one that fails to save rolls back with a message",
  scenario("policy-save-rollback"), async ({ page, api }) => {
    await page.goto("/settings");
    const settings = new SettingsPage(page);
    await settings.setPolicy("send_alert", "Ask");
    await page.reload();
    const group = settings.policy("send_alert");
    await expect(group.getByRole("radio", { name: "Ask" }), "Ask survived the reload").toBeChecked();

    // The next save fails on the way (the database is down, say).
    await page.route(/\/tools\/send_alert\/approval-policy(\?|$)/, (route) => route.fulfill({
      status: 503, contentType: "application/json",
      body: JSON.stringify({ error: { code: "database_unavailable", message: "the database is not reachable; try again shortly" } }),
    }));
    await group.getByRole("radio", { name: "Blocked" }).click(); // not check(): it does not stay checked
    await settings.statusNear(group).filter({ hasText: /Could not save: the database is not reachable/ }).waitFor();
    await expect(group.getByRole("radio", { name: "Ask" }), "the control rolled back to Ask").toBeChecked();
    const tool = (await tools(api, "demo")).find((t) => t.name === "send_alert");
    expect(tool?.policy, "the server still has Ask").toBe("always");
  });

test("conversations: new, switch, rename, delete; each transcript comes from the server", scenario("conversations"), async ({ page }) => {
  await page.goto("/");
  const chat = new ChatPage(page);
  const list = page.getByRole("navigation", { name: "Conversations" });
  await chat.send("hello there");
  await chat.idle();
  await page.waitForURL(/\/c\/conv_/);
  const first = page.url();

  await list.getByRole("button", { name: "New chat" }).click();
  await chat.send("list_forecasts");
  await chat.answerContaining("Lisbon");
  await chat.idle();
  await list.getByRole("link").nth(1).waitFor();
  await expect(list.getByRole("link")).toHaveCount(2);

  await list.getByRole("link", { name: /hello there/ }).click();
  await page.waitForURL(first);
  await page.locator(".msg.user", { hasText: "hello there" }).waitFor();
  await expect(page.locator(".msg.user", { hasText: "list_forecasts" }), "the other conversation's transcript is not shown").toHaveCount(0);

  await list.getByRole("button", { name: /^Rename hello there/ }).click();
  const title = list.getByRole("textbox", { name: /^New title for/ });
  await title.fill("Greetings");
  await title.press("Enter");
  await list.getByRole("link", { name: "Greetings" }).waitFor();
  await page.reload();
  await list.getByRole("link", { name: "Greetings" }).waitFor();

  await list.getByRole("button", { name: /^Delete list_forecasts/ }).click();
  await list.getByRole("group", { name: /^Delete list_forecasts/ }).getByRole("button", { name: "Delete", exact: true }).click();
  await list.getByRole("link", { name: /list_forecasts/ }).waitFor({ state: "detached" });
  await expect(list.getByRole("link")).toHaveCount(1);
});

test("a fresh install asks before a tool that is not read-only and says why; read-only tools run",
  scenario("safe-default"), async ({ page, shot }) => {
    const settings = new SettingsPage(page);
    await settings.open();
    const global = page.getByRole("radiogroup", { name: "Global default" });
    await expect(radio(global, "Ask unless read-only"), "the fresh-install default").toBeChecked();
    const row = page.locator("li", { has: page.getByRole("radiogroup", { name: "Policy for delete_forecast", exact: true }) });
    await row.getByText("asks because it is not read-only").waitFor();
    await shot("settings");

    const chat = new ChatPage(page);
    await chat.open();
    await chat.send('get_forecast {"city": "Oslo"}');
    await chat.idle();
    await expect(chat.card("get_forecast"), "a read-only tool runs without asking").toHaveCount(0);
    await chat.send('delete_forecast {"city": "Oslo"}');
    const card = chat.card("delete_forecast");
    await card.waitFor();
    await card.getByText("Asks because it is not read-only.").waitFor();
    await expect(page.getByText("Deleted the forecast for Oslo."), "nothing ran before the decision").toHaveCount(0);
  });
