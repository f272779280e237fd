// A server's tools: loading, failure, empty and no-match states, "Ask for
// all destructive tools", and a row per tool that matches the search.
import { useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { useTranslation } from "react-i18next";
import type { DefaultPolicy, Server } from "../api/types";
import { useErrorText } from "../auth/errorText";
import { destructiveTargets, toolMatches, type ToolFilter } from "./filters";
import { isDestructive } from "./policy";
import { toolsQuery, useAskForDestructive } from "./queries";
import { useResetTools } from "./ResetTools";
import { ToolRow } from "./ToolRow";

interface Props {
  server: Server;
  admin: boolean;
  globalDefault: DefaultPolicy | undefined;
  query: string;
  filter: ToolFilter;
  now: number;
  /** The tool the page's link names (marked); focused once while focusPending. */
  focusTool?: string;
  focusPending: boolean;
  onFocused: () => void;
  onClearFilters: () => void;
}

export function ServerTools({ server, admin, globalDefault, query, filter, now, focusTool, focusPending, onFocused, onClearFilters }: Props) {
  const { t } = useTranslation("settings");
  const errorText = useErrorText();
  const label = server.label;
  const tools = useQuery(toolsQuery(label));
  const bulk = useAskForDestructive(label);
  const [bulkMsg, setBulkMsg] = useState<{ text: string; error?: boolean } | null>(null);
  const list = tools.data ?? [];
  const shown = list.filter((x) => toolMatches(x, query, filter));
  const filtering = query.trim() !== "" || filter !== "all";
  const reset = useResetTools({ label, tools: list, admin });

  const askForDestructive = () => {
    const destructive = list.filter((x) => isDestructive(x.annotations));
    const targets = destructiveTargets(list);
    if (!targets.length) {
      setBulkMsg({ text: destructive.length ? t("bulk.nothingOnServer", { label }) : t("bulk.noneDestructive", { label }) });
      return;
    }
    const names = targets.map((x) => x.name);
    const blocked = destructive.filter((x) => x.effective_policy === "blocked").length;
    setBulkMsg(null);
    bulk.mutate(names, {
      onSuccess: () => setBulkMsg({
        text: t("bulk.setToAsk", { count: names.length, names: names.join(", ") }) +
          (blocked ? ` ${t("bulk.leftBlocked", { count: blocked })}` : ""),
      }),
      onError: (err) => setBulkMsg({ text: t("bulk.nothingChanged", { message: errorText(err) }), error: true }),
    });
  };

  let body;
  if (tools.isPending) body = <p className="muted tools-empty">{t("tools.loading")}</p>;
  else if (tools.isError && !tools.data) {
    body = (
      <div className="alert error tools-empty" role="alert">
        {t("tools.loadFailed", { message: errorText(tools.error) })}{" "}
        <button type="button" className="link" onClick={() => void tools.refetch()}>{t("tryAgain")}</button>
      </div>
    );
  } else if (list.length === 0) {
    body = (
      <p className="muted tools-empty">
        {server.tools_refresh_error ? t("tools.noneDiscoveryFailed") : admin ? t("tools.noneAdmin") : t("tools.none")}
      </p>
    );
  } else if (shown.length === 0) {
    body = (
      <p className="muted tools-empty">
        {t("tools.noMatch", { label })}{" "}
        <button type="button" className="link" onClick={onClearFilters}>{t("tools.clearFilters")}</button>
      </p>
    );
  } else {
    body = (
      <ul className="sp-tool-list" aria-label={t("tools.listLabel", { label })}>
        {shown.map((x) => (
          <ToolRow key={x.name} tool={x} server={server} globalDefault={globalDefault} admin={admin} now={now}
            highlight={focusTool === x.name} focus={focusPending && focusTool === x.name} onFocused={onFocused} />
        ))}
      </ul>
    );
  }

  return (
    <>
      <div className="tools-head">
        <h4>{t("tools.heading")}</h4>
        {tools.data && filtering && <span className="muted small">{t("tools.showing", { shown: shown.length, total: list.length })}</span>}
        <div className="tools-head-actions">
          {admin && (
            <button type="button" onClick={askForDestructive} disabled={bulk.isPending || !tools.data} title={t("bulk.title")}>
              {bulk.isPending ? t("bulk.setting") : t("bulk.button")}
            </button>
          )}
          {tools.data && reset.buttons}
        </div>
      </div>
      <p className={`bulk-status${bulkMsg?.error ? " status-error" : ""}`} role="status">{bulkMsg?.text ?? ""}</p>
      {reset.panel}
      {body}
    </>
  );
}
