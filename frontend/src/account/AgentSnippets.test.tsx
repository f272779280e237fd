import { screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { jsonResponse as json, mockFetch } from "../chat/testutil";
import { renderWithClient } from "../testing";
import { AgentSnippets, agentClients, agentSnippet } from "./AgentSnippets";

beforeEach(() => {
  mockFetch({
    "GET /api/mcp/servers": () => json(200, { servers: [
      { label: "demo", enabled: true, url: "http://127.0.0.1:8090/mcp" },
      { label: "crm", enabled: true, url: "https://crm.example/mcp" },
      { label: "old", enabled: false, url: "https://old.example/mcp" },
    ] }),
  });
});
afterEach(() => vi.unstubAllGlobals());

describe("AgentSnippets", () => {
  it("shows the chosen client's snippet for /mcp with the servers the person's agents will see", async () => {
    const user = userEvent.setup();
    renderWithClient(<AgentSnippets />);
    const region = screen.getByRole("region", { name: "Use Toolgate from your agents" });
    const snippet = within(region).getByLabelText("Configuration snippet");
    expect(snippet).toHaveTextContent(`claude mcp add --transport http toolgate ${window.location.origin}/mcp`);
    expect(snippet).toHaveTextContent("Authorization: Bearer $TOOLGATE_TOKEN");
    // The enabled servers, not the disabled one; tools are named label__tool at /mcp.
    expect(await within(region).findByText(/see the tools of demo, crm/)).toHaveTextContent("demo__…");
    const options = within(within(region).getByLabelText("Servers")).getAllByRole("option").map((o) => o.textContent);
    expect(options).toEqual(["Every server (/mcp)", "demo", "crm"]);

    await user.selectOptions(within(region).getByLabelText("Client"), "codex");
    expect(snippet).toHaveTextContent("[mcp_servers.toolgate]");
    expect(snippet).toHaveTextContent("bearer_token_env_var = \"TOOLGATE_TOKEN\"");
    await user.selectOptions(within(region).getByLabelText("Servers"), "crm");
    expect(snippet).toHaveTextContent(`url = "${window.location.origin}/mcp/crm"`);
    expect(within(region).getByText(/tools of crm/)).toBeInTheDocument();

    const writeText = vi.fn().mockResolvedValue(undefined);
    Object.defineProperty(navigator, "clipboard", { value: { writeText }, configurable: true });
    await user.click(within(region).getByRole("button", { name: "Copy snippet" }));
    expect(writeText).toHaveBeenCalledWith(agentSnippet("codex", `${window.location.origin}/mcp/crm`));
  });

  it("never puts a token in a snippet, for every client", () => {
    for (const c of agentClients) {
      const s = agentSnippet(c, "https://tg.example/mcp");
      expect(s).toContain("https://tg.example/mcp");
      expect(s).not.toMatch(/tg_[A-Za-z0-9]/);
      expect(s).toMatch(/TOOLGATE_TOKEN|toolgate-token/);
    }
  });
});
