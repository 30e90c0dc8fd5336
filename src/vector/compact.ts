/**
 * Compaction: giving a segment's free WebAssembly memory back (issue 14).
 *
 * A WebAssembly memory grows but never shrinks, and a retrain reserves its new lists' scan blocks
 * in one run from the top while the old lists still serve, so after it (and after many removes)
 * much of the memory is free blocks that only later adds would reuse: 288 B/row of memory at
 * 10 M rows after a rebuild against ~190 B/row live. Compaction lays every live block out in a
 * fresh arena sized to the live bytes, each partition's scan blocks in one run in list order (the
 * layout a retrain gives them) and its side blocks in another, copying a few chunks per step in
 * slices between event-loop turns (the old memory serves meanwhile; writes mark chunks to copy
 * again), then switches the index over in one synchronous step: new block offsets, a new kernel
 * instance on the new memory. The old memory is then unreferenced and the GC frees it.
 *
 * Only block offsets change: chunk numbers, slots, rowIds and the id map stay as they are, so a
 * row keeps its slot and a search's reuse state stays valid. A retrain under way holds arena
 * offsets in its generator's locals, so compaction waits until none is (the index checks).
 */
import type { Arena } from "./arena.ts";
import type { Layout } from "./layout.ts";
import type { Partition } from "./partition.ts";

// The fresh memory holds the live bytes and no headroom: the first add after a compaction grows it
// (memory.grow by ≥ 1/8 of it, in place: 0.04 ms for 26 MB on 200 MB, measured), pages never
// touched cost no RSS, and the memory's byte length is what the index reports.

/** Below this much free memory a segment is never compacted automatically (not worth a copy). */
export const COMPACT_MIN_FREE_BYTES = 1 << 20;
/** Default share of a segment's memory that must be free before it is compacted automatically. */
export const COMPACT_FREE_SHARE = 0.25;

/** What compactions did so far (VectorIndex.compactions). */
export interface CompactionStats {
  /** Compactions finished (automatic and `compact()`). */
  count: number;
  /** A compaction under way (copying between event-loop turns): 1 per segment. */
  pending: number;
  /** Compactions given up because a retrain began meanwhile (it holds offsets in the old memory). */
  abandoned: number;
  /** Bytes of WebAssembly memory given back in all (old memory − new memory, summed). */
  bytesGivenBack: number;
  /** Work of the last and the largest compaction (wall ms of its slices and switch added up), and the last one's CPU ms. */
  lastMs: number;
  maxMs: number;
  lastCpuMs: number;
  /** Event-loop turns spent compacting (start, slices of copying, switches), the longest (wall ms), the most CPU one took. */
  slices: number;
  maxSliceMs: number;
  maxSliceCpuMs: number;
  /** Largest old + new memory held at once during a compaction (both exist until the switch). */
  peakBytes: number;
  errors: number;
  lastError?: string;
}

export function emptyCompactionStats(): CompactionStats {
  return {
    count: 0,
    pending: 0,
    abandoned: 0,
    bytesGivenBack: 0,
    lastMs: 0,
    maxMs: 0,
    lastCpuMs: 0,
    slices: 0,
    maxSliceMs: 0,
    maxSliceCpuMs: 0,
    peakBytes: 0,
    errors: 0,
  };
}

/** Arena bytes a partition's live data needs: its chunks' scan and side blocks and its centroid run. */
export function partitionLiveBytes(L: Layout, p: Partition): number {
  let chunks = 0;
  for (const l of p.lists) chunks += l.chunks.length;
  return chunks * (L.scanBlockBytes + L.sideBlockBytes) + (p.centroids?.runBytes ?? 0);
}

/** Chunks copied between checks of the clock within a slice. */
const STEP_CHUNKS = 16;
/**
 * Most chunks copied in one slice (~1.1 MB for 512 dims: ~1–3 ms with the fresh pages' first-touch
 * faults), whatever the clock says: the copy yields to searches often, and a compaction of even a
 * small index spans several turns (tests rely on that to exercise writes during it).
 */
const SLICE_CHUNKS = 64;

/** What a compaction copies of one partition: its chunks in list order and where each went. */
interface PartCopy {
  p: Partition;
  order: number[];
  next: number;
  /** Fresh-arena blocks by chunk number (−1: none yet). */
  scan: number[];
  side: number[];
  /** The centroids copied (a retrain replaces them: the compaction is then given up) and where. */
  cent: Partition["centroids"];
  centRun: number;
}

/**
 * One compaction of a segment. Started between searches: the fresh arena (sized to the live bytes)
 * gets the scratch runs and each partition's centroids and scan / side runs reserved, then `step`
 * copies chunks into it a few at a time — between event-loop turns while the old memory keeps
 * serving searches, adds and removes, which mark the chunks they write (Partition.dirty) — and
 * `finish` copies what changed since, builds the new offsets and returns the switch. Nothing of the
 * index changes before the switch, so a compaction given up (a retrain began: it holds old
 * offsets) or failing leaves it as it was.
 */
export class Compaction {
  private readonly parts: PartCopy[] = [];
  private current = 0;
  /** Chunks copied (slices) and copied again (dirty) at the switch, for stats and tests. */
  copied = 0;
  recopied = 0;

