/**
 * Background retraining: `add` only queues a retrain, which runs in short slices between
 * event-loop turns; meanwhile searches see every row exactly once, adds and removes keep working,
 * and after the swap the new lists hold every live row. Small `trainAt` on seeded data.
 */
import { describe, expect, it } from "vitest";
import { generateDataset, generateQueries } from "../../bench/lib/synthetic.ts";
import { createMemoryVectorSource, createVectorIndex, type VectorRow } from "../../src/vector/index.ts";
import { exactTopK, row } from "./helpers.ts";

const dim = 512;
const ds = generateDataset({ n: 24_000, dim, kind: "clustered", seed: 71, collections: 4, framesPerVideo: 120 });
const Q = generateQueries(ds, 6, "text", 72);
const q = (i: number) => Q.subarray(i * dim, (i + 1) * dim);
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("background retraining", () => {
  it("does not block the event loop; searches stay exact, adds and removes during it are kept", async () => {
    const source = createMemoryVectorSource();
    // exactBelow above the partition: every search rescores all allowed rows, so any row missing
    // from (or doubled in) the lists while they are rebuilt would show against brute force.
    const idx = createVectorIndex({ dim, source, trainAt: 8192, lists: 64, exactBelow: 1 << 20 });
    const live = new Set<number>();
    const rowsOf = (from: number, to: number): VectorRow[] => {
      const rows: VectorRow[] = [];
      for (let i = from; i < to; i++) {
        source.set(1000 + i, row(ds, i));
        live.add(i);
        rows.push({
          rowId: 1000 + i,
          vector: row(ds, i),
          partition: "acct",
          groupA: ds.collection[i],
          groupB: ds.video[i],
        });
      }
      return rows;
    };
    const exact = (i: number) => exactTopK(ds, q(i), 10, (j) => live.has(j)).map((r) => r.rowId);
    const got = (i: number) => idx.search(q(i), { partition: "acct", k: 10 }).map((r) => r.rowId);

    for (let i = 0; i < 8000; i += 2000) idx.add(rowsOf(i, i + 2000));
    expect(idx.listCount("acct")).toBe(1);
    // The batch crossing trainAt returns at once: the retrain is only queued.
    let t0 = performance.now();
    idx.add(rowsOf(8000, 16_000));
    const addMs = performance.now() - t0;
    // Nothing of the retrain ran inside `add`: queued, no slice yet. (A wall-clock bound of 1 s for
    // the 8 000 encodes (~8 µs each unloaded) failed at load ~20 once 2-bit encoding cost ~1.7× the
    // 4-bit; the bound below only catches a retrain of seconds.)
    expect(idx.training.pending).toBe(1);
    expect(idx.training.slices).toBe(0);
    expect(idx.training.cpuMs).toBe(0);
    expect(addMs).toBeLessThan(4000);

    // Each event-loop turn is timed from here, in CPU time of this process: on the shared box
    // (load ~15 on 2 cores) wall time mostly measures other processes.
    let turns = 0,
      maxGap = 0,
      maxGapCpu = 0,
      next = 16_000,
      checks = 0;
    const removed: number[] = [];
    while (idx.training.pending > 0) {
      t0 = performance.now();
      const c0 = process.cpuUsage();
      await turn();
      const cpu = process.cpuUsage(c0);
      maxGapCpu = Math.max(maxGapCpu, (cpu.user + cpu.system) / 1000);
      maxGap = Math.max(maxGap, performance.now() - t0);
      turns++;
      expect(turns).toBeLessThan(100_000);
      if (turns % 3 === 0) {
        // Searches during the retrain: identical to brute force over the live rows.
        expect(got(checks % 6)).toEqual(exact(checks % 6));
        checks++;
      }
      if (turns % 4 === 0 && next < 20_000) {
        idx.add(rowsOf(next, next + 250));
        next += 250;
      }
      if (turns % 5 === 0) {
        const victim = removed.length * 37;
        if (live.delete(victim)) {
          source.delete(1000 + victim);
          removed.push(victim);
          expect(idx.remove([1000 + victim])).toBe(1);
        }
      }
    }
    // Slices are bounded (~8 ms each; 100 ms is generous) and the retrain was spread over many:
    // run inside `add` it would have held the loop for all of training.cpuMs at once.
    const t = idx.training;
    expect(t.retrains).toBe(1);
    expect(t.slices).toBeGreaterThan(3);
    expect(maxGapCpu).toBeLessThan(100);
    expect(t.maxSliceCpuMs).toBeLessThan(100);
    expect(t.maxSliceCpuMs).toBeLessThan(t.cpuMs / 3);
    console.log(
      `retrain: ${t.slices} slices, longest ${t.maxSliceCpuMs.toFixed(1)} ms CPU (${t.maxSliceMs.toFixed(1)} ms wall), ` +
        `${t.cpuMs.toFixed(0)} ms CPU in all; longest turn seen by the test ${maxGapCpu.toFixed(1)} ms CPU / ${maxGap.toFixed(1)} ms wall`,
    );
    expect(checks).toBeGreaterThan(0);
    expect(removed.length).toBeGreaterThan(0);
    expect(next).toBeGreaterThan(16_000);

    // After the swap: lists in place, every live row present once, nothing removed comes back.
    expect(idx.listCount("acct")).toBeGreaterThan(32);
    expect(idx.partitionSize("acct")).toBe(live.size);
    for (let i = 0; i < 6; i++) expect(got(i)).toEqual(exact(i));
    for (const v of removed) expect(idx.has(1000 + v)).toBe(false);
    // Rows added during the retrain are in the new lists: a probing search finds each.
    for (let i = 16_000; i < next; i += 97) {
      const top = idx.search(row(ds, i), { partition: "acct", k: 1, probe: 0.05 });
      expect(top[0].rowId).toBe(1000 + i);
    }
  }, 120_000);

  it("a partition emptied during its retrain drops the retrain; rebuild finishes one under way", async () => {
    const source = createMemoryVectorSource();
    const idx = createVectorIndex({ dim, source, trainAt: 4096, lists: 16 });
    const rows: VectorRow[] = [];
    for (let i = 0; i < 6000; i++) {
      source.set(1000 + i, row(ds, i));
      rows.push({ rowId: 1000 + i, vector: row(ds, i), partition: i % 2 ? "b" : "a", groupA: 0, groupB: ds.video[i] });
    }
    idx.add(rows.filter((r) => r.partition === "a"));
    idx.add(rows.filter((r) => r.partition === "b"));
    expect(idx.training.pending).toBe(0); // 3 000 rows each: below trainAt
    idx.add(rows.slice(0, 4200).map((r) => ({ ...r, rowId: r.rowId + 100_000, partition: "c" })));
    for (let i = 0; i < 4200; i++) source.set(101_000 + i, row(ds, i));
    expect(idx.training.pending).toBe(1);
    await turn(); // under way
    expect(idx.remove(Array.from({ length: 4200 }, (_, i) => 101_000 + i))).toBe(4200);
    expect(idx.training.pending).toBe(0);
    expect(idx.partitionSize("c")).toBe(0);
    await idx.whenTrained();
    // "a" grows past trainAt: its retrain is queued; rebuild runs it now, and only it (it has not
    // read the rows yet, so it trains on all of them).
    const more: VectorRow[] = [];
    for (let i = 6000; i < 8000; i++) {
      source.set(1000 + i, row(ds, i));
      more.push({ rowId: 1000 + i, vector: row(ds, i), partition: "a", groupA: 0, groupB: ds.video[i] });
    }
    idx.add(more);
    expect(idx.training.pending).toBe(1);
    const retrains = idx.training.retrains;
    idx.rebuild("a");
    expect(idx.training.pending).toBe(0);
    expect(idx.training.retrains).toBe(retrains);
    expect(idx.listCount("a")).toBeGreaterThan(8);
    expect(idx.partitionSize("a")).toBe(5000);
    for (let i = 0; i < 8000; i += 331) {
      if (i < 6000 && i % 2) continue;
      expect(idx.search(row(ds, i), { partition: "a", k: 1, probe: 0.1 })[0].rowId).toBe(1000 + i);
    }
    // Nothing queued: rebuild retrains. One already under way trained on the rows of its start:
    // rebuild finishes it, then retrains on the rows as they are now.
    idx.rebuild("a");
    expect(idx.training.retrains).toBe(retrains + 1);
    const late: VectorRow[] = [];
    for (let i = 8000; i < 24_000; i++) {
      source.set(1000 + i, row(ds, i));
      late.push({ rowId: 1000 + i, vector: row(ds, i), partition: "a", groupA: 0, groupB: ds.video[i] });
    }
    idx.add(late);
    expect(idx.training.pending).toBe(1);
    await turn();
    expect(idx.training.pending).toBe(1);
    idx.rebuild("a");
    expect(idx.training.retrains).toBe(retrains + 3);
    expect(idx.partitionSize("a")).toBe(21_000);
  }, 60_000);
});
