// Whether the MCP face masks secret-looking values in this server's tool
// results before the model reads them (mask_results, on unless an admin
// turned it off). Admins switch it here (PATCH, audited); members see it.
import { useId } from "react";
import { useTranslation } from "react-i18next";
import type { Server } from "../api/types";
import { useErrorText } from "../auth/errorText";
import { useServerPatch } from "./serverMutations";

interface Props {
  server: Server;
  admin: boolean;
}

/** On unless the server says false: an answer without the field masks too. */
export const masksResults = (s: Pick<Server, "mask_results">) => s.mask_results !== false;

export function MaskResults({ server, admin }: Props) {
  const { t } = useTranslation("settings");
  const errorText = useErrorText();
  const id = useId();
  const patch = useServerPatch(server.label, "mask_results");
  const on = masksResults(server);
  return (
    <div className={`server-mask${on ? "" : " is-off"}`} role="group" aria-label={t("mask.label")}>
      {admin ? (
        <p>
          <input id={id} type="checkbox" checked={on} disabled={patch.isPending}
            onChange={(e) => patch.mutate({ mask_results: e.target.checked })} />{" "}
          <label htmlFor={id}>{t("mask.checkbox")}</label>{" "}
          <span className="muted">{t(on ? "mask.onNote" : "mask.offNote")}</span>
        </p>
      ) : (
        <p className="readonly-setting">{t(on ? "mask.on" : "mask.off")} <span className="muted">{t(on ? "mask.onNote" : "mask.offNote")}</span></p>
      )}
      {patch.isError && <p className="alert error" role="alert">{t("mask.failed", { message: errorText(patch.error) })}</p>}
    </div>
  );
}
