// "Use Toolgate from your agents": how to add Toolgate's MCP face for any
// client (/mcp, or /mcp/{server_label}) to the common MCP clients, with the
// servers the person's agents will see there. The token stays a
// placeholder (TOOLGATE_TOKEN): a snippet may be pasted somewhere shared.
import { useQuery } from "@tanstack/react-query";
import { useId, useState } from "react";
import { useTranslation } from "react-i18next";
import { api } from "../api/client";
import { keys } from "../api/query";

export const agentClients = ["claude", "codex", "cursor", "vscode", "agents"] as const;
export type AgentClient = (typeof agentClients)[number];

/** The snippet that adds Toolgate at url to client. */
export function agentSnippet(client: AgentClient, url: string): string {
  switch (client) {
    case "claude":
      return `claude mcp add --transport http toolgate ${url} \\\n  --header "Authorization: Bearer $TOOLGATE_TOKEN"`;
    case "codex":
      return `# ~/.codex/config.toml\n[mcp_servers.toolgate]\nurl = "${url}"\nbearer_token_env_var = "TOOLGATE_TOKEN"\ntool_timeout_sec = 900`;
    case "cursor":
      return `// ~/.cursor/mcp.json\n{ "mcpServers": { "toolgate": {\n  "url": "${url}",\n  "headers": { "Authorization": "Bearer \${env:TOOLGATE_TOKEN}" } } } }`;
    case "vscode":
      return `// .vscode/mcp.json\n{ "inputs": [{ "type": "promptString", "id": "toolgate-token", "description": "Toolgate API token", "password": true }],\n  "servers": { "toolgate": { "type": "http", "url": "${url}",\n    "headers": { "Authorization": "Bearer \${input:toolgate-token}" } } } }`;
    case "agents":
      return `import { MCPServerStreamableHttp } from '@openai/agents';\n\nconst toolgate = new MCPServerStreamableHttp({\n  url: '${url}',\n  name: 'toolgate',\n  requestInit: { headers: { Authorization: \`Bearer \${process.env.TOOLGATE_TOKEN}\` } },\n  timeout: 15 * 60 * 1000, // a held call waits for a person\n});`;
  }
}

export function AgentSnippets() {
  const { t } = useTranslation("account");
  const id = useId();
  const [client, setClient] = useState<AgentClient>("claude");
  const [scope, setScope] = useState("");
  const [copied, setCopied] = useState<"" | "copied" | "failed">("");
  const servers = useQuery({ queryKey: keys.servers, queryFn: () => api.listServers() });
  const enabled = (servers.data ?? []).filter((s) => s.enabled);
  const base = `${window.location.origin}/mcp`;
  const url = scope ? `${base}/${encodeURIComponent(scope)}` : base;
  const snippet = agentSnippet(client, url);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(snippet);
      setCopied("copied");
    } catch {
      setCopied("failed");
    }
  };
  return (
    <section className="card agent-snippets" aria-labelledby={`${id}-h`}>
      <h2 id={`${id}-h`}>{t("agents.title")}</h2>
      <p className="muted small">{t("agents.intro")}</p>
      <div className="account-form-row">
        <div className="account-field">
          <label htmlFor={`${id}-client`}>{t("agents.client")}</label>
          <select id={`${id}-client`} value={client} onChange={(e) => { setClient(e.target.value as AgentClient); setCopied(""); }}>
            {agentClients.map((c) => <option key={c} value={c}>{t(`agents.clients.${c}`)}</option>)}
          </select>
        </div>
        <div className="account-field">
          <label htmlFor={`${id}-scope`}>{t("agents.scope")}</label>
          <select id={`${id}-scope`} value={scope} onChange={(e) => { setScope(e.target.value); setCopied(""); }}>
            <option value="">{t("agents.allServers")}</option>
            {enabled.map((s) => <option key={s.label} value={s.label}>{s.label}</option>)}
          </select>
        </div>
      </div>
      <pre className="agent-snippet" aria-label={t("agents.snippet")}><code>{snippet}</code></pre>
      <div className="new-token-value">
        <button type="button" onClick={copy}>{t("agents.copy")}</button>
        <span role="status">{copied && t(`tokens.new.${copied}`)}</span>
      </div>
      <p className="small">
        {scope
          ? t("agents.oneServer", { label: scope })
          : enabled.length === 0
            ? t("agents.noServers")
            : t("agents.servers", { labels: enabled.map((s) => s.label).join(", "), example: `${enabled[0].label}__…` })}
      </p>
      <p className="muted small">{t("agents.held")}</p>
    </section>
  );
}
