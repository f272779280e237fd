// What Toolgate's MCP face saw, on the card and in the transcript: a call
// that ran through it (definition, arguments, result, what allowed it), a
// refused one with its sentence, one that provably did not run (not_run),
// and an approval whose outcome is unknown because Toolgate crashed between
// forwarding the call and storing its result: each said distinctly.
import { render, screen, within } from "@testing-library/react";
import { describe, expect, it, vi } from "vitest";
import type { GatewayCall, Item } from "../api/types";
import i18n from "../i18n";
import { renderWithClient } from "../testing";
import { ApprovalCard } from "./ApprovalCard";
import { approval, approvalItem, callItem, transcript, userItem } from "./testutil";
import { Transcript } from "./Transcript";

const DIGEST = "3f9a1c0b7e2d5a4c6b8e0f1d2c3b4a5968778695a4b3c2d1e0f9a8b7c6d5e4f3";
const SHORT = "3f9a1c0b7e2d";

function gw(over: Partial<GatewayCall> = {}): GatewayCall {
  return {
    via: "gateway", state: "done", definition_digest: DIGEST, arguments: { city: "Oslo", token: "[redacted]" }, redacted: ["token"],
    result: { content: [{ type: "text", text: "deleted the Oslo forecast" }], isError: false }, is_error: false, refusal: null,
    allowed_by: { kind: "approval" }, id: "gwc_1", conversation_id: "conv_1", turn_id: "turn_1", server_label: "demo",
    tool_name: "delete_forecast", arguments_sha256: "a".repeat(64), approval_request_id: null, output_sha256: null,
    created_at: "2026-11-28T10:00:00Z", finished_at: "2026-11-28T10:00:01Z", ...over,
  };
}

const show = (items: Item[]) => renderWithClient(<Transcript transcript={transcript(items)} turn={null} serverStreaming={false}
  stopping={false} status={{}} onDecide={vi.fn()} cardRef={() => () => {}} onRetry={vi.fn()} retryError={null} />);

const decided = () => document.querySelector(".decided") as HTMLElement;
const row = () => document.querySelector(".tool-call") as HTMLElement;

