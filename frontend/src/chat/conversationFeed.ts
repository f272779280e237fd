// Every event of one conversation, from whichever stream brings it first
// (this page's POST stream, or the conversation's events stream), applied
// once: to the query cache with the transcript reducers, and to the live view
// of the turn that runs now (answer text streaming, tools running).
//
// Event ids are per conversation and persisted, so "once" is by id. A
// transcript read back carries the id of its last event (last_event_id):
// events it already holds are not applied to it again, and events that arrived
// while it was being read are applied on top of it (reconcile), so a read that
// started before an event can never take that event back.
import type { QueryClient } from "@tanstack/react-query";
import { isTerminal, type ChatEvent } from "../api/events";
import { invalidateConversationList, keys } from "../api/query";
import type { Transcript } from "../api/types";
import { advance, followedTurn, type LiveTurn } from "./liveTurn";
import { setStreaming, withEvent, withTurnEnd } from "./transcript";

type Change = (tr: Transcript) => Transcript;

/** How many recent ids are remembered to skip an event that comes twice (once per stream). */
const seenLimit = 4096;

export class ConversationFeed {
  private readonly seen = new Set<number>();
  /** last_event_id of the newest transcript read back: it holds every event up to this id. */
  private floor = 0;
  /** The changes of events after the floor, to apply again on a transcript read meanwhile. */
  private log: { id: number; change: Change }[] = [];
  private turn: LiveTurn | null = null;
  private turnLastId = 0;
  private readonly listeners = new Set<() => void>();

  constructor(private readonly qc: QueryClient, readonly conversationId: string) {}

  /** The turn running now as the events show it (null before one began, or once the conversation is gone). */
  readonly live = (): LiveTurn | null => this.turn;

  readonly subscribe = (fn: () => void): (() => void) => {
    this.listeners.add(fn);
    return () => { this.listeners.delete(fn); };
  };

  /** Whether an event with this id was applied already (0: an event without id, never). */
  has(id: number): boolean {
    return id > 0 && this.seen.has(id);
  }

  /**
   * Applies one event unless it was applied already; returns whether it was
   * new. Events the last transcript read holds (id ≤ its last_event_id) only
   * move the live view: their text deltas are not stored until their message
   * is done, which is what a reload mid-answer needs.
   */
  accept(ev: ChatEvent, now = Date.now()): boolean {
    if (ev.id > 0) {
      if (this.seen.has(ev.id)) return false;
      this.remember(ev.id);
    }
    if (ev.id === 0 || ev.id > this.held()) this.store(ev, now);
    this.follow(ev, now);
    return true;
  }

  /** A transcript read back: events after its last_event_id that arrived meanwhile go on top of it. */
  reconcile(tr: Transcript): Transcript {
    const last = tr.conversation.last_event_id;
    if (typeof last !== "number") {
      // A server that does not say: the read is taken as it is.
      this.log = [];
      return tr;
    }
    const cached = this.qc.getQueryData<Transcript>(keys.conversation(this.conversationId));
    if (last < this.floor && cached) return cached; // older than what is shown already
    this.floor = Math.max(this.floor, last);
    this.log = this.log.filter((e) => e.id > last);
    const out = this.log.reduce((t, e) => e.change(t), tr);
    // The read says no turn runs, and the live view has seen nothing newer: that turn is over.
    if (!out.conversation.streaming && this.turn && this.turn.phase !== "ended" && this.turnLastId <= last) {
      this.setTurn({ ...this.turn, phase: "ended" });
    }
    return out;
  }

  /** The id up to which the transcript shown holds every event. */
  private held(): number {
    const last = this.qc.getQueryData<Transcript>(keys.conversation(this.conversationId))?.conversation.last_event_id;
    return Math.max(this.floor, typeof last === "number" ? last : 0);
  }

  private remember(id: number) {
    this.seen.add(id);
    if (this.seen.size > seenLimit) {
      let drop = this.seen.size - seenLimit / 2;
      for (const old of this.seen) {
        if (drop-- <= 0) break;
        this.seen.delete(old);
      }
    }
  }