  constructor(
    private readonly L: Layout,
    private readonly old: Arena,
    readonly fresh: Arena,
    partitions: Partition[],
  ) {
    for (const p of partitions) {
      if (p.target) throw new Error(`compaction: partition ${p.name} is being retrained`);
      const order: number[] = [];
      for (const l of p.lists) for (const c of l.chunks) order.push(c);
      let liveChunks = 0;
      for (const b of p.scanBlocks) if (b >= 0) liveChunks++;
      // Every live chunk belongs to exactly one list: anything else would lose or double rows.
      if (order.length !== liveChunks || new Set(order).size !== order.length) {
        throw new Error(
          `compaction: partition ${p.name} has ${liveChunks} live chunks but its lists hold ${order.length}`,
        );
      }
      const copy: PartCopy = {
        p,
        order,
        next: 0,
        scan: p.scanBlocks.map(() => -1),
        side: p.sideBlocks.map(() => -1),
        cent: p.centroids,
        centRun: -1,
      };
      if (order.length > 0) {
        const scanRun = fresh.allocContiguous(L.scanBlockBytes, order.length),
          sideRun = fresh.allocContiguous(L.sideBlockBytes, order.length);
        for (let i = 0; i < order.length; i++) {
          copy.scan[order[i]] = scanRun + i * L.scanBlockBytes;
          copy.side[order[i]] = sideRun + i * L.sideBlockBytes;
        }
      }
      if (p.centroids) {
        // Centroids change only in a retrain, which ends the compaction: copied once, now.
        const c = p.centroids;
        copy.centRun = fresh.allocRun(c.runBytes).off;
        fresh.views().u8.set(old.views().u8.subarray(c.run, c.run + c.runBytes), copy.centRun);
      }
      p.dirty = new Set();
      this.parts.push(copy);
    }
  }

  /** Copies chunks until `untilMs` (performance.now()), `maxChunks` or the end; true once every chunk was copied. */
  step(untilMs: number, maxChunks = SLICE_CHUNKS): boolean {
    let budget = maxChunks;
    while (this.current < this.parts.length && budget > 0) {
      const part = this.parts[this.current];
      const end = Math.min(part.order.length, part.next + Math.min(STEP_CHUNKS, budget));
      budget -= end - part.next;
      for (; part.next < end; part.next++) this.copyChunk(part, part.order[part.next]);
      if (part.next === part.order.length) this.current++;
      if (performance.now() >= untilMs) break;
    }
    return this.current === this.parts.length;
  }

  /**
   * Copies the rest and what changed since it was copied, and returns the step that points each
   * partition at its fresh blocks (run it with the arena's `adopt`). `holds(p)`: p is still live.
   */
  finish(holds: (p: Partition) => boolean, added: Partition[]): () => void {
    this.step(Infinity, Infinity);
    const L = this.L,
      fresh = this.fresh;
    const known = new Set(this.parts.map((c) => c.p));
    // Partitions begun during the compaction: copied whole now (every chunk counts as written).
    for (const p of added) {
      if (known.has(p)) continue;
      const dirty = new Set<number>();
      p.scanBlocks.forEach((b, c) => b >= 0 && dirty.add(c));
      p.dirty = dirty;
      this.parts.push({ p, order: [], next: 0, scan: [], side: [], cent: null, centRun: -1 });
      if (p.centroids) throw new Error(`compaction: partition ${p.name} was trained during it`);
    }
    const switches: (() => void)[] = [];
    for (const part of this.parts) {
      const p = part.p;
      if (!holds(p)) continue;
      for (const c of p.dirty ?? []) {
        if (p.scanBlocks[c] >= 0) {
          if (!(part.scan[c] >= 0)) {
            part.scan[c] = fresh.allocBlock(L.scanBlockBytes);
            part.side[c] = fresh.allocBlock(L.sideBlockBytes);
          }
          this.copyChunk(part, c);
          this.recopied++;
        } else if (part.scan[c] >= 0) {
          fresh.freeBlock(part.scan[c], L.scanBlockBytes);
          fresh.freeBlock(part.side[c], L.sideBlockBytes);
          part.scan[c] = part.side[c] = -1;
        }
      }
      const scan = p.scanBlocks.map((b, c) => (b >= 0 ? part.scan[c] : -1));
      const side = p.sideBlocks.map((b, c) => (b >= 0 ? part.side[c] : -1));
      for (let c = 0; c < scan.length; c++) {
        if (p.scanBlocks[c] >= 0 && !(scan[c] >= 0 && side[c] >= 0))
          throw new Error(`compaction: chunk ${c} of ${p.name} has no fresh block`);
      }
      const cent = p.centroids;
      if (cent !== part.cent || p.target) throw new Error(`compaction: partition ${p.name} was retrained during it`);
      switches.push(() => {
        p.scanBlocks = scan;
        p.sideBlocks = side;
        for (const l of p.lists) l.scanStash.length = 0;
        if (cent) {
          const shift = part.centRun - cent.run;
          cent.at += shift;
          cent.coarseAt += shift;
          cent.sumsAt += shift;
          cent.run = part.centRun;
        }
      });
    }
    return () => {
      for (const s of switches) s();
      this.release();
    };
  }

  /** Stops tracking writes (the switch happened, or the compaction is given up). */
  release(): void {
    for (const part of this.parts) part.p.dirty = null;
  }

  private copyChunk(part: PartCopy, c: number): void {
    const p = part.p,
      L = this.L;
    const src = this.old.views().u8,
      dst = this.fresh.views().u8;
    const s = p.scanBlocks[c],
      d = p.sideBlocks[c];
    if (s < 0) return; // freed since the order was taken: its number is dirty
    dst.set(src.subarray(s, s + L.scanBlockBytes), part.scan[c]);
    dst.set(src.subarray(d, d + L.sideBlockBytes), part.side[c]);
    this.copied++;
  }
}