describe("an approval's state after the face", () => {
  it("not_run: approved, said not to have run, the conversation can go on; not 'may have run'", () => {
    const a = approval("mcpr_1", "delete_forecast", { state: "not_run", decided_by: "ana@example.com", decided_at: "t", answered_in: null,
      reason: "the follow-up never reached the provider" });
    show([userItem(1, "go"), approvalItem(2, a)]);
    const d = decided();
    expect(d).toHaveClass("decided-not_run");
    expect(within(d).getByText("approved by ana@example.com")).toBeInTheDocument();
    expect(within(d).getByText("not run")).toHaveClass("badge");
    expect(within(d).getByText(/^delete_forecast did not run: Toolgate knows the call never reached its server/))
      .toHaveTextContent("The conversation can go on; the model may ask again.");
    expect(within(d).queryByText("may have run")).toBeNull();
    expect(within(d).queryByText(/crashed/)).toBeNull();
    expect(screen.queryByRole("button", { name: "Approve" })).toBeNull();
  });

  it("outcome_unknown: only a crash between forwarding and storing; the tool may have run", () => {
    const a = approval("mcpr_1", "delete_forecast", { state: "outcome_unknown", decided_by: "ana@example.com", decided_at: "t", answered_in: "resp_2" });
    show([userItem(1, "go"), approvalItem(2, a)]);
    const d = decided();
    expect(within(d).getByText("may have run")).toHaveClass("badge");
    expect(within(d).getByText(
      /^Outcome unknown: Toolgate crashed between forwarding delete_forecast to its server and storing its result: the tool may have run\./,
    )).toBeInTheDocument();
    expect(within(d).queryByText("not run")).toBeNull();
    expect(within(d).queryByText(/did not run/)).toBeNull();
  });

  it("says both in German", async () => {
    await i18n.changeLanguage("de");
    const notRun = approval("mcpr_1", "delete_forecast", { state: "not_run", decided_by: "ana@example.com", decided_at: "t" });
    const unknown = approval("mcpr_2", "send_alert", { state: "outcome_unknown", decided_by: "ana@example.com", decided_at: "t" });
    show([userItem(1, "go"), approvalItem(2, notRun), approvalItem(3, unknown)]);
    expect(screen.getByText("nicht ausgeführt")).toBeInTheDocument();
    expect(screen.getByText(/^delete_forecast wurde nicht ausgeführt: Toolgate weiß/)).toBeInTheDocument();
    expect(screen.getByText(/^Ergebnis unbekannt: Toolgate ist abgestürzt, nachdem es send_alert an seinen Server weitergeleitet/)).toBeInTheDocument();
  });

  it("an approved call that ran through the face: definition (short, whole in its title), arguments with secrets hidden, result, who allowed it", () => {
    const a = approval("mcpr_1", "delete_forecast", { state: "approved", decided_by: "ana@example.com", decided_at: "t", answered_in: "resp_2",
      definition_digest: DIGEST, call: gw() });
    show([userItem(1, "go"), approvalItem(2, a)]);
    const d = decided();
    const line = within(d).getByText((_, el) => el?.classList.contains("gateway-sentence") ?? false);
    expect(line).toHaveTextContent(`Ran through Toolgate against definition ${SHORT}…`);
    const digests = d.querySelectorAll("code.digest");
    expect([...digests].map((c) => c.getAttribute("title"))).toEqual([
      `Tool definition digest (SHA-256): ${DIGEST}`, `Tool definition digest (SHA-256): ${DIGEST}`]);
    expect(line).not.toHaveTextContent(DIGEST); // shortened in the sentence; whole where the details open
    expect(within(d).getByText(`Tool definition digest (SHA-256): ${DIGEST}`)).toHaveClass("gateway-digest");
    expect(within(d).getByText(/^for definition/)).toBeInTheDocument();
    expect(within(d).getByText("approved by you")).toBeInTheDocument();
    expect(within(d).getByText("Arguments it ran with")).toBeInTheDocument();
    expect(within(d).getByText("hidden")).toBeInTheDocument();
    expect(d).not.toHaveTextContent("[redacted]");
    expect(within(d).getByText("deleted the Oslo forecast")).toBeInTheDocument();
    // The face's record says what happened: not the provider-side guess.
    expect(within(d).queryByText(/its result is below|Unknown whether|not reached the model/)).toBeNull();
  });

  it("not_run after the face refused the call: the refusal's sentence and that it did not run", () => {
    const a = approval("mcpr_1", "delete_forecast", { state: "not_run", decided_by: "ana@example.com", decided_at: "t",
      call: gw({ state: "refused", result: null, allowed_by: null, refusal: { code: "definition_changed", message: "changed since you allowed it: approve again" } }) });
    show([userItem(1, "go"), approvalItem(2, a)]);
    const d = decided();
    expect(within(d).getByText("Refused: changed since you allowed it: approve again")).toBeInTheDocument();
    expect(within(d).getByText(/^delete_forecast did not run/)).toBeInTheDocument();
    expect(within(d).queryByText(/^Ran through Toolgate/)).toBeNull();
  });

  it("a pending card names the definition the person approves", () => {
    render(<ApprovalCard approval={approval("mcpr_1", "delete_forecast", { definition_digest: DIGEST })} busy={false} onDecide={vi.fn()} />);
    const p = document.querySelector(".approval-definition") as HTMLElement;
    expect(p).toHaveTextContent(`Definition ${SHORT}…: through Toolgate, your approval runs the tool only while its definition is this one.`);
    expect(p.querySelector("code.digest")).toHaveAttribute("title", `Tool definition digest (SHA-256): ${DIGEST}`);
  });
});

