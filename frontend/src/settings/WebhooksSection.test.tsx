import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { Webhook, WebhookDelivery } from "../api/types";
import { jsonResponse as json, mockFetch } from "../chat/testutil";
import i18n from "../i18n";
import { renderWithClient } from "../testing";
import { WebhooksSection } from "./WebhooksSection";

const secret = "whsec_s3cr3t_value_0123456789";
let hooks: Webhook[];
let deliveries: WebhookDelivery[];
let api: ReturnType<typeof mockFetch>;

const hook = (over: Partial<Webhook> = {}): Webhook => ({
  id: "wh_1", url: "https://hooks.example.com/a?token=%2A%2A%2A%2A", description: "", events: ["approval.required", "decision.recorded"],
  enabled: true, created_at: "2026-11-26T05:00:00Z", updated_at: "2026-11-26T05:00:00Z", ...over,
});

const delivery = (over: Partial<WebhookDelivery> = {}): WebhookDelivery => ({
  id: "whd_1", webhook_id: "wh_1", event: "ping", conversation_id: null, state: "pending", attempts: 0, status: null, error: null,
  latency_ms: null, next_attempt_at: "2026-11-26T05:01:00Z", delivered_at: null, created_at: "2026-11-26T05:01:00Z", attempt_log: [], ...over,
});

/** A tiny webhook store behind the API routes. */
beforeEach(() => {
  hooks = [hook()];
  deliveries = [];
  api = mockFetch({
    "GET /api/webhooks": () => json(200, { webhooks: hooks }),
    "POST /api/webhooks": ({ body }) => {
      const b = body as { url: string; events: Webhook["events"] };
      const created = hook({ id: "wh_2", url: b.url, events: b.events });
      hooks = [...hooks, created];
      return json(201, { ...created, secret });
    },
    "PATCH /api/webhooks/wh_1": ({ body }) => {
      hooks = hooks.map((h) => (h.id === "wh_1" ? { ...h, ...(body as Partial<Webhook>) } : h));
      return json(200, hooks[0]);
    },
    "DELETE /api/webhooks/wh_1": () => {
      hooks = hooks.filter((h) => h.id !== "wh_1");
      return new Response(null, { status: 204 });
    },
    "POST /api/webhooks/wh_1/test": () => {
      const d = delivery();
      deliveries = [{ ...d, state: "failed", attempts: 6, status: 500, error: "the receiver answered 500 Internal Server Error", next_attempt_at: null }];
      return json(202, d);
    },
    "GET /api/webhooks/wh_1/deliveries": () => json(200, { deliveries }),
  });
});
afterEach(() => {
  vi.unstubAllGlobals();
  void i18n.changeLanguage("en");
});

describe("WebhooksSection", () => {
  it("adds a webhook for the chosen events and shows its secret once", async () => {
    const user = userEvent.setup();
    const { client } = renderWithClient(<WebhooksSection />);
    await screen.findByRole("listitem", { name: /hooks\.example\.com\/a/ });
    await user.type(screen.getByLabelText("Webhook URL"), " https://hooks.example.com/b ");
    await user.click(screen.getByRole("checkbox", { name: /A decision was recorded/ }));
    await user.click(screen.getByRole("button", { name: "Add webhook" }));
    expect(api.calls.find((c) => c.method === "POST")?.body).toEqual({ url: "https://hooks.example.com/b", events: ["approval.required"] });

    const region = await screen.findByRole("region", { name: "New webhook secret" });
    expect(within(region).getByLabelText("Signing secret")).toHaveTextContent(secret);
    expect(region).toHaveTextContent("shown only this once");
    const row = await screen.findByRole("listitem", { name: "https://hooks.example.com/b" });
    expect(row).not.toHaveTextContent(secret);
    expect(JSON.stringify(client.getQueryCache().getAll().map((q) => q.state.data))).not.toContain(secret);
    await user.click(within(region).getByRole("button", { name: "I have copied it" }));
    expect(screen.queryByText(secret)).toBeNull();
  });

  it("refuses to add without a URL or without events", async () => {
    const user = userEvent.setup();
    renderWithClient(<WebhooksSection />);
    await screen.findByRole("listitem", { name: /hooks\.example\.com\/a/ });
    expect(screen.getByRole("button", { name: "Add webhook" })).toBeDisabled();
    await user.type(screen.getByLabelText("Webhook URL"), "https://hooks.example.com/b");
    await user.click(screen.getByRole("checkbox", { name: /An approval waits/ }));
    await user.click(screen.getByRole("checkbox", { name: /A decision was recorded/ }));
    expect(screen.getByRole("button", { name: "Add webhook" })).toBeDisabled();
  });

  it("sends a test and shows the delivery log with its failure", async () => {
    const user = userEvent.setup();
    renderWithClient(<WebhooksSection />);
    const item = await screen.findByRole("listitem", { name: /hooks\.example\.com\/a/ });
    await user.click(within(item).getByRole("button", { name: "Send test" }));
    const table = await within(item).findByRole("table", { name: "Delivery log" });
    const row = await within(table).findByRole("row", { name: /ping/ });
    expect(row).toHaveTextContent("failed");
    expect(row).toHaveTextContent("6");
    expect(row).toHaveTextContent("the receiver answered 500");
  });

  it("disables a webhook and deletes one only after confirming", async () => {
    const user = userEvent.setup();
    renderWithClient(<WebhooksSection />);
    const item = await screen.findByRole("listitem", { name: /hooks\.example\.com\/a/ });
    await user.click(within(item).getByRole("button", { name: "Disable" }));
    expect(api.calls.find((c) => c.method === "PATCH")?.body).toEqual({ enabled: false });
    await within(item).findByText("disabled");
    await user.click(within(item).getByRole("button", { name: "Delete" }));
    expect(api.calls.some((c) => c.method === "DELETE")).toBe(false);
    await user.click(within(item).getByRole("button", { name: "Delete webhook and its log" }));
    await waitFor(() => expect(screen.queryByRole("listitem")).toBeNull());
    expect(screen.getByText("No webhooks yet.")).toBeInTheDocument();
  });

  it("reads German", async () => {
    await i18n.changeLanguage("de");
    renderWithClient(<WebhooksSection />);
    expect(await screen.findByRole("button", { name: "Webhook hinzufügen" })).toBeInTheDocument();
    expect(screen.getByRole("checkbox", { name: /Eine Freigabe wartet/ })).toBeChecked();
  });
});
