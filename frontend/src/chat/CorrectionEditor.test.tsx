import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import axe from "axe-core";
import { afterEach, describe, expect, it, vi } from "vitest";
import "../i18n";
import { renderWithClient } from "../testing";
import { ApprovalCard } from "./ApprovalCard";
import { CorrectionEditor } from "./CorrectionEditor";
import { CorrectsNote } from "./CorrectsNote";
import { fieldsFor, objectFrom, valuesFrom } from "./correctionForm";
import { approval, jsonResponse, mockFetch } from "./testutil";

afterEach(() => vi.unstubAllGlobals());

const schema = {
  type: "object",
  properties: {
    city: { type: "string", description: "the city name" },
    days: { type: "integer" },
    unit: { enum: ["c", "f"] },
    alert: { type: "boolean" },
    stops: { type: "array", items: { type: "string" } },
    api_token: { type: "string" },
  },
  required: ["city"],
};
const args = { city: "Paris", days: 2, unit: "c", alert: false, stops: ["a"], api_token: "[redacted]" };
const asking = approval("mcpr_1", "get_forecast", { arguments: args, redacted: ["api_token"] });

describe("correctionForm", () => {
  it("makes a field per schema property, typed, and one for arguments the schema does not name", () => {
    const fields = fieldsFor(schema, { ...args, extra: 1 }, ["api_token"]);
    expect(fields.map((f) => [f.name, f.kind, f.required, f.hidden])).toEqual([
      ["city", "string", true, false], ["days", "integer", false, false], ["unit", "enum", false, false],
      ["alert", "boolean", false, false], ["stops", "json", false, false], ["api_token", "string", false, true],
      ["extra", "integer", false, false],
    ]);
  });

  it("without a schema, types the fields by the arguments' values", () => {
    expect(fieldsFor(undefined, { a: "x", b: 1.5, c: true, d: { e: 1 } }, []).map((f) => f.kind)).toEqual(["string", "number", "boolean", "json"]);
  });

  it("turns the form back into the arguments, keeping a hidden value as the placeholder", () => {
    const fields = fieldsFor(schema, args, ["api_token"]);
    expect(objectFrom(fields, valuesFrom(fields, args))).toEqual({ value: args });
  });

  it("keeps a hidden value of any type as the placeholder: the server keeps the model's value there", () => {
    const s = { type: "object", properties: { pin: { type: "integer" }, auth: { type: "object" } } };
    const hiddenArgs = { pin: "[redacted]", auth: "[redacted]" };
    const fields = fieldsFor(s, hiddenArgs, ["auth", "pin"]);
    expect(objectFrom(fields, valuesFrom(fields, hiddenArgs))).toEqual({ value: hiddenArgs });
  });

  it("says which fields cannot be used", () => {
    const fields = fieldsFor(schema, args, []);
    const values = { ...valuesFrom(fields, args), city: "", days: "2.5", stops: "[oops" };
    expect(objectFrom(fields, values)).toEqual({ errors: { city: "required", days: "integer", stops: "json" } });
  });
});

