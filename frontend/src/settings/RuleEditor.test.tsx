import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Rule } from "../api/types";
import { jsonResponse, mockFetch } from "../chat/testutil";
import { renderWithClient } from "../testing";
import { RuleEditor } from "./RuleEditor";
import { examples, sampleArgs } from "./rules";

const RULES = "/api/mcp/servers/demo/tools/delete_forecast/rules";
const schema = { type: "object", properties: { city: { type: "string" } }, required: ["city"] };

function renderEditor(admin = true) {
  return renderWithClient(<RuleEditor list={{ server: "demo", tool: "delete_forecast" }} name="delete_forecast" admin={admin} schema={schema} />);
}

// As the API answers (internal/rules): the message names the rule and the position, details.problem neither.
const invalid = (index: number, line: number, column: number, problem: string) => {
  const message = `rule ${index}: ${problem} (line ${line}, column ${column})`;
  return jsonResponse(400, {
    error: { code: "invalid_rule", message, fields: { [`rules[${index}].when`]: message },
      details: { rule_index: index, line, column, cel_message: problem, problem } },
  });
};

afterEach(() => vi.unstubAllGlobals());

describe("RuleEditor", () => {
  it("shows a refused rule's error at that rule, with line and column, and saves once it is fixed", async () => {
    const user = userEvent.setup();
    let saved: Rule[] = [{ when: "true", decision: "ask" }];
    const { calls } = mockFetch({
      [`GET ${RULES}`]: () => jsonResponse(200, { rules: saved }),
      [`PUT ${RULES}`]: ({ body }) => {
        const rs = (body as { rules: Rule[] }).rules;
        if (rs[1]?.when.endsWith("== ")) return invalid(1, 1, 14, "Syntax error: mismatched input");
        saved = rs;
        return jsonResponse(200, { rules: rs });
      },
    });
    renderEditor();
    await screen.findByRole("textbox", { name: "Rule 1: when (CEL expression)" });
    await user.click(screen.getByRole("button", { name: "Add rule" }));
    await user.type(screen.getByRole("textbox", { name: "Rule 2: when (CEL expression)" }), "args.city == ");
    await user.selectOptions(screen.getByRole("combobox", { name: "Rule 2: decision" }), "approve");
    await user.click(screen.getByRole("button", { name: "Save rules" }));

    const alert = await screen.findByRole("alert");
    // The rule is named once, by its number in the list, and so is the position.
    expect(alert).toHaveTextContent(/^Rule 2, line 1, column 14: Syntax error: mismatched input$/);
    // It sits in the second rule, whose expression says it is invalid; the first is untouched.
    const items = within(screen.getByRole("list", { name: "Rules for delete_forecast, in order" })).getAllByRole("listitem");
    expect(within(items[1]).getByRole("alert")).toBe(alert);
    expect(within(items[0]).queryByRole("alert")).toBeNull();
    const second = screen.getByRole("textbox", { name: "Rule 2: when (CEL expression)" });
    expect(second).toHaveAttribute("aria-invalid", "true");
    expect(second).toHaveAccessibleDescription(alert.textContent!);

    // Editing clears it; the fixed list saves.
    await user.type(second, '"Test"');
    expect(screen.queryByRole("alert")).toBeNull();
    await user.click(screen.getByRole("button", { name: "Save rules" }));
    await screen.findByText("Saved.");
    expect(calls.filter((c) => c.method === "PUT").at(-1)?.body).toEqual({
      rules: [{ when: "true", decision: "ask" }, { when: 'args.city == "Test"', decision: "approve" }],
    });
  }, 15_000); // typing key by key is slow on a loaded machine

  it("adds an example, reorders and removes rules", async () => {
    const user = userEvent.setup();
    const { calls } = mockFetch({
      [`GET ${RULES}`]: () => jsonResponse(200, { rules: [{ when: "true", decision: "ask" }] }),
      [`PUT ${RULES}`]: ({ body }) => jsonResponse(200, body),
    });
    renderEditor();
    await user.click(await screen.findByRole("button", { name: 'Add example rule: args.city in ["Test", "Sandbox"] → Approve' }));
    await user.click(screen.getByRole("button", { name: "Move rule 2 up" }));
    expect(screen.getByRole("textbox", { name: "Rule 1: when (CEL expression)" })).toHaveValue('args.city in ["Test", "Sandbox"]');
    await user.click(screen.getByRole("button", { name: "Remove rule 2" }));
    await user.click(screen.getByRole("button", { name: "Save rules" }));
    await screen.findByText("Saved.");
    expect(calls.find((c) => c.method === "PUT")?.body).toEqual({
      rules: [{ when: 'args.city in ["Test", "Sandbox"]', decision: "approve", reason: "test data only" }],
    });
  });

  it("a member reads the rules and may try them, but has nothing to edit or save", async () => {
    mockFetch({ [`GET ${RULES}`]: () => jsonResponse(200, { rules: [{ when: 'args.city == "Test"', decision: "approve", reason: "test" }] }) });
    renderEditor(false);
    await screen.findByText('args.city == "Test"');
    expect(screen.queryByRole("textbox", { name: /Rule 1/ })).toBeNull();
    expect(screen.queryByRole("button", { name: "Save rules" })).toBeNull();
    expect(screen.getByText("Only an admin can change rules.")).toBeInTheDocument();
    expect(screen.getByRole("button", { name: "Try it" })).toBeEnabled();
  });

  it("Try it shows the decision on the sample and what the rules would have done to recent requests", async () => {
    const user = userEvent.setup();
    const { calls } = mockFetch({
      [`GET ${RULES}`]: () => jsonResponse(200, { rules: [{ when: 'args.city in ["Test"]', decision: "approve" }] }),
      ["POST /api/rules/test"]: () => jsonResponse(200, { decision: "approve", rule_index: 0, error: null }),
      [`POST ${RULES}/try`]: () => jsonResponse(200, {
        total: 3, approved: 2, denied: 0, asked: 1, results: [
          { approval_request_id: "mcpr_1", conversation_id: "c", requested_at: "2026-11-21T12:00:00Z", requested_by: "ann@example.com",
            state: "pending", arguments: { city: "Test" }, redacted: [], decision: "approve", rule_index: 0, error: null },
          { approval_request_id: "mcpr_2", conversation_id: "c", requested_at: "2026-11-21T11:00:00Z", requested_by: "ann@example.com",
            state: "denied", arguments: { city: "Oslo" }, redacted: [], decision: "ask", rule_index: null, error: null },
          { approval_request_id: "mcpr_3", conversation_id: "c", requested_at: "2026-11-21T10:00:00Z", requested_by: "ann@example.com",
            state: "approved", arguments: { city: "Test" }, redacted: [], decision: "approve", rule_index: 0, error: null },
        ],
      }),
    });
    renderEditor();
    const sample = await screen.findByRole("textbox", { name: "Sample arguments (JSON)" });
    // Prefilled from the input schema.
    expect(JSON.parse((sample as HTMLTextAreaElement).value)).toEqual({ city: "" });
    await user.clear(sample);
    await user.type(sample, '{{"city": "Test"}');
    await user.click(screen.getByRole("button", { name: "Try it" }));

    await screen.findByText("Approve by rule 1", { selector: "strong" });
    expect(screen.getByText("would have approved 2 of the last 3")).toBeInTheDocument();
    const recent = within(screen.getByRole("list", { name: "Recent requests and what the rules would have decided" })).getAllByRole("listitem");
    expect(recent.map((li) => li.querySelector(".rule-recent-decision")?.textContent)).toEqual(
      ["Approve by rule 1", "Ask: no rule matched", "Approve by rule 1"]);
    expect(recent[1]).toHaveTextContent('{"city":"Oslo"}');
    expect(recent[1]).toHaveTextContent("was denied");
    const test = calls.find((c) => c.path === "/api/rules/test");
    expect(test?.body).toEqual({ rules: [{ when: 'args.city in ["Test"]', decision: "approve" }], args: { city: "Test" }, server: "demo", tool: "delete_forecast" });
    expect(calls.find((c) => c.path === `${RULES}/try`)?.body).toEqual({ rules: [{ when: 'args.city in ["Test"]', decision: "approve" }], limit: 10 });
  });

  it("Try it places a compile error at the rule, and refuses sample arguments that are not a JSON object", async () => {
    const user = userEvent.setup();
    mockFetch({
      [`GET ${RULES}`]: () => jsonResponse(200, { rules: [{ when: "true", decision: "ask" }, { when: "args.city ==", decision: "deny" }] }),
      ["POST /api/rules/test"]: () => invalid(1, 1, 13, "Syntax error"),
      [`POST ${RULES}/try`]: () => invalid(1, 1, 13, "Syntax error"),
    });
    renderEditor();
    const sample = await screen.findByRole("textbox", { name: "Sample arguments (JSON)" });
    await user.click(screen.getByRole("button", { name: "Try it" }));
    const items = within(screen.getByRole("list", { name: "Rules for delete_forecast, in order" })).getAllByRole("listitem");
    await waitFor(() => expect(within(items[1]).getByRole("alert")).toHaveTextContent("Rule 2, line 1, column 13"));

    await user.clear(sample);
    await user.type(sample, "[[1]"); // "[[" types one "["
    await user.click(screen.getByRole("button", { name: "Try it" }));
    expect(await screen.findByText(/must be a JSON object/)).toBeInTheDocument();
  });
});

describe("rule helpers", () => {
  it("samples and examples follow the input schema", () => {
    expect(sampleArgs({ properties: { city: { type: "string" }, n: { type: "integer" }, f: { type: "boolean", default: true }, x: {} } }))
      .toEqual({ city: "", n: 0, f: true, x: "" });
    expect(sampleArgs(undefined)).toEqual({});
    expect(examples({ properties: { message: { type: "string" } } }).map((r) => r.when))
      .toEqual(['args.message in ["Test", "Sandbox"]', 'args.message.startsWith("/etc/")', 'user.role == "admin"']);
    expect(examples().map((r) => r.when)[1]).toBe('args.path.startsWith("/etc/")');
  });
});
