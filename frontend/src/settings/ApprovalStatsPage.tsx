// "Approvals" (admins): per tool, over a chosen period, how many calls ran
// without asking, how many a person was asked about and how those ended,
// the median time to a decision and who decided most; where a tool was
// approved every time, a link to make it Auto. The numbers are the API's
// (GET /api/approvals/stats), counted from the audit log.
import { useQuery } from "@tanstack/react-query";
import { useId, useState } from "react";
import { useTranslation } from "react-i18next";
import { api } from "../api/client";
import { keys } from "../api/query";
import { useErrorText } from "../auth/errorText";
import { useFormat } from "../i18n/format";
import {
  COUNTS, PRESETS, approvalRate, dayValue, formatDuration, periodQuery, settingRoute,
  type CustomPeriod, type Preset, type ToolApprovalStats,
} from "./approvalStats";
import { linkProps } from "../router";
import "../account/account.css";
import "./approvalStats.css";

function StatsRow({ tool, min }: { tool: ToolApprovalStats; min: number }) {
  const { t } = useTranslation("settings");
  const { number, lng } = useFormat();
  const rate = approvalRate(tool);
  return (
    <tr>
      <th scope="row">
        <code>{tool.tool_name}</code> <span className="muted">{tool.server_label}</span>
        <span className="muted small stats-policy"> · {t("approvalStats.now", { policy: t(`policy.${tool.workspace_policy}`) })}</span>
        {tool.suggest_auto && (
          <p className="stats-suggest">
            {t("approvalStats.approvedEveryTime", { count: tool.approved, min })}{" "}
            <a {...linkProps(settingRoute(tool))}
              aria-label={t("approvalStats.makeAutoLabel", { tool: tool.tool_name, server: tool.server_label })}>
              {t("approvalStats.makeAuto")}
            </a>
          </p>
        )}
      </th>
      {COUNTS.map((c) => (
        <td key={c} className="num" data-label={t(`approvalStats.col.${c}`)}>{number(tool[c])}</td>
      ))}
      <td className="num" data-label={t("approvalStats.col.rate")}>{rate === null ? "—" : number(rate / 100, { style: "percent" })}</td>
      <td className="num" data-label={t("approvalStats.col.median")}>{formatDuration(tool.median_seconds_to_decision, lng)}</td>
      <td data-label={t("approvalStats.col.deciders")}>
        {tool.top_deciders.length === 0 ? "—" : tool.top_deciders.map((d) => t("approvalStats.decider", { email: d.email, count: d.count })).join(", ")}
      </td>
    </tr>
  );
}

export function ApprovalStatsPage() {
  const { t } = useTranslation("settings");
  const errorText = useErrorText();
  const { dateTime } = useFormat();
  const id = useId();
  const [preset, setPreset] = useState<Preset>("30d");
  const [custom, setCustom] = useState<CustomPeriod>(() => {
    const today = new Date();
    return { from: dayValue(new Date(today.getFullYear(), today.getMonth(), today.getDate() - 30)), to: dayValue(today) };
  });
  const customKey = preset === "custom" ? custom : undefined;
  const check = periodQuery(preset, custom);
  const stats = useQuery({
    queryKey: keys.approvalStats({ preset, from: customKey?.from, to: customKey?.to }),
    // A preset's period ends when it is read: computed here, not in the key.
    queryFn: () => {
      const q = periodQuery(preset, custom);
      if ("error" in q) throw new Error(q.error);
      return api.approvalStats(q);
    },
    enabled: !("error" in check),
    // Read afresh on every visit: a policy changed meanwhile (through "Make it Auto?") changes the suggestions.
    staleTime: 0,
  });
  const data = stats.data;

  return (
    <div className="account-page stats-page">
      <header>
        <h1>{t("approvalStats.title")}</h1>
        <p className="muted">{t("approvalStats.intro")}</p>
      </header>

      <div className="stats-controls">
        <div className="account-field">
          <label htmlFor={`${id}-period`}>{t("approvalStats.period")}</label>
          <select id={`${id}-period`} value={preset} onChange={(e) => setPreset(e.target.value as Preset)}>
            {PRESETS.map((p) => <option key={p} value={p}>{t(`approvalStats.preset.${p}`)}</option>)}
          </select>
        </div>
        {preset === "custom" && (
          <>
            <div className="account-field">
              <label htmlFor={`${id}-from`}>{t("approvalStats.from")}</label>
              <input id={`${id}-from`} type="date" value={custom.from} onChange={(e) => setCustom({ ...custom, from: e.target.value })} />
            </div>
            <div className="account-field">
              <label htmlFor={`${id}-to`}>{t("approvalStats.to")}</label>
              <input id={`${id}-to`} type="date" value={custom.to} onChange={(e) => setCustom({ ...custom, to: e.target.value })} />
            </div>
          </>
        )}
        <button type="button" onClick={() => void stats.refetch()} disabled={stats.isFetching || "error" in check}>
          {t("approvalStats.reload")}
        </button>
      </div>

      {"error" in check && <p className="alert error" role="alert">{t(`approvalStats.${check.error}`)}</p>}
      {stats.isError && (
        <div className="alert error" role="alert">
          {t("approvalStats.loadFailed", { message: errorText(stats.error) })}{" "}
          <button type="button" className="link" onClick={() => void stats.refetch()}>{t("tryAgain")}</button>
        </div>
      )}
      {stats.isPending && !("error" in check) && <p className="muted" role="status">{t("page.loading")}</p>}

      {data && (
        <p className="muted small" role="status">
          {t("approvalStats.between", { from: dateTime(data.from), to: dateTime(data.to) })}
        </p>
      )}
      {data && data.tools.length === 0 && (
        <div className="card">
          <p className="stats-empty"><strong>{t("approvalStats.empty")}</strong></p>
          <p className="muted stats-empty">{t("approvalStats.emptyHint")}</p>
        </div>
      )}
      {data && data.tools.length > 0 && (
        <div className="table-scroll">
          <table className="account-table stats-table">
            <caption className="sr-only">{t("approvalStats.caption")}</caption>
            <thead>
              <tr>
                <th scope="col">{t("approvalStats.col.tool")}</th>
                {COUNTS.map((c) => <th key={c} scope="col" className="num">{t(`approvalStats.col.${c}`)}</th>)}
                <th scope="col" className="num">{t("approvalStats.col.rate")}</th>
                <th scope="col" className="num">{t("approvalStats.col.median")}</th>
                <th scope="col">{t("approvalStats.col.deciders")}</th>
              </tr>
            </thead>
            <tbody>
              {data.tools.map((tool) => (
                <StatsRow key={`${tool.server_label}/${tool.tool_name}`} tool={tool} min={data.suggest_auto_min} />
              ))}
            </tbody>
          </table>
        </div>
      )}
      {data && data.tools.length > 0 && <p className="muted small">{t("approvalStats.legend", { min: data.suggest_auto_min })}</p>}
    </div>
  );
}
