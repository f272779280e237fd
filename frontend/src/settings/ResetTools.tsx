// "Reset this server's tools": removes every tool policy of a server in one
// layer (the workspace's for an admin, the person's own for anyone) after a
// confirmation that says how many go. The count is what the tool list
// shows; the answer says what was actually removed.
import { useCallback, useState, type KeyboardEvent, type ReactNode } from "react";
import { useTranslation } from "react-i18next";
import type { PolicyLayer, Tool } from "../api/types";
import { useErrorText } from "../auth/errorText";
import { useClearPolicies } from "./queries";

interface Props {
  label: string;
  tools: Tool[];
  admin: boolean;
}

/** How many policies of a layer the tool list shows. */
export function policyCount(tools: Tool[], layer: PolicyLayer): number {
  return tools.filter((x) => (layer === "workspace" ? x.policy : x.user_policy) != null).length;
}

/**
 * The reset buttons (for the tools' head) and the confirmation and outcome
 * (for below it), apart so the confirmation spans the tool list.
 */
export function useResetTools({ label, tools, admin }: Props): { buttons: ReactNode; panel: ReactNode } {
  const { t } = useTranslation("settings");
  const errorText = useErrorText();
  const clear = useClearPolicies(label);
  const [asking, setAsking] = useState<PolicyLayer | null>(null);
  const [msg, setMsg] = useState<{ text: string; error?: boolean } | null>(null);
  const focusOnOpen = useCallback((el: HTMLButtonElement | null) => el?.focus(), []);
  const layers: PolicyLayer[] = admin ? ["workspace", "user"] : ["user"];
  const count = asking ? policyCount(tools, asking) : 0;

  const open = (layer: PolicyLayer) => {
    setMsg(null);
    setAsking(layer);
  };
  const confirm = (layer: PolicyLayer) =>
    clear.mutate(layer, {
      onSuccess: (r) => setMsg({ text: r.removed ? t("reset.done", { count: r.removed, names: r.tools.join(", ") }) : t("reset.nothing") }),
      onError: (err) => setMsg({ text: t("reset.failed", { message: errorText(err) }), error: true }),
      onSettled: () => setAsking(null),
    });
  const escape = (e: KeyboardEvent) => {
    if (e.key === "Escape" && !clear.isPending) setAsking(null);
  };

  const buttons = layers.map((layer) => (
    <button key={layer} type="button" onClick={() => open(layer)} title={t(layer === "workspace" ? "reset.workspaceTitle" : "reset.mineTitle")}
      disabled={clear.isPending || asking !== null || policyCount(tools, layer) === 0}>
      {t(layer === "workspace" ? "reset.workspace" : "reset.mine")}
    </button>
  ));
  const panel = (
    <>
      {asking && (
        <div className="confirm-delete reset-confirm" role="group" aria-label={t("reset.confirmLabel", { label })}>
          <p>
            <strong>{t(asking === "workspace" ? "reset.confirmWorkspace" : "reset.confirmMine", { count, label })}</strong>{" "}
            {t(asking === "workspace" ? "reset.afterWorkspace" : "reset.afterMine")}
          </p>
          <div className="confirm-actions">
            <button type="button" className="danger solid" disabled={clear.isPending} onKeyDown={escape} onClick={() => confirm(asking)}>
              {clear.isPending ? t("reset.removing") : t("reset.remove")}
            </button>
            <button type="button" ref={focusOnOpen} disabled={clear.isPending} onKeyDown={escape} onClick={() => setAsking(null)}>
              {t("form.cancel")}
            </button>
          </div>
        </div>
      )}
      {msg && <p className={`bulk-status${msg.error ? " status-error" : ""}`} role="status">{msg.text}</p>}
    </>
  );
  return { buttons, panel };
}
