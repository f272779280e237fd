// The audit log: every change to servers, policies and settings, and every
// approval decision, newest first, in plain words.
import { useCallback, useEffect, useRef, useState } from "react";
import { api } from "../api/client";
import type { AuditEntry } from "../api/types";
import { linkProps } from "../router";
import { ACTION_GROUPS, describe, type ActionGroup, type Part } from "./auditText";
import { errorMessage } from "./policy";
import { absoluteTime, relativeTime, useNow } from "./time";
import "./settings.css";

const PAGE = 50;

interface Stream { action?: string; cursor: string | null; buf: AuditEntry[]; started: boolean }

/**
 * Pages through the audit log for a group of actions. The API filters by
 * one action, so a group reads one stream per action and merges them by id
 * (newest first).
 */
export class AuditPager {
  private streams: Stream[];
  constructor(actions?: string[]) {
    this.streams = (actions?.length ? actions : [undefined]).map((action) => ({ action, cursor: null, buf: [], started: false }));
  }

  private async fill(s: Stream) {
    const page = await api.audit({ limit: PAGE, cursor: s.cursor ?? undefined, action: s.action });
    s.buf.push(...page.entries);
    s.cursor = page.entries.length ? page.next_cursor : null;
    s.started = true;
  }

  async next(limit = PAGE): Promise<{ entries: AuditEntry[]; more: boolean }> {
    const out: AuditEntry[] = [];
    while (out.length < limit) {
      await Promise.all(this.streams.filter((s) => !s.buf.length && (!s.started || s.cursor !== null)).map((s) => this.fill(s)));
      let best: Stream | null = null;
      for (const s of this.streams) if (s.buf.length && (!best || s.buf[0].id > best.buf[0].id)) best = s;
      if (!best) break;
      out.push(best.buf.shift()!);
    }
    return { entries: out, more: this.streams.some((s) => s.buf.length > 0 || s.cursor !== null || !s.started) };
  }
}

export function AuditPage() {
  const [group, setGroup] = useState<ActionGroup>("all");
  const [entries, setEntries] = useState<AuditEntry[] | null>(null);
  const [more, setMore] = useState(false);
  const [loading, setLoading] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const pager = useRef<AuditPager | null>(null);
  const generation = useRef(0);
  const firstNew = useRef<number | null>(null);
  const tableRef = useRef<HTMLTableElement>(null);
  const now = useNow();

  const loadMore = useCallback(async (reset: boolean) => {
    const gen = reset ? ++generation.current : generation.current;
    if (reset) {
      pager.current = new AuditPager(ACTION_GROUPS.find((g) => g.value === group)?.actions);
      setEntries(null);
    }
    setLoading(true);
    setError(null);
    try {
      const page = await pager.current!.next();
      if (gen !== generation.current) return;
      firstNew.current = reset ? null : page.entries[0]?.id ?? null;
      setEntries((cur) => (reset ? page.entries : [...(cur ?? []), ...page.entries]));
      setMore(page.more);
    } catch (err) {
      if (gen !== generation.current) return;
      setError(errorMessage(err));
      if (reset) setEntries([]);
    } finally {
      if (gen === generation.current) setLoading(false);
    }
  }, [group]);

  useEffect(() => {
    void loadMore(true);
  }, [loadMore]);

  // After "Load more", move focus to the first new row so keyboard users
  // continue where the list grew.
  useEffect(() => {
    if (firstNew.current === null) return;
    tableRef.current?.querySelector<HTMLElement>(`[data-entry="${firstNew.current}"]`)?.focus({ preventScroll: true });
    firstNew.current = null;
  }, [entries]);

  const groupLabel = ACTION_GROUPS.find((g) => g.value === group)!.label;

  return (
    <div className="settings audit">
      <header className="settings-header audit-header">
        <div>
          <h1>Audit log</h1>
          <p className="muted">Every change to servers, policies and settings, and every approval decision, newest first.</p>
        </div>
        <div className="audit-controls">
          <div className="toolbar-field">
            <label htmlFor="audit-action">Action</label>
            <select id="audit-action" value={group} onChange={(e) => setGroup(e.target.value as ActionGroup)}>
              {ACTION_GROUPS.map((g) => <option key={g.value} value={g.value}>{g.label}</option>)}
            </select>
          </div>
          <button type="button" onClick={() => void loadMore(true)} disabled={loading}>Reload</button>
        </div>
      </header>

      {error && (
        <div className="alert error" role="alert">
          Could not load the audit log: {error}{" "}
          <button type="button" className="link" onClick={() => void loadMore(entries === null || entries.length === 0)}>Try again</button>
        </div>
      )}

      {entries === null ? (
        <p className="muted" role="status">Loading…</p>
      ) : entries.length === 0 && !error ? (
        <div className="empty-state">
          <p><strong>{group === "all" ? "Nothing recorded yet." : `No ${groupLabel.toLowerCase()} recorded.`}</strong></p>
          <p className="muted">Changes to servers, policies and settings, and approval decisions in the chat, appear here.</p>
        </div>
      ) : entries.length > 0 ? (
        <table className="audit-table" ref={tableRef}>
          <caption className="sr-only">Audit log: {groupLabel.toLowerCase()}, newest first</caption>
          <thead>
            <tr>
              <th scope="col" className="col-when">When</th>
              <th scope="col" className="col-who">Who</th>
              <th scope="col">What</th>
            </tr>
          </thead>
          <tbody>
            {entries.map((e) => <AuditRow key={e.id} entry={e} now={now} />)}
          </tbody>
        </table>
      ) : null}

      {entries !== null && entries.length > 0 && (
        <div className="audit-footer">
          {more ? (
            <button type="button" onClick={() => void loadMore(false)} disabled={loading}>
              {loading ? "Loading…" : "Load more"}
            </button>
          ) : (
            <span className="muted small">That is everything{group === "all" ? "" : ` for ${groupLabel.toLowerCase()}`}.</span>
          )}
        </div>
      )}
    </div>
  );
}

function AuditRow({ entry, now }: { entry: AuditEntry; now: number }) {
  const d = describe(entry);
  return (
    <tr data-entry={entry.id} tabIndex={-1} className={d.tone ? `tone-${d.tone}` : undefined}>
      <td className="col-when">
        <time dateTime={entry.at} title={absoluteTime(entry.at)}>{relativeTime(entry.at, now)}</time>
        <span className="abs-time">{absoluteTime(entry.at)}</span>
      </td>
      <td className="col-who">{entry.actor}</td>
      <td className="col-what">
        <div className="what">
          <span className="action-tag">{entry.action}</span>
          <span className="what-text">{d.parts.map((p, i) => <PartView key={i} part={p} />)}</span>
        </div>
        {d.details.map((t, i) => <div key={i} className="what-detail">{t}</div>)}
        <div className="what-links">
          {d.conversationId && <a {...linkProps({ page: "chat", conversationId: d.conversationId })}>Open the conversation</a>}
          <details>
            <summary>Before and after</summary>
            <div className="before-after">
              <div><span className="muted small">Before</span><pre>{JSON.stringify(entry.before, null, 2)}</pre></div>
              <div><span className="muted small">After</span><pre>{JSON.stringify(entry.after, null, 2)}</pre></div>
            </div>
          </details>
        </div>
      </td>
    </tr>
  );
}

function PartView({ part }: { part: Part }) {
  if (typeof part === "string") return <>{part}</>;
  if (!part.server) return null;
  const text = part.tool ? `${part.server}/${part.tool}` : part.server;
  return (
    <a className="ref" {...linkProps({ page: "settings", server: part.server, tool: part.tool })}>
      {text}
    </a>
  );
}
