// The other calls of the same response that wait for a decision, shown on a
// card while the person decides it: Stop denies them too (with this one), so
// the card says which they are, with their tools and arguments.
import { useTranslation } from "react-i18next";
import type { Approval } from "../api/types";
import { Escaped } from "./Escaped";
import { JsonView } from "./JsonView";

/** The requests of a's response still pending, other than a, in the order they asked. */
export function othersInBatch(a: Approval, pending: readonly Approval[]): Approval[] {
  return pending.filter((x) => x.response_id === a.response_id && x.approval_request_id !== a.approval_request_id && x.state === "pending");
}

export function BatchList({ others }: { others: readonly Approval[] }) {
  const { t } = useTranslation("chat");
  if (others.length === 0) return null;
  const heading = t("card.batch", { count: others.length });
  return (
    <section className="approval-batch" aria-label={heading}>
      <h3>{heading}</h3>
      <ol>
        {others.map((o) => (
          <li key={o.approval_request_id}>
            <span className="approval-batch-tool">
              <code><Escaped text={o.tool_name} /></code> {t("card.on")} {o.server_label}
            </span>
            <JsonView value={o.arguments} redacted={o.redacted} label={t("card.batchArguments", { tool: o.tool_name })} />
          </li>
        ))}
      </ol>
    </section>
  );
}
