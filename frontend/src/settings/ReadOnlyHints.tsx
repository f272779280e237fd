// Whether a server's read-only hints are a claim or accepted: under "Ask
// unless read-only" a tool that says readOnlyHint runs without asking only
// once an admin has looked at the server's list and accepted its hints
// (PATCH read_only_hints, audited).
import { useTranslation } from "react-i18next";
import type { Server, Tool } from "../api/types";
import { useErrorText } from "../auth/errorText";
import { useServerPatch } from "./serverMutations";

interface Props {
  server: Server;
  tools: readonly Tool[];
  admin: boolean;
}

export function ReadOnlyHints({ server, tools, admin }: Props) {
  const { t } = useTranslation("settings");
  const errorText = useErrorText();
  const patch = useServerPatch(server.label, "read_only_hints");
  const claiming = tools.filter((x) => x.annotations?.readOnlyHint === true).map((x) => x.name);
  const trusted = server.read_only_hints === "trusted";
  if (!trusted && claiming.length === 0) return null;
  return (
    <div className={`server-hints${trusted ? " is-trusted" : " is-claimed"}`} role="group" aria-label={t("hints.label")}>
      <p>
        <strong>{t(trusted ? "hints.trusted" : "hints.claimed")}</strong>{" "}
        {claiming.length > 0 && t("hints.tools", { count: claiming.length, tools: claiming.join(", ") })}{" "}
        {t(trusted ? "hints.trustedNote" : "hints.claimedNote")}
      </p>
      {admin && (
        <button type="button" className={trusted ? undefined : "primary"} disabled={patch.isPending}
          onClick={() => patch.mutate({ read_only_hints: trusted ? "claimed" : "trusted" })}>
          {t(trusted ? "hints.takeBack" : "hints.accept")}
        </button>
      )}
      {patch.isError && <p className="alert error" role="alert">{t("hints.failed", { message: errorText(patch.error) })}</p>}
    </div>
  );
}
