import { describe, expect, test } from "vitest";
import { properties } from "./properties.ts";

/** A few hundred cases each in CI (a few seconds in all); bench/properties.ts runs 10⁵. */
const RUNS = 300;

describe("hostile-input properties", () => {
  for (const [name, run] of Object.entries(properties)) {
    test(name, async () => {
      await expect(run(RUNS)).resolves.toBeUndefined();
    });
  }
});
