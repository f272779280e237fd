// "My grants": every grant of mine, in all my conversations, with where it
// applies, when it ends, and Revoke. Expired and revoked ones on request.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useId, useState } from "react";
import { useTranslation } from "react-i18next";
import { api } from "../api/client";
import { keys } from "../api/query";
import type { Grant } from "../api/types";
import { useErrorText } from "../auth/errorText";
import { useFormat } from "../i18n/format";
import { linkProps } from "../router";
import "../account/account.css";

function GrantRow({ grant }: { grant: Grant }) {
  const { t } = useTranslation("settings");
  const { dateTime } = useFormat();
  const errorText = useErrorText();
  const client = useQueryClient();
  const revoke = useMutation({
    mutationFn: () => api.revokeGrant(grant.id),
    onSuccess: () => client.invalidateQueries({ queryKey: keys.grants }),
  });
  const where = grant.conversation_id
    ? <a {...linkProps({ page: "chat", conversationId: grant.conversation_id })}>{grant.conversation_title || t("grants.untitled")}</a>
    : t("grants.allConversations");
  return (
    <tr>
      <th scope="row"><code>{grant.tool_name}</code> <span className="muted">{grant.server_label}</span></th>
      <td data-label={t("grants.where")}>{where}</td>
      <td data-label={t("grants.created")}>{dateTime(grant.created_at)}</td>
      <td data-label={t("grants.ends")}>
        {grant.revoked_at ? dateTime(grant.revoked_at) : grant.expires_at ? dateTime(grant.expires_at) : t("grants.whenDeleted")}
      </td>
      <td data-label={t("grants.state")}><span className={`badge grant-${grant.state}`}>{t(`grants.states.${grant.state}`)}</span></td>
      <td>
        {grant.state === "active" && (
          <button type="button" className="danger" disabled={revoke.isPending}
            aria-label={t("grants.revokeLabel", { tool: grant.tool_name, server: grant.server_label })} onClick={() => revoke.mutate()}>
            {revoke.isPending ? t("grants.revoking") : t("grants.revoke")}
          </button>
        )}
        {revoke.error && <p className="alert error row-error" role="alert">{errorText(revoke.error)}</p>}
      </td>
    </tr>
  );
}

export function GrantsPage() {
  const { t } = useTranslation("settings");
  const errorText = useErrorText();
  const id = useId();
  const [ended, setEnded] = useState(false);
  const grants = useQuery({ queryKey: keys.myGrants(ended), queryFn: () => api.listGrants(ended), staleTime: 0 });
  return (
    <div className="account-page">
      <header>
        <h1>{t("grants.title")}</h1>
        <p className="muted">{t("grants.intro")}</p>
      </header>
      <p>
        <input id={`${id}-ended`} type="checkbox" checked={ended} onChange={(e) => setEnded(e.target.checked)} />{" "}
        <label htmlFor={`${id}-ended`}>{t("grants.showEnded")}</label>
      </p>
      {grants.isError && (
        <div className="alert error" role="alert">
          {t("grants.loadFailed", { error: errorText(grants.error) })}{" "}
          <button type="button" className="link" onClick={() => void grants.refetch()}>{t("common:app.tryAgain")}</button>
        </div>
      )}
      {grants.isPending && <p className="muted">{t("common:app.loading")}</p>}
      {grants.data && grants.data.length === 0 && <p className="muted">{t("grants.none")}</p>}
      {grants.data && grants.data.length > 0 && (
        <div className="table-scroll">
          <table className="account-table">
            <caption className="sr-only">{t("grants.caption")}</caption>
            <thead>
              <tr>
                <th scope="col">{t("grants.tool")}</th><th scope="col">{t("grants.where")}</th>
                <th scope="col">{t("grants.created")}</th><th scope="col">{t("grants.ends")}</th>
                <th scope="col">{t("grants.state")}</th><th scope="col">{t("grants.actions")}</th>
              </tr>
            </thead>
            <tbody>{grants.data.map((g) => <GrantRow key={g.id} grant={g} />)}</tbody>
          </table>
        </div>
      )}
    </div>
  );
}
