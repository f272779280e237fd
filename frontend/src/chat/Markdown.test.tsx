import { render, screen } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import { Markdown } from "../markdown/Markdown";

describe("Markdown", () => {
  it("never renders raw HTML", () => {
    const { container } = render(
      <Markdown text={'Look: <img src=x onerror="alert(1)"> and\n\n<script>alert(2)</script>\n\n<b onclick="x()">bold?</b> **real bold**'} />,
    );
    expect(container.querySelector("img")).toBeNull();
    expect(container.querySelector("script")).toBeNull();
    expect(container.querySelector("b")).toBeNull();
    expect(container.querySelector("[onerror], [onclick]")).toBeNull();
    expect(screen.getByText("real bold").tagName).toBe("STRONG");
    expect(container.textContent).toContain("Look:");
  });

  it("opens links in a new tab without opener or referrer", () => {
    render(<Markdown text="See [the docs](https://example.com/docs) or mail <mailto:a@example.com>." />);
    const link = screen.getByRole("link", { name: "the docs" });
    expect(link).toHaveAttribute("href", "https://example.com/docs");
    expect(link).toHaveAttribute("target", "_blank");
    expect(link.getAttribute("rel")).toContain("noopener");
    expect(link.getAttribute("rel")).toContain("noreferrer");
    expect(screen.getByRole("link", { name: "mailto:a@example.com" })).toHaveAttribute("href", "mailto:a@example.com");
  });

  it("drops links that are not http, https or mailto", () => {
    const { container } = render(<Markdown text="[click me](javascript:alert(1)) [data](data:text/html,hi) [rel](/settings)" />);
    expect(screen.queryByRole("link")).toBeNull();
    expect(container.querySelector("a")).toBeNull();
    expect(screen.getByText("click me")).toBeInTheDocument();
  });

  it("does not load images until asked, then loads them without a referrer", async () => {
    const { container } = render(<Markdown text="![a rainy street](https://img.example.com/rain.png)" />);
    expect(container.querySelector("img")).toBeNull();
    expect(screen.getByText("a rainy street")).toBeInTheDocument();
    const load = screen.getByRole("button", { name: "Load image from img.example.com" });
    await userEvent.click(load);
    const img = screen.getByRole("img", { name: "a rainy street" });
    expect(img).toHaveAttribute("src", "https://img.example.com/rain.png");
    expect(img).toHaveAttribute("referrerpolicy", "no-referrer");
    expect(screen.queryByRole("button", { name: /Load image/ })).toBeNull();
  });

  it("shows images with a non-http source as text only", () => {
    const { container } = render(<Markdown text="![secret](javascript:alert(1))" />);
    expect(container.querySelector("img")).toBeNull();
    expect(screen.queryByRole("button")).toBeNull();
    expect(screen.getByText("[image: secret]")).toBeInTheDocument();
  });

  it("renders code blocks, inline code and GFM tables", () => {
    const { container } = render(<Markdown text={"Use `list_forecasts`:\n\n```json\n{\"city\": \"Oslo\"}\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |"} />);
    expect(container.querySelector("pre code")?.textContent).toBe('{"city": "Oslo"}\n');
    expect(screen.getByText("list_forecasts").tagName).toBe("CODE");
    expect(screen.getByRole("table")).toBeInTheDocument();
    expect(screen.getByRole("cell", { name: "2" })).toBeInTheDocument();
  });
});
