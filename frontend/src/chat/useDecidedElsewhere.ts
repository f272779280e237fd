// A sentence for screen readers when a request shown here was decided
// somewhere else (another tab, another client): its card turns into the
// decision, and this says who decided. Decisions this page sent (they have a
// status in the decision queue) are announced by the page itself.
import { useState } from "react";
import { useTranslation } from "react-i18next";
import type { Approval } from "../api/types";
import type { DecisionStatus } from "./DecisionQueue";
import { decidedText } from "./items";

export function useDecidedElsewhere(approvals: Approval[], status: Record<string, DecisionStatus>): string {
  const { t } = useTranslation("chat");
  const states = approvals.map((a) => `${a.approval_request_id}=${a.state}`).join(" ");
  const [seen, setSeen] = useState({ states, pending: pendingIds(approvals), text: "" });
  if (seen.states !== states) {
    const decided = approvals.filter((a) => seen.pending.has(a.approval_request_id) && a.state !== "pending"
      && !status[a.approval_request_id] && a.decided_by);
    const text = decided.length
      ? decided.map((a) => t("announce.decidedElsewhere", { tool: a.tool_name, server: a.server_label, decision: decidedText(t, a) })).join(" ")
      : seen.text;
    setSeen({ states, pending: pendingIds(approvals), text });
  }
  return seen.text;
}

const pendingIds = (approvals: Approval[]) =>
  new Set(approvals.filter((a) => a.state === "pending").map((a) => a.approval_request_id));
