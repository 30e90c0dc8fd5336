/**
 * The warm-up pass after a failed page (the store erred): it resumes from its cursor, waiting
 * 1 s, then twice as long for each failure in a row up to 30 s, and back to 1 s after a page
 * that loads — so a page that always fails does not log every second.
 */
import { afterEach, expect, it, vi } from "vitest";
import { IndexWarmer, type WarmableIndex } from "../../src/search/index-warmer.ts";

afterEach(() => vi.useRealTimers());

it("retries a failed page after 1, 2, 4 … 30 s, and from 1 s again once a page loads", async () => {
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "setImmediate", "clearImmediate", "performance", "Date"] });
  const calls: number[] = [];
  // Pages: 7 failures, one page that loads, 1 failure, then the last page.
  const script = ["fail", "fail", "fail", "fail", "fail", "fail", "fail", "page", "fail", "last"];
  let rows = 0;
  const index: WarmableIndex = {
    beginWarm: async () => {},
    accountWarm: async () => false,
    warmStep: async () => {
      calls.push(Date.now());
      const step = script.shift();
      if (step === "fail") throw new Error("database is locked");
      rows += 10;
      return step !== "last";
    },
    get warmProgress() {
      return { rows, fraction: rows / 20, done: script.length === 0 };
    },
  };
  const errors: number[] = [];
  const logger = {
    debug() {},
    info() {},
    warn() {},
    error: (_m: string, f?: Record<string, unknown>) => errors.push(Number(f?.retry_ms)),
    child() {
      return logger;
    },
  };
  const warmer = new IndexWarmer(index, { sliceMs: 1 }, logger as never);
  const t0 = Date.now();
  await warmer.start();
  await vi.runAllTimersAsync();
  expect(warmer.status().state).toBe("warm");
  expect(errors).toEqual([1000, 2000, 4000, 8000, 16000, 30000, 30000, 1000]);
  // Each try came after the wait the previous failure announced.
  const gaps = calls.slice(1).map((t, i) => t - calls[i]);
  expect(gaps.slice(0, 7)).toEqual([1000, 2000, 4000, 8000, 16000, 30000, 30000]);
  expect(gaps[8]).toBe(1000);
  expect(calls[0] - t0).toBeLessThan(1000);
});
