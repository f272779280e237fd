// A tiny router over the History API: the app has a handful of pages, so a
// router library would be more code than it saves.
import { useEffect, useState } from "react";

export type Route =
  // approval: a link to one request in the conversation (a webhook's, "/c/conv_…#approval-mcpr_…").
  | { page: "chat"; conversationId?: string; approval?: string }
  | { page: "settings"; server?: string; tool?: string }
  | { page: "audit" }
  // "Waiting for me": every request waiting for the person, across chats and agents.
  | { page: "inbox" }
  // The approval statistics (admins).
  | { page: "approvalStats" }
  | { page: "users" }
  | { page: "tokens" }
  | { page: "grants" }
  | { page: "login"; next?: string }
  | { page: "setup"; token?: string }
  // A signed approve or deny link of a webhook delivery: "/link/mcpr_…#tgl_…" (the token stays in the fragment, never sent).
  | { page: "link"; approvalRequestId: string; token: string };

export function parseRoute(loc: { pathname: string; search: string; hash?: string }): Route {
  const q = new URLSearchParams(loc.search);
  const m = /^\/c\/([^/]+)$/.exec(loc.pathname);
  if (m) {
    const a = /^#approval-(.+)$/.exec(loc.hash ?? "");
    return { page: "chat", conversationId: decodeURIComponent(m[1]), approval: a ? decodeURIComponent(a[1]) : undefined };
  }
  const l = /^\/link\/([^/]+)$/.exec(loc.pathname);
  if (l) return { page: "link", approvalRequestId: decodeURIComponent(l[1]), token: (loc.hash ?? "").replace(/^#/, "") };
  if (loc.pathname === "/settings") return { page: "settings", server: q.get("server") ?? undefined, tool: q.get("tool") ?? undefined };
  if (loc.pathname === "/audit") return { page: "audit" };
  if (loc.pathname === "/inbox") return { page: "inbox" };
  if (loc.pathname === "/approvals/stats") return { page: "approvalStats" };
  if (loc.pathname === "/users") return { page: "users" };
  if (loc.pathname === "/tokens") return { page: "tokens" };
  if (loc.pathname === "/grants") return { page: "grants" };
  if (loc.pathname === "/login") return { page: "login", next: safeNext(q.get("next")) };
  if (loc.pathname === "/setup") return { page: "setup", token: q.get("token") ?? undefined };
  return { page: "chat" };
}

export function href(r: Route): string {
  switch (r.page) {
    case "chat":
      if (!r.conversationId) return "/";
      return `/c/${encodeURIComponent(r.conversationId)}${r.approval ? `#approval-${encodeURIComponent(r.approval)}` : ""}`;
    case "settings": {
      const q = new URLSearchParams();
      if (r.server) q.set("server", r.server);
      if (r.tool) q.set("tool", r.tool);
      const s = q.toString();
      return s ? `/settings?${s}` : "/settings";
    }
    case "audit":
      return "/audit";
    case "inbox":
      return "/inbox";
    case "approvalStats":
      return "/approvals/stats";
    case "users":
      return "/users";
    case "tokens":
      return "/tokens";
    case "grants":
      return "/grants";
    case "login":
      return r.next && r.next !== "/" ? `/login?next=${encodeURIComponent(r.next)}` : "/login";
    case "setup":
      return r.token ? `/setup?token=${encodeURIComponent(r.token)}` : "/setup";
    case "link":
      return `/link/${encodeURIComponent(r.approvalRequestId)}#${r.token}`;
  }
}

/** A path to return to after signing in: only this app's own paths (never another site, never the login page). */
export function safeNext(next: string | null | undefined): string | undefined {
  if (!next || !next.startsWith("/") || next.startsWith("//") || next.startsWith("/\\")) return undefined;
  if (next === "/login" || next.startsWith("/login?") || next.startsWith("/setup")) return undefined;
  return next;
}

const listeners = new Set<() => void>();

/** Goes to a route; replace keeps the back button from returning to it. */
export function navigate(to: Route | string, opts: { replace?: boolean } = {}) {
  const url = typeof to === "string" ? to : href(to);
  if (opts.replace) history.replaceState(null, "", url);
  else history.pushState(null, "", url);
  listeners.forEach((l) => l());
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location));
  useEffect(() => {
    const update = () => setRoute(parseRoute(location));
    listeners.add(update);
    window.addEventListener("popstate", update);
    window.addEventListener("hashchange", update);
    return () => {
      listeners.delete(update);
      window.removeEventListener("popstate", update);
      window.removeEventListener("hashchange", update);
    };
  }, []);
  return route;
}

/** Props for an <a> that navigates in-app on a plain click. */
export function linkProps(to: Route) {
  const url = href(to);
  return {
    href: url,
    onClick: (e: React.MouseEvent) => {
      if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
      e.preventDefault();
      navigate(url);
    },
  };
}
