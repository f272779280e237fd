import { render, screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import type { ServerHealth } from "../api/types";
import { HealthBadge, HealthDetail } from "./ServerHealth";

describe("ServerHealth of a slow server", () => {
  const slow: ServerHealth = {
    status: "slow", since: "2026-11-28T14:03:12Z", checked_at: "2026-11-28T14:05:00Z", ok_at: "2026-11-28T14:05:00Z",
    last_error: "listing its tools took 8.2s, more than the limit of 3s (MCP_LIST_TIME_LIMIT)", list_ms: 8200, failures: 0,
  };

  it("says Slow, why, and that chats leave it out until it is fast again", () => {
    render(<><HealthBadge health={slow} /><HealthDetail health={slow} now={Date.parse("2026-11-28T14:06:00Z")} /></>);
    expect(screen.getByText("Slow")).toHaveClass("health-badge");
    const detail = screen.getByRole("status");
    expect(detail).toHaveTextContent(/Slow to list its tools since/);
    expect(detail).toHaveTextContent(/more than the limit of 3s \(MCP_LIST_TIME_LIMIT\)/);
    expect(detail).toHaveTextContent(/Chats leave this server out until it lists its tools fast again/);
  });
});
