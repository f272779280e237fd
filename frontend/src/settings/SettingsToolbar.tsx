// Search and filter over every server's tools, how many match, and (admins,
// several servers) "Ask for destructive tools on every server".
import { useTranslation } from "react-i18next";
import type { Tool } from "../api/types";
import { useErrorText } from "../auth/errorText";
import { destructiveTargets, TOOL_FILTERS, toolMatches, type ToolFilter } from "./filters";
import { useAskForDestructiveEverywhere, type BulkTarget } from "./queries";

export interface Notice { text: string; error?: boolean }

interface Props {
  /** Each server's label and its tools, when loaded. */
  servers: { label: string; tools?: Tool[] }[];
  admin: boolean;
  query: string;
  filter: ToolFilter;
  onQuery: (q: string) => void;
  onFilter: (f: ToolFilter) => void;
  onNotice: (n: Notice | null) => void;
}

export function SettingsToolbar({ servers, admin, query, filter, onQuery, onFilter, onNotice }: Props) {
  const { t } = useTranslation("settings");
  const errorText = useErrorText();
  const everywhere = useAskForDestructiveEverywhere();
  const loaded = servers.flatMap((s) => s.tools ?? []);
  const matching = loaded.filter((x) => toolMatches(x, query, filter)).length;
  const filtering = query.trim() !== "" || filter !== "all";

  const askEverywhere = () => {
    const targets: BulkTarget[] = servers
      .map((s) => ({ label: s.label, names: destructiveTargets(s.tools ?? []).map((x) => x.name) }))
      .filter((x) => x.names.length > 0);
    if (!targets.length) {
      onNotice({ text: t("bulk.nothingAnywhere") });
      return;
    }
    onNotice(null);
    everywhere.mutate(targets, {
      onSuccess: (results) => {
        const changed = results.filter((r) => !r.error).flatMap((r) => r.names.map((n) => `${r.label}/${n}`));
        const failed = results.filter((r) => r.error).map((r) => `${r.label}: ${errorText(r.error)}`);
        const parts = [];
        if (changed.length) parts.push(t("bulk.setEverywhere", { count: changed.length, names: changed.join(", ") }));
        if (failed.length) parts.push(t("bulk.failedOn", { failures: failed.join("; ") }));
        onNotice({ text: parts.join(" "), error: failed.length > 0 });
      },
      onError: (err) => onNotice({ text: t("bulk.nothingChanged", { message: errorText(err) }), error: true }),
    });
  };

  return (
    <div className="toolbar" role="search" aria-label={t("toolbar.label")}>
      <div className="toolbar-field grow">
        <label htmlFor="settings-search">{t("toolbar.search")}</label>
        <input id="settings-search" type="search" value={query} onChange={(e) => onQuery(e.target.value)}
          placeholder={t("toolbar.searchPlaceholder")} />
      </div>
      <div className="toolbar-field">
        <label htmlFor="settings-show">{t("toolbar.show")}</label>
        <select id="settings-show" value={filter} onChange={(e) => onFilter(e.target.value as ToolFilter)}>
          {TOOL_FILTERS.map((f) => <option key={f} value={f}>{t(`filter.${f}`)}</option>)}
        </select>
      </div>
      <span className="toolbar-count muted small" aria-live="polite">
        {filtering ? t("toolbar.matching", { count: matching, total: loaded.length }) : ""}
      </span>
      {admin && servers.length > 1 && (
        <button type="button" onClick={askEverywhere} disabled={everywhere.isPending}>
          {everywhere.isPending ? t("bulk.setting") : t("bulk.everywhere")}
        </button>
      )}
    </div>
  );
}
