import { describe, expect, it } from "vitest";
import { href, parseRoute, safeNext } from "./router";

describe("router", () => {
  it("parses the account pages", () => {
    expect(parseRoute({ pathname: "/users", search: "" })).toEqual({ page: "users" });
    expect(parseRoute({ pathname: "/tokens", search: "" })).toEqual({ page: "tokens" });
    expect(parseRoute({ pathname: "/approvals/stats", search: "" })).toEqual({ page: "approvalStats" });
    expect(href({ page: "approvalStats" })).toBe("/approvals/stats");
    expect(parseRoute({ pathname: "/inbox", search: "" })).toEqual({ page: "inbox" });
    expect(href({ page: "inbox" })).toBe("/inbox");
    expect(parseRoute({ pathname: "/setup", search: "?token=abc" })).toEqual({ page: "setup", token: "abc" });
    expect(parseRoute({ pathname: "/login", search: "?next=%2Fc%2Fconv_1" })).toEqual({ page: "login", next: "/c/conv_1" });
    expect(href({ page: "login", next: "/settings?server=demo" })).toBe("/login?next=%2Fsettings%3Fserver%3Ddemo");
  });

  it("reads a link to one request of a conversation (a webhook's) and writes it back", () => {
    const r = parseRoute({ pathname: "/c/conv_1", search: "", hash: "#approval-mcpr_8091" });
    expect(r).toEqual({ page: "chat", conversationId: "conv_1", approval: "mcpr_8091" });
    expect(href(r)).toBe("/c/conv_1#approval-mcpr_8091");
    expect(parseRoute({ pathname: "/c/conv_1", search: "", hash: "#other" })).toEqual({ page: "chat", conversationId: "conv_1" });
  });

  it("reads a signed approval link: the request from the path, the token from the fragment", () => {
    const r = parseRoute({ pathname: "/link/mcpr_8091", search: "", hash: "#tgl_abc-_9" });
    expect(r).toEqual({ page: "link", approvalRequestId: "mcpr_8091", token: "tgl_abc-_9" });
    expect(href(r)).toBe("/link/mcpr_8091#tgl_abc-_9");
    expect(parseRoute({ pathname: "/link/mcpr_1", search: "" })).toEqual({ page: "link", approvalRequestId: "mcpr_1", token: "" });
  });

  it.each(["https://evil.example/", "//evil.example/x", "/\\evil.example", "javascript:alert(1)", "/login?next=/x", "/setup?token=t", ""])(
    "never returns to %j after signing in", (next) => {
      expect(safeNext(next)).toBeUndefined();
      expect(parseRoute({ pathname: "/login", search: `?next=${encodeURIComponent(next)}` })).toEqual({ page: "login", next: undefined });
    });
});
