// The signed-in person, for components that show or hide admin-only things.
// The API decides what anyone may do; this only keeps buttons that would
// answer 403 out of sight.
import { createContext, useContext } from "react";
import type { Me } from "../api/types";

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
