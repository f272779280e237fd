import { describe, expect, it } from "vitest";
import { resources } from "./index";

type Tree = { [k: string]: string | Tree };
const flat = (t: Tree, p = ""): string[] =>
  Object.entries(t).flatMap(([k, v]) => (typeof v === "string" ? [p + k] : flat(v, p + k + ".")));

describe("translations", () => {
  for (const ns of Object.keys(resources.en) as (keyof typeof resources.en)[]) {
    it(`${ns}: English and German have the same keys, none empty`, () => {
      const en = flat(resources.en[ns] as Tree).sort();
      const de = flat(resources.de[ns] as Tree).sort();
      expect(de).toEqual(en);
      for (const lng of ["en", "de"] as const) {
        const t = resources[lng][ns] as Tree;
        for (const k of flat(t)) {
          const v = k.split(".").reduce<string | Tree>((o, p) => (o as Tree)[p], t);
          expect(v, `${lng}/${ns}: ${k}`).not.toBe("");
        }
      }
    });
  }
});
