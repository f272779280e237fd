import { useEffect, useState } from "react";
import { api } from "./api/client";
import type { Info } from "./api/types";
import { ChatPage } from "./chat/ChatPage";
import { AuditPage } from "./settings/AuditPage";
import { SettingsPage } from "./settings/SettingsPage";
import { linkProps, useRoute } from "./router";

export function App() {
  const route = useRoute();
  const [info, setInfo] = useState<Info | null>(null);
  useEffect(() => {
    api.info().then(setInfo, () => setInfo(null));
  }, []);

  return (
    <div className="app">
      <header className="topbar">
        <a className="brand" {...linkProps({ page: "chat" })}>Toolgate</a>
        <nav aria-label="Main">
          <a {...linkProps({ page: "chat" })} aria-current={route.page === "chat" ? "page" : undefined}>Chat</a>
          <a {...linkProps({ page: "settings" })} aria-current={route.page === "settings" ? "page" : undefined}>Tools &amp; policies</a>
          <a {...linkProps({ page: "audit" })} aria-current={route.page === "audit" ? "page" : undefined}>Audit log</a>
        </nav>
        {info && (
          <span className={info.offline ? "mode offline" : "mode"} title={info.offline ? "No OPENAI_API_KEY: answers come from the built-in emulator" : info.base_url}>
            {info.offline ? "Offline demo (emulated model)" : info.model}
          </span>
        )}
      </header>
      <main className="content">
        {route.page === "chat" && <ChatPage conversationId={route.conversationId} />}
        {route.page === "settings" && <SettingsPage focusServer={route.server} focusTool={route.tool} />}
        {route.page === "audit" && <AuditPage />}
      </main>
    </div>
  );
}
