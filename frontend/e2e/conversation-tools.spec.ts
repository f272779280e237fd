// Per conversation, the person chooses which servers and tools are offered:
// a tool deselected in the chat's Tools control is not offered upstream, so
// the emulated model, told to call it, cannot; the same tool still runs in
// another conversation and once selected again.
import { ok } from "./api";
import { expect, scenario, test } from "./fixtures";
import { ChatPage, overflow } from "./pages";

test("deselect get_forecast before the first message: the turn runs without it, no call",
  scenario("conversation-tools"), async ({ page, api, consoleErrors, shot }) => {
    await page.goto("/");
    const chat = new ChatPage(page);
    await chat.composer().waitFor();

    // A new chat: the Tools control creates the conversation so the choice comes first.
    const tools = page.getByRole("button", { name: /^Tools/ });
    await tools.click();
    await page.waitForURL(/\/c\/conv_/);
    const panel = page.getByRole("group", { name: "Tools offered in this conversation" });
    const demo = panel.getByRole("group", { name: /demo/ });
    await expect(demo.getByText("6 of 6 tools")).toBeVisible();
    await demo.getByRole("checkbox", { name: /^get_forecast/ }).uncheck();
    await expect(demo.getByText("5 of 6 tools")).toBeVisible();
    await expect(tools, "the button shows the count too").toContainText("5 of 6 tools");
    await shot("panel");
    await page.keyboard.press("Escape");
    await expect(panel).toHaveCount(0);

    const convId = /conv_[0-9a-f]+/.exec(page.url())?.[0];
    expect(convId, "the conversation's id is in the address").toBeTruthy();
    const stored = await ok(api.GET("/api/conversations/{conversationId}/tools", { params: { path: { conversationId: convId! } } }));
    expect(stored.servers.demo?.tools, "the choice is stored with the conversation").not.toContain("get_forecast");

    await chat.send('get_forecast {"city": "Berlin"}');
    await chat.idle();
    // The emulated model lists the tools it was offered: get_forecast is not among them.
    await expect(chat.answers().last(), "the model was offered the other tools").toContainText("demo.list_forecasts");
    await expect(chat.answers().last(), "the model was not offered get_forecast").not.toContainText("demo.get_forecast");
    await expect(page.locator(".tool-call"), "no tool ran").toHaveCount(0);
    await expect(page.getByRole("article", { name: /Approval request/ }), "nothing asked").toHaveCount(0);
    await expect(page.getByText("Light rain clearing by evening"), "no forecast was read").toHaveCount(0);
    await shot("no-call");

    // Selected again: the next message runs it.
    await tools.click();
    await panel.getByRole("checkbox", { name: /^get_forecast/ }).check();
    await expect(tools).toContainText("6 of 6 tools");
    await page.keyboard.press("Escape");
    await chat.send('get_forecast {"city": "Berlin"}');
    await chat.idle();
    await chat.call("get_forecast").waitFor();
    await chat.answerContaining("Light rain clearing by evening");
    expect(consoleErrors).toEqual([]);
  });

test.describe("at 390 px", () => {
  test.use({ viewport: { width: 390, height: 800 } });
  test("the Tools control and its panel fit the width", scenario("conversation-tools-mobile"), async ({ page }) => {
    await page.goto("/");
    await new ChatPage(page).composer().waitFor();
    await page.getByRole("button", { name: /^Tools/ }).click();
    await page.getByRole("group", { name: "Tools offered in this conversation" }).getByRole("checkbox", { name: /^get_forecast/ }).waitFor();
    expect(await overflow(page, ".chat-header, .chat-header *, .tools-panel, .tools-panel *")).toEqual([]);
  });
});
