// The signed-in person lives in TanStack Query under keys.me: null when
// signed out, the person once /api/auth/me (or a sign-in) answered. Signing
// in and out are mutations that set that entry. Components that show or hide
// admin-only things read it through useMe(); the API decides what anyone may
// do, this only keeps buttons that would answer 403 out of sight.
import { queryOptions, useMutation, useQueryClient, type QueryClient } from "@tanstack/react-query";
import { createContext, useContext } from "react";
import { ApiError, api } from "../api/client";
import { keys } from "../api/query";
import type { Me } from "../api/types";

/** GET /api/auth/me: the person, or null when nobody is signed in (401 is an answer, not an error). */
export const meQuery = queryOptions({
  queryKey: keys.me,
  queryFn: async (): Promise<Me | null> => {
    try {
      return await api.me();
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) return null;
      throw err;
    }
  },
});

/** GET /api/auth/status: how people sign in here (first-run setup, SSO, the offline demo's sign-in link). */
export const authStatusQuery = queryOptions({ queryKey: keys.authStatus, queryFn: () => api.authStatus() });

/** Someone signed in: nothing read as the one before stays, only who is signed in now. */
export function setSignedIn(client: QueryClient, me: Me) {
  client.removeQueries({ predicate: (q) => q.queryKey[0] !== "auth" });
  client.setQueryData(keys.me, me);
}

/** POST /api/auth/logout, then forget everything read while signed in. The session is gone either way. */
export function useSignOut(onDone: () => void) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: () => api.logout().then(() => undefined, () => undefined),
    onSettled: () => {
      onDone();
      client.clear();
      client.setQueryData(keys.me, null);
    },
  });
}

export const SessionContext = createContext<Me | null>(null);

/** The signed-in person, or null (tests, AUTH_MODE=none before /me answers). */
export function useMe(): Me | null {
  return useContext(SessionContext);
}

/** True when the signed-in person is an admin, or when nobody is known (no accounts: the old single-user app). */
export function useIsAdmin(): boolean {
  const me = useMe();
  return me === null || me.role === "admin";
}
