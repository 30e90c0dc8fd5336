/**
 * Compaction: giving a segment's free WebAssembly memory back (issue 14).
 *
 * A WebAssembly memory grows but never shrinks, and a retrain reserves its new lists' scan blocks
 * in one run from the top while the old lists still serve, so after it (and after many removes)
 * much of the memory is free blocks that only later adds would reuse: 288 B/row of memory at
 * 10 M rows after a rebuild against ~190 B/row live. Compaction lays every live block out in a
 * fresh arena sized to the live bytes, each partition's scan blocks in one run in
 * list order (the layout a retrain gives them) and its side blocks in another, then switches the
 * index over in one synchronous step: new block offsets, a new kernel instance on the new memory.
 * The old memory is then unreferenced and the GC frees it.
 *
 * Only block offsets change: chunk numbers, slots, rowIds and the id map stay as they are, so a
 * row keeps its slot and a search's reuse state stays valid. A retrain under way holds arena
 * offsets in its generator's locals, so compaction waits until none is (the index checks).
 */
import type { Arena } from "./arena.ts";
import type { Layout } from "./layout.ts";
import type { Partition } from "./partition.ts";

/**
 * The fresh memory holds the live bytes and no headroom: the first add after a compaction grows it
 * (memory.grow by ≥ 1/8 of it, in place: 0.04 ms for 26 MB on 200 MB, measured), and pages
 * never touched cost no RSS, while the memory's byte length is what the index reports.
 */
/** Below this much free memory a segment is never compacted automatically (not worth a copy). */
export const COMPACT_MIN_FREE_BYTES = 1 << 20;
/** Default share of a segment's memory that must be free before it is compacted automatically. */
export const COMPACT_FREE_SHARE = 0.25;

/** What compactions did so far (VectorIndex.compactions). */
export interface CompactionStats {
  /** Compactions run (automatic and `compact()`). */
  count: number;
  /** Bytes of WebAssembly memory given back in all (old memory − new memory, summed). */
  bytesGivenBack: number;
  /** Duration of the last and the longest compaction (ms, synchronous: no search runs meanwhile). */
  lastMs: number;
  maxMs: number;
  /** Largest old + new memory held at once during a compaction (both exist until the switch). */
  peakBytes: number;
  errors: number;
  lastError?: string;
}

export function emptyCompactionStats(): CompactionStats {
  return { count: 0, bytesGivenBack: 0, lastMs: 0, maxMs: 0, peakBytes: 0, errors: 0 };
}

/** Arena bytes a partition's live data needs: its chunks' scan and side blocks and its centroid run. */
export function partitionLiveBytes(L: Layout, p: Partition): number {
  let chunks = 0;
  for (const l of p.lists) chunks += l.chunks.length;
  return chunks * (L.scanBlockBytes + L.sideBlockBytes) + (p.centroids?.runBytes ?? 0);
}

/**
 * Copies partition `p`'s live blocks and centroids from `old` into `fresh` (scan blocks in one run,
 * list after list, chunk after chunk; side blocks in another) and returns the step that points
 * the partition at them. Nothing of `p` changes until that step runs, so a failure before it
 * (the fresh memory cannot grow) leaves the index as it was. Reserved scan blocks (list stashes)
 * are not carried over: later adds reserve new ones from the headroom.
 */
export function relocatePartition(L: Layout, old: Arena, fresh: Arena, p: Partition): () => void {
  if (p.target) throw new Error(`compaction: partition ${p.name} is being retrained`);
  const order: number[] = [];
  for (const l of p.lists) for (const c of l.chunks) order.push(c);
  let liveChunks = 0;
  for (const b of p.scanBlocks) if (b >= 0) liveChunks++;
  // Every live chunk belongs to exactly one list: anything else would lose or double rows.
  if (order.length !== liveChunks || new Set(order).size !== order.length) {
    throw new Error(`compaction: partition ${p.name} has ${liveChunks} live chunks but its lists hold ${order.length}`);
  }
  const scanBytes = L.scanBlockBytes, sideBytes = L.sideBlockBytes;
  const scanBlocks = p.scanBlocks.map(() => -1), sideBlocks = p.sideBlocks.map(() => -1);
  if (order.length > 0) {
    const scanRun = fresh.allocContiguous(scanBytes, order.length);
    const sideRun = fresh.allocContiguous(sideBytes, order.length);
    const src = old.views().u8, dst = fresh.views().u8;
    for (let i = 0; i < order.length; i++) {
      const c = order[i];
      const s = p.scanBlocks[c], d = p.sideBlocks[c];
      dst.set(src.subarray(s, s + scanBytes), scanRun + i * scanBytes);
      dst.set(src.subarray(d, d + sideBytes), sideRun + i * sideBytes);
      scanBlocks[c] = scanRun + i * scanBytes;
      sideBlocks[c] = sideRun + i * sideBytes;
    }
  }
  const cent = p.centroids;
  let centRun = -1;
  if (cent) {
    const run = fresh.allocRun(cent.runBytes);
    fresh.views().u8.set(old.views().u8.subarray(cent.run, cent.run + cent.runBytes), run.off);
    centRun = run.off;
  }
  return () => {
    p.scanBlocks = scanBlocks;
    p.sideBlocks = sideBlocks;
    for (const l of p.lists) l.scanStash.length = 0;
    if (cent && p.centroids === cent) {
      const shift = centRun - cent.run;
      cent.at += shift;
      cent.coarseAt += shift;
      cent.sumsAt += shift;
      cent.run = centRun;
    }
  };
}
