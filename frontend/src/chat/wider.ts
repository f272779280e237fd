// Deciding wider from the card (docs/policies.md, "Decide wider from the card"): an
// admin may approve "for every tool of this server" or "for everything" (a
// workspace default becomes Auto, after a confirmation); a member sees
// these only as a link to the settings they may change (their own
// policies for the server's tools).
import type { Approval, ApprovalChoice } from "../api/types";
import type { Route } from "../router";

export type WiderScope = "server" | "everything";

export interface WiderOffer {
  /** The approve menu's extra choices (admins): in this order. */
  menu: WiderScope[];
  /** Links to the settings (members): where they can let more run without asking. */
  links: { key: "mySettings"; to: Route }[];
}

/**
 * What the card offers beyond its tool, for an admin or a member; nothing
 * when the role is unknown. A wider approval lasts, like remember, so a
 * card without remember (an admin limited its choices) or with a lock at
 * Ask (every call asks) offers neither the choices nor the links: the API
 * refuses them the same way (choice_not_allowed, policy_locked).
 */
export function widerOffer(a: Pick<Approval, "server_label" | "choices" | "ask_lock">, role: "admin" | "member" | undefined): WiderOffer {
  const offers = (c: ApprovalChoice) => !a.choices || a.choices.includes(c);
  if (!role || a.ask_lock || !offers("remember")) return { menu: [], links: [] };
  if (role === "admin") return { menu: ["server", "everything"], links: [] };
  return { menu: [], links: [{ key: "mySettings", to: { page: "settings", server: a.server_label } }] };
}

/** Whether a menu key is a wider choice. */
export function isWider(key: string): key is WiderScope {
  return key === "server" || key === "everything";
}