  /** What the event changes in the stored conversation, as the server records it. */
  private changeFor(ev: ChatEvent, now: number): Change | null {
    switch (ev.event) {
      case "conversation": return (tr) => setStreaming(tr, true);
      case "completed": return (tr) => setStreaming(tr, false);
      case "failed":
      case "error": {
        // What streamed of this turn and never finished is kept, as the server keeps it.
        const texts = this.turn?.phase === "streaming" ? this.turn.texts : [];
        const running = this.turn?.phase === "streaming" ? this.turn.running : [];
        const at = new Date(now).toISOString();
        return (tr) => withTurnEnd(tr, ev.data, texts, running, at);
      }
      case "item.done":
      case "notice":
      case "approval.required":
      case "decision.recorded":
        return (tr) => withEvent(tr, ev);
      default: return null;
    }
  }

  private store(ev: ChatEvent, now: number) {
    const change = this.changeFor(ev, now);
    const key = keys.conversation(this.conversationId);
    if (change) {
      if (ev.id > 0) this.log.push({ id: ev.id, change });
      const cur = this.qc.getQueryData<Transcript>(key);
      // Without last_event_id a read cannot be reconciled: one that started before this event must not land.
      if (cur && typeof cur.conversation.last_event_id !== "number") void this.qc.cancelQueries({ queryKey: key, exact: true });
      this.qc.setQueryData<Transcript>(key, (tr) => (tr ? change(tr) : tr));
    }
    if (ev.event === "conversation") void invalidateConversationList(this.qc);
    // A decision (the expiry sweep's too, which has no turn) changes the list's "needs approval".
    if (ev.event === "decision.recorded") void this.qc.invalidateQueries({ queryKey: keys.conversations, exact: true }, { cancelRefetch: false });
    if (ev.event === "decision.recorded" && ev.data.policy_changed) {
      const pc = ev.data.policy_changed;
      if (pc.layer === "workspace") {
        // A wider decision set a server's default or the global one: the settings page reads it again.
        void this.qc.invalidateQueries({ queryKey: pc.server_label ? keys.servers : keys.settings });
        if (!pc.server_label) void this.qc.invalidateQueries({ queryKey: keys.servers });
      } else void this.qc.invalidateQueries({ queryKey: keys.tools(pc.server_label) });
    }
    if (isTerminal(ev)) {
      // Read back what the server stored (ids of error items, partial messages); a read under way will do.
      void invalidateConversationList(this.qc);
      void this.qc.invalidateQueries({ queryKey: key, exact: true }, { cancelRefetch: false });
    }
  }

  /** The live view: a turn begins with its conversation event, and ends with its terminal event. */
  private follow(ev: ChatEvent, now: number) {
    const tr = this.qc.getQueryData<Transcript>(keys.conversation(this.conversationId));
    let t = this.turn;
    if (ev.event === "conversation.deleted") {
      this.setTurn(null);
      return;
    }
    if (ev.event === "conversation") t = followedTurn(this.conversationId, ev.data.turn_id);
    else if (!t || t.phase === "ended") {
      // Joined in the middle of a turn (its first events were not sent): follow it from here.
      if (ev.event !== "text.delta" && ev.event !== "tool.started") return;
      t = followedTurn(this.conversationId, "");
    }
    t = advance(t, ev, tr, now);
    if (isTerminal(ev)) t = { ...t, phase: "ended", texts: [], running: [] };
    if (ev.id > 0) this.turnLastId = ev.id;
    this.setTurn(t);
  }

  private setTurn(t: LiveTurn | null) {
    if (t === this.turn) return;
    this.turn = t;
    this.listeners.forEach((l) => l());
  }
}

const feeds = new WeakMap<QueryClient, Map<string, ConversationFeed>>();

/** The one feed of a conversation for this query cache. */
export function feedOf(qc: QueryClient, conversationId: string): ConversationFeed {
  let byId = feeds.get(qc);
  if (!byId) feeds.set(qc, (byId = new Map()));
  let f = byId.get(conversationId);
  if (!f) byId.set(conversationId, (f = new ConversationFeed(qc, conversationId)));
  return f;
}
