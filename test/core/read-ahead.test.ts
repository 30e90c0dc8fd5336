/**
 * readAhead (src/core/read-ahead.ts): the OCR stage asks ffmpeg's decode for frames ahead of the
 * reader. Items come out in order, at most `depth` are asked for ahead, a failure comes out where
 * its item would have, and stopping early ends the source (its `finally` runs: the decode's
 * process is disposed).
 */
import { describe, expect, test } from "vitest";
import { readAhead } from "../../src/core/read-ahead.ts";

/** A source of `n` numbers that records how many were produced and whether it was ended. */
function counted(n: number, failAt = -1) {
  const state = { produced: 0, ended: false };
  async function* gen(): AsyncGenerator<number> {
    try {
      for (let i = 0; i < n; i++) {
        await Promise.resolve();
        if (i === failAt) throw new Error(`failed at ${i}`);
        state.produced++;
        yield i;
      }
    } finally {
      state.ended = true;
    }
  }
  return { state, source: gen() };
}

const settle = async () => {
  for (let i = 0; i < 50; i++) await Promise.resolve();
};

describe("readAhead", () => {
  test("every item, in order, with at most `depth` produced ahead of the consumer", async () => {
    const { state, source } = counted(20);
    const seen: number[] = [];
    for await (const x of readAhead(source, 3)) {
      await settle(); // the source runs ahead while the consumer is busy …
      seen.push(x);
      // … by at most 3 items beyond the one being consumed.
      expect(state.produced - (x + 1)).toBeLessThanOrEqual(3);
      if (x < 16) expect(state.produced - (x + 1)).toBe(3);
    }
    expect(seen).toEqual([...Array(20).keys()]);
    expect(state.ended).toBe(true);
  });

  test("a failure of the source comes out after the items before it", async () => {
    const { source } = counted(10, 4);
    const seen: number[] = [];
    await expect(
      (async () => {
        for await (const x of readAhead(source, 3)) seen.push(x);
      })(),
    ).rejects.toThrow("failed at 4");
    expect(seen).toEqual([0, 1, 2, 3]);
  });

  test("stopping early ends the source, having produced no more than was asked for", async () => {
    const { state, source } = counted(1000);
    for await (const x of readAhead(source, 4)) if (x === 2) break;
    expect(state.ended).toBe(true);
    expect(state.produced).toBeLessThanOrEqual(3 + 4);
  });
});
