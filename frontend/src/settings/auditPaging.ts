// Paging through the audit log for a group of actions. The API filters by
// one action and pages with next_cursor, so a group reads one stream per
// action and merges them by id (newest first). The cursor of a merged page
// is every stream's next_cursor plus the entries read but not shown yet; it
// is the pageParam of the audit's useInfiniteQuery. Nothing here is mutated:
// each page starts from a copy of its cursor.
import type { AuditEntry, AuditPage } from "../api/types";

export interface AuditStream { action?: string; cursor: string | null; started: boolean; buffered: AuditEntry[] }
export interface MergedCursor { streams: AuditStream[] }
export interface MergedPage { entries: AuditEntry[]; next?: MergedCursor }

export type AuditQuery = { limit: number; cursor?: string; action?: string };

/** Where a group's log starts: one fresh stream per action (one unfiltered stream for all actions). */
export function firstCursor(actions?: readonly string[]): MergedCursor {
  const list: (string | undefined)[] = actions?.length ? [...actions] : [undefined];
  return { streams: list.map((action) => ({ action, cursor: null, started: false, buffered: [] })) };
}

const open = (s: AuditStream) => !s.started || s.cursor !== null;

/** The next `limit` entries from a cursor, and the cursor after them (none at the end). */
export async function readMerged(from: MergedCursor, limit: number, fetchPage: (q: AuditQuery) => Promise<AuditPage>): Promise<MergedPage> {
  const streams = from.streams.map((s) => ({ ...s, buffered: [...s.buffered] }));
  const entries: AuditEntry[] = [];
  while (entries.length < limit) {
    await Promise.all(streams.filter((s) => !s.buffered.length && open(s)).map(async (s) => {
      const page = await fetchPage({ limit, cursor: s.cursor ?? undefined, action: s.action });
      s.buffered.push(...page.entries);
      s.cursor = page.entries.length ? page.next_cursor : null;
      s.started = true;
    }));
    let newest: AuditStream | null = null;
    for (const s of streams) if (s.buffered.length && (!newest || s.buffered[0].id > newest.buffered[0].id)) newest = s;
    if (!newest) break;
    entries.push(newest.buffered.shift()!);
  }
  const more = streams.some((s) => s.buffered.length > 0 || open(s));
  return { entries, next: more ? { streams } : undefined };
}
