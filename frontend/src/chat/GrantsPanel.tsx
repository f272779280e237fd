// The chat header's "Grants" button: a popover listing the grants that let
// tools run without asking in this conversation (its own, and the person's
// "for 1 hour" ones), each with Revoke. Keyed by conversation where used,
// so it starts closed in each. Read when opened, so it is never
// stale; a revoke applies from the next request the server builds.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useCallback, useEffect, useId, useRef, useState } from "react";
import { useTranslation } from "react-i18next";
import { api } from "../api/client";
import { keys } from "../api/query";
import type { Grant } from "../api/types";
import { useErrorText } from "../auth/errorText";
import { useFormat } from "../i18n/format";
import { linkProps } from "../router";

function GrantRow({ grant, onRevoked }: { grant: Grant; onRevoked(g: Grant): void }) {
  const { t } = useTranslation("chat");
  const { dateTime } = useFormat();
  const errorText = useErrorText();
  const client = useQueryClient();
  const revoke = useMutation({
    mutationFn: () => api.revokeGrant(grant.id),
    onSuccess: () => {
      onRevoked(grant);
      return client.invalidateQueries({ queryKey: keys.grants });
    },
  });
  return (
    <li className="grant-row">
      <span className="grant-what">
        <code>{grant.tool_name}</code> <span className="muted">{t("card.on")} {grant.server_label}</span>
        <span className="grant-scope muted small">
          {grant.expires_at ? t("grants.until", { time: dateTime(grant.expires_at, { timeStyle: "short" }) }) : t("grants.thisConversation")}
        </span>
      </span>
      <button type="button" className="danger" disabled={revoke.isPending}
        aria-label={t("grants.revokeLabel", { tool: grant.tool_name, server: grant.server_label })}
        onClick={() => revoke.mutate()}>
        {revoke.isPending ? t("grants.revoking") : t("grants.revoke")}
      </button>
      {revoke.error && <p className="alert error row-error" role="alert">{errorText(revoke.error)}</p>}
    </li>
  );
}

export function GrantsPanel({ conversationId }: { conversationId: string }) {
  const { t } = useTranslation("chat");
  const errorText = useErrorText();
  const id = useId();
  const [open, setOpen] = useState(false);
  const [said, setSaid] = useState("");
  const button = useRef<HTMLButtonElement>(null);
  const panel = useRef<HTMLDivElement>(null);
  const grants = useQuery({
    queryKey: keys.conversationGrants(conversationId),
    queryFn: () => api.conversationGrants(conversationId),
    enabled: open,
    staleTime: 0,
  });
  useEffect(() => {
    if (open) panel.current?.focus();
  }, [open]);
  const close = useCallback(() => {
    setOpen(false);
    button.current?.focus();
  }, []);
  useEffect(() => {
    if (!open) return;
    const onKey = (e: KeyboardEvent) => {
      if (e.key === "Escape" && panel.current?.contains(document.activeElement)) {
        e.preventDefault();
        close();
      }
    };
    document.addEventListener("keydown", onKey);
    return () => document.removeEventListener("keydown", onKey);
  }, [open, close]);

  return (
    <div className="grants-popover-anchor">
      <button ref={button} type="button" className="grants-button" aria-expanded={open} aria-controls={open ? `${id}-panel` : undefined}
        onClick={() => (open ? close() : (setSaid(""), setOpen(true)))}>
        {t("grants.button")}
      </button>
      {open && (
        <div id={`${id}-panel`} ref={panel} tabIndex={-1} role="region" aria-labelledby={`${id}-h`} className="grants-popover card">
          <h2 id={`${id}-h`}>{t("grants.title")}</h2>
          <p className="muted small">{t("grants.intro")}</p>
          {grants.isPending && <p className="muted">{t("load.loading")}</p>}
          {grants.isError && <p className="alert error" role="alert">{t("grants.loadFailed", { error: errorText(grants.error) })}</p>}
          {grants.data && grants.data.length === 0 && <p className="muted">{t("grants.none")}</p>}
          {grants.data && grants.data.length > 0 && (
            <ul className="grant-list">
              {grants.data.map((g) => (
                <GrantRow key={g.id} grant={g} onRevoked={(r) => setSaid(t("grants.revoked", { tool: r.tool_name }))} />
              ))}
            </ul>
          )}
          <p role="status" className="small">{said}</p>
          <div className="grants-popover-foot">
            <a {...linkProps({ page: "grants" })}>{t("grants.allMine")}</a>
            <button type="button" className="link" onClick={close}>{t("grants.close")}</button>
          </div>
        </div>
      )}
    </div>
  );
}