describe("a call in the transcript, as the face saw it", () => {
  it("refused: 'refused', the sentence, no output; the arguments it asked with, secrets hidden", () => {
    show([userItem(1, "go"), callItem(2, "rug", { output: undefined,
      call: gw({ state: "refused", arguments: { account: "attacker-iban", token: "[redacted]" }, result: null, allowed_by: null,
        refusal: { code: "definition_changed", message: "changed since you allowed it: approve again" } }) })]);
    const r = row();
    expect(r).toHaveClass("refused");
    expect(within(r).getByText("refused")).toHaveClass("status");
    expect(within(r).getByText("Refused: changed since you allowed it: approve again")).toBeInTheDocument();
    expect(within(r).queryByText("ok")).toBeNull();
    expect(within(r).queryByText("Output")).toBeNull();
    expect(within(r).queryByText(/^Ran through/)).toBeNull();
    expect(within(r).getByText("Arguments it asked with")).toBeInTheDocument();
    expect(within(r).getByText("hidden")).toBeInTheDocument();
  });

  it("each known refusal in the page's language; an unknown code shows the server's sentence", async () => {
    const refused = (seq: number, code: string, message: string) => callItem(seq, `t${seq}`, {
      call: gw({ state: "refused", result: null, allowed_by: null, refusal: { code, message } }) });
    show([refused(1, "blocked", "blocked by the workspace"), refused(2, "not_approved", "not approved"),
      refused(3, "gate_unavailable", "x"), refused(4, "brand_new", "a sentence from the server")]);
    expect(screen.getByText("Refused: blocked by the workspace")).toBeInTheDocument();
    expect(screen.getByText("Refused: not approved")).toBeInTheDocument();
    expect(screen.getByText("Refused: Toolgate could not check the call, so it did not run")).toBeInTheDocument();
    expect(screen.getByText("Refused: a sentence from the server")).toBeInTheDocument();
    await i18n.changeLanguage("de");
    expect(await screen.findByText("Abgelehnt: vom Arbeitsbereich blockiert")).toBeInTheDocument();
    expect(screen.getAllByText("abgelehnt")).toHaveLength(4);
  });

  it("not run: its own status and sentence, no output", () => {
    show([callItem(1, "get_forecast", { output: undefined, call: gw({ state: "not_run", result: null }) })]);
    const r = row();
    expect(within(r).getByText("not run")).toHaveClass("status");
    expect(within(r).getByText((_, el) => el?.classList.contains("gateway-sentence") ?? false))
      .toHaveTextContent(`Not run: the call never reached the server (definition ${SHORT}…)`);
    expect(within(r).queryByText("Output")).toBeNull();
  });

  it("ran: the definition, what allowed it, and the arguments and result the face stored (redacted), not the provider's", () => {
    show([callItem(1, "delete_forecast", { arguments: { city: "Oslo", token: "provider-copy" }, output: "provider output",
      allowed_by: { kind: "approval" }, call: gw() })]);
    const r = row();
    expect(within(r).getByText("ok")).toBeInTheDocument();
    const footer = r.querySelector(".gateway-line") as HTMLElement;
    expect(footer).toHaveTextContent(`Ran through Toolgate against definition ${SHORT}…; allowed: approved by you`);
    expect(within(r).getByText("Arguments it ran with")).toBeInTheDocument();
    expect(within(r).getByText("deleted the Oslo forecast")).toBeInTheDocument();
    expect(r).not.toHaveTextContent("provider-copy");
    expect(r).not.toHaveTextContent("provider output");
  });

  it("running, failed and an error result each say so", () => {
    const sentence = () => (row().querySelector(".gateway-sentence") as HTMLElement).textContent;
    const { unmount } = show([callItem(1, "a", { call: gw({ state: "running", result: null }) })]);
    expect(sentence()).toBe(`Running through Toolgate against definition ${SHORT}…`);
    unmount();
    const second = show([callItem(1, "a", { call: gw({ state: "failed", result: null }) })]);
    expect(sentence()).toMatch(/^Sent through Toolgate against definition .*, but no result came back: it may have run$/);
    expect(screen.getByText("No result came back.")).toBeInTheDocument();
    second.unmount();
    show([callItem(1, "a", { call: gw({ is_error: true, result: { content: [{ type: "text", text: "no such city" }], isError: true } }) })]);
    expect(sentence()).toMatch(/; the tool reported an error$/);
    expect(screen.getByText("no such city")).toHaveClass("error");
    expect(within(row()).getByText("error")).toHaveClass("status"); // the face's record, though the provider reported no error
  });

  it("says how many secrets the face masked in the result, that it checked and found none, or nothing when it did not check", () => {
    const { unmount } = show([callItem(1, "a", { call: gw({ masked: 2, result: { content: [{ type: "text", text: "key ********" }] } }) })]);
    expect(within(row()).getByText("2 secret-looking values were masked before the model read the result.")).toHaveClass("has-masked");
    unmount();
    const second = show([callItem(1, "a", { call: gw({ masked: 1 }) })]);
    expect(within(row()).getByText("1 secret-looking value was masked before the model read the result.")).toBeInTheDocument();
    second.unmount();
    const third = show([callItem(1, "a", { call: gw({ masked: 0 }) })]);
    expect(within(row()).getByText("Checked for secrets before the model read it: none found.")).not.toHaveClass("has-masked");
    third.unmount();
    show([callItem(1, "a", { call: gw({ masked: null }) })]);
    expect(row().querySelector(".gateway-masked")).toBeNull();
  });
});
