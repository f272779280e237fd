// Test rendering: the component inside a fresh QueryClient (no retries, no
// cache shared between tests) and the app's i18n.
import { QueryClientProvider, type QueryClient } from "@tanstack/react-query";
import { render, type RenderOptions } from "@testing-library/react";
import type { ReactElement, ReactNode } from "react";
import { newTestQueryClient } from "./api/query";

export function renderWithClient(ui: ReactElement, opts: RenderOptions & { client?: QueryClient } = {}) {
  const client = opts.client ?? newTestQueryClient();
  const wrapper = ({ children }: { children: ReactNode }) => <QueryClientProvider client={client}>{children}</QueryClientProvider>;
  return { client, ...render(ui, { ...opts, wrapper }) };
}
