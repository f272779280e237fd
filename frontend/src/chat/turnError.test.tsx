// A stopped turn says so once, in the page's language, without the server's
// English sentence or its code ("Stopped. the turn was cancelled … (cancelled)").
import { render } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import i18n from "../i18n";
import { TurnErrorRow } from "./items";

const cancelled = { code: "cancelled", message: "the turn was cancelled; what arrived before is kept", retryable: true };

describe("TurnErrorRow", () => {
  it("Stop: one sentence, no code", () => {
    const { container } = render(<TurnErrorRow error={cancelled} />);
    expect(container.querySelector(".turn-error-text")).toHaveTextContent(/^Stopped\. What arrived before is kept\.$/);
  });

  it("Stop, in German", async () => {
    await i18n.changeLanguage("de");
    const { container } = render(<TurnErrorRow error={cancelled} />);
    expect(container.querySelector(".turn-error-text")).toHaveTextContent(/^Gestoppt\. Was bis dahin ankam, bleibt erhalten\.$/);
  });

  it("a failure keeps the server's sentence and its code", () => {
    const { container } = render(<TurnErrorRow error={{ code: "upstream_error", message: "the provider answered 500", retryable: true }} />);
    expect(container.querySelector(".turn-error-text")).toHaveTextContent("The response did not finish. the provider answered 500 (upstream_error)");
  });
});
