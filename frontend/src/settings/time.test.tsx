// Times that happened never read as future ("refreshed in 2 seconds").
import { render, screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import i18n from "../i18n";
import { RelativeTime } from "./time";

describe("RelativeTime", () => {
  it("a refresh that just happened says now, though the page's clock is 28 s old or the server's 2 s ahead", async () => {
    const stale = Date.now() - 28_000; // useNow ticks every 30 s
    render(<>
      <p data-testid="stale"><RelativeTime iso={new Date().toISOString()} now={stale} /></p>
      <p data-testid="ahead"><RelativeTime iso={new Date(Date.now() + 2_000).toISOString()} now={Date.now()} /></p>
      <p data-testid="before"><RelativeTime iso={new Date(Date.now() - 3 * 60_000).toISOString()} now={Date.now()} /></p>
    </>);
    expect(screen.getByTestId("stale")).toHaveTextContent(/^now$/);
    expect(screen.getByTestId("ahead")).toHaveTextContent(/^now$/);
    expect(screen.getByTestId("before")).toHaveTextContent("3 minutes ago");
  });

  it("in German too", async () => {
    await i18n.changeLanguage("de");
    render(<p data-testid="ahead"><RelativeTime iso={new Date(Date.now() + 2_000).toISOString()} now={Date.now() - 28_000} /></p>);
    expect(screen.getByTestId("ahead")).toHaveTextContent(/^jetzt$/);
  });
});