describe("CorrectionEditor", () => {
  function setup() {
    const onSubmit = vi.fn();
    const user = userEvent.setup();
    renderWithClient(<CorrectionEditor approval={asking} schema={schema} disabled={false} onSubmit={onSubmit} onCancel={() => {}} />);
    const form = screen.getByRole("form", { name: "Deny with a correction" });
    return { onSubmit, user, form };
  }

  it("is prefilled with the request's arguments and denies with the edited ones", async () => {
    const { onSubmit, user, form } = setup();
    const city = within(form).getByRole("textbox", { name: /city/ });
    expect(city).toHaveValue("Paris");
    expect(within(form).getByRole("combobox", { name: /unit/ })).toHaveValue('"c"');
    await user.clear(city);
    await user.type(city, "Berlin");
    await user.selectOptions(within(form).getByRole("combobox", { name: /unit/ }), "f");
    await user.click(within(form).getByRole("checkbox", { name: /alert/ }));
    await user.click(within(form).getByRole("button", { name: "Deny with these arguments" }));
    expect(onSubmit).toHaveBeenCalledWith({ ...args, city: "Berlin", unit: "f", alert: true });
  });

  it("shows what is wrong next to the field and sends nothing", async () => {
    const { onSubmit, user, form } = setup();
    const days = within(form).getByRole("textbox", { name: /days/ });
    await user.clear(days);
    await user.type(days, "two");
    await user.clear(within(form).getByRole("textbox", { name: /city/ }));
    await user.click(within(form).getByRole("button", { name: "Deny with these arguments" }));
    expect(onSubmit).not.toHaveBeenCalled();
    expect(within(form).getByRole("alert")).toHaveTextContent("2 fields need fixing.");
    expect(days).toHaveAttribute("aria-invalid", "true");
    expect(days).toHaveAccessibleDescription("Enter a number.");
    expect(within(form).getByRole("textbox", { name: /city/ })).toHaveAccessibleDescription(/Required by the tool/);
  });

  it("edits the arguments as JSON too, and refuses JSON that is not an object", async () => {
    const { onSubmit, user, form } = setup();
    await user.click(within(form).getByRole("tab", { name: "JSON" }));
    expect(within(form).getByRole("tab", { name: "JSON" })).toHaveAttribute("aria-selected", "true");
    const text = within(form).getByRole("textbox", { name: "Arguments (a JSON object)" });
    expect(JSON.parse((text as HTMLTextAreaElement).value)).toEqual(args);
    await user.clear(text);
    await user.click(text);
    await user.paste("[1]");
    await user.click(within(form).getByRole("button", { name: "Deny with these arguments" }));
    expect(within(form).getByRole("alert")).toHaveTextContent("must be a JSON object");
    await user.clear(text);
    await user.paste('{"city": "Oslo", "api_token": "[redacted]"}');
    await user.click(within(form).getByRole("button", { name: "Deny with these arguments" }));
    expect(onSubmit).toHaveBeenCalledWith({ city: "Oslo", api_token: "[redacted]" });
  });

  it("has no accessibility violations", async () => {
    const { form } = setup();
    // Colour contrast needs a real browser (jsdom has no canvas): the e2e a11y spec checks it.
    const res = await axe.run(form, { rules: { "color-contrast": { enabled: false } } });
    expect(res.violations.map((v) => v.id)).toEqual([]);
  });
});

describe("ApprovalCard with corrections", () => {
  it("opens the editor with the tool's schema and denies with the correction and the reason", async () => {
    mockFetch({ "GET /api/mcp/servers/demo/tools": () => jsonResponse(200, { tools: [{ name: "get_forecast", input_schema: schema }] }) });
    const onDecide = vi.fn();
    const user = userEvent.setup();
    renderWithClient(<ApprovalCard approval={asking} busy={false} onDecide={onDecide} />);
    await user.type(screen.getByRole("textbox", { name: /Reason/ }), "I am in Berlin");
    const open = screen.getByRole("button", { name: "Deny with correction…" });
    expect(open).toHaveAttribute("aria-expanded", "false");
    await user.click(open);
    expect(open).toHaveAttribute("aria-expanded", "true");
    const city = await screen.findByRole("textbox", { name: /city/ });
    await user.clear(city);
    await user.type(city, "Berlin");
    await user.click(screen.getByRole("button", { name: "Deny with these arguments" }));
    expect(onDecide).toHaveBeenCalledWith({ approval_request_id: "mcpr_1", approve: false, reason: "I am in Berlin", correction: { ...args, city: "Berlin" } });
  });

  it("shows what changed since the correction on the new card", () => {
    const again = approval("mcpr_2", "get_forecast", {
      arguments: { city: "Berlin" },
      corrects: { approval_request_id: "mcpr_1", matches_correction: true, changes: [{ path: "city", before: "Paris", after: "Berlin" }] },
    });
    renderWithClient(<ApprovalCard approval={again} busy={false} onDecide={() => {}} />);
    const note = screen.getByRole("region", { name: "Changes since your correction" });
    expect(note).toHaveTextContent("Changed since your correction: It matches your correction.");
    expect(within(note).getByRole("listitem")).toHaveTextContent('city: "Paris" → to "Berlin"');
    expect(within(note).getByText('"Paris"').tagName).toBe("DEL");
    expect(within(note).getByText('"Berlin"').tagName).toBe("INS");
  });

  it("warns when the new request does not match the correction, and names removed arguments", async () => {
    renderWithClient(<CorrectsNote corrects={{ approval_request_id: "mcpr_1", matches_correction: false,
      changes: [{ path: "api_token", before: "[redacted]" }, { path: "city", before: "Paris", after: "Rome" }] }} />);
    const note = screen.getByRole("region", { name: "Changes since your correction" });
    expect(note).toHaveTextContent("It does not match your correction");
    await waitFor(() => expect(note).toHaveTextContent("api_token: hidden → to (removed)"));
  });
});
