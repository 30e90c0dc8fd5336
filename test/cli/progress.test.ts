import { describe, expect, test } from "vitest";
import { ProgressBar } from "../../src/cli/progress.ts";

describe("ProgressBar (cli-progress)", () => {
  test("not a terminal: whole lines, no carriage returns or escape codes; the last state at done()", () => {
    let out = "";
    const bar = new ProgressBar((s) => void (out += s), false, 10);
    bar.update(0, 4, "queueing a.mp4");
    bar.update(2, 4, "queueing c.mp4");
    bar.update(4, 4, "all queued");
    bar.done();
    const lines = out.split("\n").filter(Boolean);
    expect(lines[0]).toBe("[----------]   0% queueing a.mp4");
    expect(lines.at(-1)).toBe("[##########] 100% all queued");
    expect(out).not.toMatch(/\r|\x1b/);
  });

  test("a terminal: redrawn in place on one line", () => {
    let out = "";
    const bar = new ProgressBar((s) => void (out += s), true, 10);
    bar.update(1, 2, "half");
    bar.done();
    expect(out).toContain("[#####-----]  50% half");
    expect(out).toMatch(/\x1b\[/); // cursor moves: the same line is redrawn
  });

  test("after done() the next update starts a new bar (ingest: queueing, then indexing)", () => {
    let out = "";
    const bar = new ProgressBar((s) => void (out += s), false, 4);
    bar.update(1, 1, "queued");
    bar.done();
    bar.update(0, 2, "0/2 indexed");
    bar.update(2, 2, "2/2 indexed");
    bar.done();
    expect(out.split("\n").filter(Boolean).at(-1)).toBe("[####] 100% 2/2 indexed");
  });
});
