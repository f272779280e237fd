import { render, screen } from "@testing-library/react";
import { describe, expect, it, vi } from "vitest";
import "../i18n";
import type { RuleCheck } from "../api/types";
import { ApprovalCard } from "./ApprovalCard";
import { AllowedByLine, DecidedApproval } from "./items";
import { approval } from "./testutil";

const byRule: RuleCheck = {
  checked: 2, decision: "deny", by: "rule",
  rule: { scope: "workspace", index: 1, when: 'args.path.startsWith("/etc/")', decision: "deny", reason: "system files" },
};

describe("requests that argument rules answer", () => {
  it("says which rule denied a request, with its expression and reason, and names no person", () => {
    render(<DecidedApproval approval={{ ...approval("mcpr_1", "write_file"), state: "denied", rules: byRule, reason: "Denied by rule 2 …" }} />);
    expect(screen.getByText('denied by rule 2 (workspace rules): args.path.startsWith("/etc/") — system files')).toBeVisible();
    expect(screen.queryByText(/by you/)).toBeNull();
  });

  it("says a call ran because a rule approved it", () => {
    render(<AllowedByLine server="demo" tool="delete_forecast"
      allowed={{ kind: "rule", rule: { scope: "tool", server_label: "demo", tool_name: "delete_forecast", index: 0, when: 'args.city == "Test"', decision: "approve" } }} />);
    expect(screen.getByText('approved by rule 1 (this tool\'s rules): args.city == "Test"')).toBeVisible();
  });

  it("says, for a request approved because no rule held, that its policy let it run", () => {
    render(<DecidedApproval approval={{ ...approval("mcpr_2", "get_forecast"), state: "approved",
      rules: { checked: 1, decision: "approve", rule: null, by: "policy", policy: "never", source: "tool" } }} />);
    expect(screen.getByText("approved by its policy (no rule applied)")).toBeVisible();
  });

  it("shows on the card how many rules were checked when none decided, and an evaluation error", () => {
    const onDecide = vi.fn();
    const { rerender } = render(<ApprovalCard busy={false} onDecide={onDecide}
      approval={approval("mcpr_3", "delete_forecast", { asks_because: { policy: "always", source: "tool", reason: "rules" }, rules: { checked: 3, decision: "ask", rule: null } })} />);
    expect(screen.getByText("3 rules checked; none decided, so you decide.")).toBeVisible();
    expect(screen.getByText(/Asks because argument rules apply and none decided/)).toBeVisible();
    rerender(<ApprovalCard busy={false} onDecide={onDecide}
      approval={approval("mcpr_3", "delete_forecast", { rules: { checked: 1, decision: "ask", rule: null, error: "no such key: path" } })} />);
    expect(screen.getByText("1 rule checked; one could not be evaluated (no such key: path), so you decide.")).toBeVisible();
  });

  it("names the rule that could not be evaluated once on the card", () => {
    render(<ApprovalCard busy={false} onDecide={vi.fn()}
      approval={approval("mcpr_4", "write_file", { rules: { checked: 3, decision: "ask", error: "no such key: path",
        rule: { scope: "tool", server_label: "demo", tool_name: "write_file", index: 1, when: 'args.path.startsWith("/etc/")', decision: "ask" } } })} />);
    expect(screen.getByText("3 rules checked; rule 2 of this tool's rules could not be evaluated (no such key: path), so you decide.")).toBeVisible();
  });
});
