// State that belongs to one conversation: another conversation starts from
// the initial value (derived, so switching needs no effect), and a setter
// called late for the conversation the person left changes nothing they see.
import { useCallback, useState } from "react";

export function useScoped<T>(scope: string | undefined, initial: T): [T, (v: T | ((cur: T) => T)) => void] {
  const [state, setState] = useState<{ scope: string | undefined; value: T }>({ scope, value: initial });
  const value = state.scope === scope ? state.value : initial;
  const set = useCallback((v: T | ((cur: T) => T)) => {
    setState((cur) => {
      const base = cur.scope === scope ? cur.value : initial;
      return { scope, value: typeof v === "function" ? (v as (c: T) => T)(base) : v };
    });
  }, [scope, initial]);
  return [value, set];
}
