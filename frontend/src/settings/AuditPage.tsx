// The audit log: every change to servers, policies and settings, and every
// approval decision, newest first, in plain words. Pages come from one
// useInfiniteQuery per group of actions (auditPaging.ts merges the API's
// one-action streams for a group).
import { useInfiniteQuery } from "@tanstack/react-query";
import { useCallback, useState } from "react";
import { useTranslation } from "react-i18next";
import { api } from "../api/client";
import { keys } from "../api/query";
import { useErrorText } from "../auth/errorText";
import { AuditRow } from "./AuditRow";
import { firstCursor, readMerged } from "./auditPaging";
import { ACTION_GROUPS, type ActionGroup } from "./auditText";
import { useNow } from "./time";
import "./settings.css";

const PAGE = 50;

/** The export of what the page shows: every entry of the chosen group (all pages), as JSON lines. */
export function exportHref(actions?: readonly string[]): string {
  const q = new URLSearchParams({ format: "jsonl" });
  if (actions?.length) q.set("action", actions.join(","));
  return `/api/audit/export?${q}`;
}

export function AuditPage() {
  const { t } = useTranslation("settings");
  const errorText = useErrorText();
  const [group, setGroup] = useState<ActionGroup>("all");
  // The first entry "Load more" brought: focused, so keyboard users continue where the list grew.
  const [focusId, setFocusId] = useState<number | null>(null);
  const now = useNow();
  const actions = ACTION_GROUPS.find((g) => g.value === group)?.actions;
  const audit = useInfiniteQuery({
    queryKey: keys.audit({ group }),
    queryFn: ({ pageParam }) => readMerged(pageParam, PAGE, (q) => api.audit(q)),
    initialPageParam: firstCursor(actions),
    getNextPageParam: (last) => last.next,
  });
  const entries = audit.data?.pages.flatMap((p) => p.entries);
  const groupName = t(`auditGroupText.${group}`);
  const focusRow = useCallback((el: HTMLElement | null) => el?.focus({ preventScroll: true }), []);

  const loadMore = async () => {
    const r = await audit.fetchNextPage();
    const pages = r.data?.pages ?? [];
    setFocusId(pages[pages.length - 1]?.entries[0]?.id ?? null);
  };

  return (
    <div className="settings audit">
      <header className="settings-header audit-header">
        <div>
          <h1>{t("audit.title")}</h1>
          <p className="muted">{t("audit.intro")}</p>
        </div>
        <div className="audit-controls">
          <div className="toolbar-field">
            <label htmlFor="audit-action">{t("audit.action")}</label>
            <select id="audit-action" value={group} onChange={(e) => setGroup(e.target.value as ActionGroup)}>
              {ACTION_GROUPS.map((g) => <option key={g.value} value={g.value}>{t(`auditGroup.${g.value}`)}</option>)}
            </select>
          </div>
          <button type="button" onClick={() => void audit.refetch()} disabled={audit.isFetching}>{t("audit.reload")}</button>
          <a className="button" href={exportHref(actions)} download="toolgate-audit.jsonl"
            title={t("audit.exportHint", { group: groupName })}>
            {t("audit.export")}
          </a>
        </div>
      </header>

      {audit.isError && (
        <div className="alert error" role="alert">
          {t("audit.loadFailed", { message: errorText(audit.error) })}{" "}
          <button type="button" className="link"
            onClick={() => void (audit.isFetchNextPageError ? audit.fetchNextPage() : audit.refetch())}>
            {t("tryAgain")}
          </button>
        </div>
      )}

      {audit.isPending ? (
        <p className="muted" role="status">{t("page.loading")}</p>
      ) : entries && entries.length === 0 && !audit.isError ? (
        <div className="empty-state">
          <p><strong>{group === "all" ? t("audit.empty") : t("audit.emptyGroup", { group: groupName })}</strong></p>
          <p className="muted">{t("audit.emptyHint")}</p>
        </div>
      ) : entries && entries.length > 0 ? (
        <table className="audit-table">
          <caption className="sr-only">{t("audit.caption", { group: groupName })}</caption>
          <thead>
            <tr>
              <th scope="col" className="col-when">{t("audit.when")}</th>
              <th scope="col" className="col-who">{t("audit.who")}</th>
              <th scope="col" className="col-what">{t("audit.what")}</th>
            </tr>
          </thead>
          <tbody>
            {entries.map((e) => <AuditRow key={e.id} entry={e} now={now} focusRef={e.id === focusId ? focusRow : undefined} />)}
          </tbody>
        </table>
      ) : null}

      {entries && entries.length > 0 && (
        <div className="audit-footer">
          {audit.hasNextPage ? (
            <button type="button" onClick={() => void loadMore()} disabled={audit.isFetchingNextPage}>
              {audit.isFetchingNextPage ? t("page.loading") : t("audit.loadMore")}
            </button>
          ) : (
            <span className="muted small">{group === "all" ? t("audit.everything") : t("audit.everythingGroup", { group: groupName })}</span>
          )}
        </div>
      )}
    </div>
  );
}
