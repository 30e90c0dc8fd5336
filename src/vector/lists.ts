/**
 * Inverted lists of a partition (IVF): k-means centroids over the rows' 4-bit codes, row
 * assignment in WebAssembly (dots4), and which lists a query probes.
 *
 * Why lists: the flat scan reads every row's 66-byte code, so its cost grows linearly (1.4 ms
 * at 100 k, ~8 ms at 1 M, ~40 ms at 5 M). Rows grouped by their nearest centroid let a query read
 * only the lists nearest to it — a few percent of the rows — and keep the scan → 1-bit → 4-bit →
 * exact pipeline as it was inside them. Centroids live in the rotated, centred space of the codes
 * and are trained from the 4-bit codes already in memory (no exact vectors are read).
 */
import type { Arena } from "./arena.ts";
import type { Layout } from "./layout.ts";
import type { Centroids, Partition } from "./partition.ts";
import { topIndices } from "./select.ts";
import type { Kernels } from "./wasm/kernels.ts";

/** Lloyd iterations, and sample rows per fine list (measured at 200 k: 8 → image recall 0.932 at 3 % read, 32 → 0.957). */
const ITERATIONS = 6;
const SAMPLE_PER_LIST = 32;
/**
 * Shape of the centroid tree. Up to 4 096 lists (listsFor: up to ~2 M rows): √count coarse
 * groups, each split into fine lists (two levels; a row's list costs G + 2·count/G dot products,
 * 192 at 4 096). Beyond, groups of ~FINE_PER_GROUP lists under a top level of ~GROUPS_PER_TOP
 * groups each: tops + 2·32 + 4·32 dot products (see nearestList), 200 at 8 192 lists, 208 at
 * 16 384 (the most listsFor gives), where two levels cost 256 and 384: the per-row cost of
 * assignment and training grew like √n. (The tree at 8 192 lists, 1 M rows, lost a little
 * image recall against two levels, see nearestList: not used where two levels cost no more.)
 */
const FINE_PER_GROUP = 32;
const GROUPS_PER_TOP = 32;

/** Coarse groups and top-level groups for `count` lists (see FINE_PER_GROUP). */
export function treeShape(count: number): { groups: number; tops: number } {
  if (count > 4 * GROUPS_PER_TOP * FINE_PER_GROUP) {
    const groups = Math.ceil(count / FINE_PER_GROUP);
    return { groups, tops: Math.ceil(groups / GROUPS_PER_TOP) };
  }
  let groups = 1;
  while (groups * groups < count) groups *= 2;
  return { groups: Math.min(groups, count), tops: 1 };
}

/** i16 centroids are scaled to ±1000 so that 2 048 products of (u ≤ 15) · 1000 sum within i32. */
const I16_MAX = 1000;

/**
 * Default number of lists for a partition of n rows: ~n / 512 as a power of two, 16..16 384.
 * Fine lists (a few videos' frames each) are what let a query's nearest centroids hold its
 * neighbours — at 200 k rows, 256 lists gave image-query recall@10 0.52 reading 3 % of the rows,
 * 1 024 lists 0.98 — but every list's last chunk is part empty, so a full scan reads ~12 % more
 * positions at n / 512 (25 % at n / 256).
 */
export function listsFor(n: number): number {
  let c = 16;
  while (c < 16384 && c * 512 < n) c *= 2;
  return c;
}

/**
 * Unit centroids `f32` (m × padDim) → i16 at arena offset `at` (scaled to ±I16_MAX each), with
 * their 7.5·Σc16 and 1/scale: a row's r·ĉ is then step · invScale · (dots4 − sum16).
 */
function quantize(d: number, a: Arena, f32: Float32Array, m: number, at: number, sum16: Float32Array, invScale: Float32Array, first = 0): void {
  a.views();
  for (let k = 0; k < m; k++) {
    let max = 0;
    for (let j = 0; j < d; j++) max = Math.max(max, Math.abs(f32[k * d + j]));
    const s = max > 0 ? I16_MAX / max : 0;
    let sum = 0;
    const base = (at >> 1) + k * d;
    for (let j = 0; j < d; j++) {
      const q = Math.round(f32[k * d + j] * s);
      a.i16[base + j] = q;
      sum += q;
    }
    invScale[first + k] = s > 0 ? 1 / s : 0;
    sum16[first + k] = 7.5 * sum;
  }
}

/** Index of the best of `m` centroids for the nibbles at `rp` (all rows' steps are positive, so they drop out). */
function best(K: Kernels, a: Arena, rp: number, at: number, m: number, sums: number, sum16: Float32Array, invScale: Float32Array, first: number): number {
  K.dots4(rp, at, m, sums);
  const i32 = a.i32, s0 = sums >> 2;
  let bi = 0, bs = -Infinity;
  for (let k = 0; k < m; k++) {
    const score = (i32[s0 + k] - sum16[first + k]) * invScale[first + k];
    if (score > bs) {
      bs = score;
      bi = k;
    }
  }
  return bi;
}

/** Best few centroids offered so far, best first: index in idx[0 … m − 1] (−1: none), score in score[…]; strict > keeps the first of equals. */
class Best {
  readonly idx: Int32Array;
  readonly score: Float64Array;
  constructor(readonly m: number) {
    this.idx = new Int32Array(m);
    this.score = new Float64Array(m);
  }
  reset(): void {
    this.idx.fill(-1);
    this.score.fill(-Infinity);
  }
}

/** Scores the m centroids first … first + m − 1 (i16 at `at`, padDim each) against the nibbles at `rp` and offers them to `b`. */
function offerRange(
  K: Kernels, a: Arena, d2: number, rp: number, at: number, first: number, m: number, sumsAt: number, sum16: Float32Array, invScale: Float32Array, b: Best,
): void {
  if (m <= 0) return;
  K.dots4(rp, at + first * d2, m, sumsAt);
  const i32 = a.i32, s0 = sumsAt >> 2, idx = b.idx, sc = b.score, last = b.m - 1;
  for (let k = 0; k < m; k++) {
    const score = (i32[s0 + k] - sum16[first + k]) * invScale[first + k];
    if (!(score > sc[last])) continue;
    let j = last;
    for (; j > 0 && score > sc[j - 1]; j--) {
      sc[j] = sc[j - 1];
      idx[j] = idx[j - 1];
    }
    sc[j] = score;
    idx[j] = first + k;
  }
}
/**
 * A row's list is looked for in the best two top-level groups, then in their best four coarse
 * groups (two in a two-level tree). Measured at 1 M rows with 8 192 lists (bench/vector-scale-bench.ts
 * --lists=8192), image recall@10 at probe 0.02 / 0.04: two-level (128 groups of 64, the two best
 * searched) 0.997 / 0.998; tree with tops / groups searched 2 / 2: 0.989 / 0.995, 4 / 2: 0.990 /
 * 0.994, 3 / 3: 0.992 / 0.995, 2 / 4: 0.992 / 0.997.
 */
const bestTop = new Best(2), bestGroupOfTree = new Best(4), bestGroupOfTwo = new Best(2), bestFine = new Best(1);

/**
 * The list of a row whose 4-bit codes are at `rp`: its best two top-level groups (if the tree has
 * that level), their coarse groups' best four (two without a top level), then the best fine
 * centroid of those groups (see treeShape for the cost). More than one at each level: a row near
 * a group boundary often belongs to a list of the runner-up (at 200 k rows: image recall 0.957
 * searching one group, 0.978 two).
 */
export function nearestList(L: Layout, a: Arena, K: Kernels, c: Centroids, rp: number): number {
  const d2 = L.padDim * 2;
  const bestGroup = c.tops > 1 ? bestGroupOfTree : bestGroupOfTwo;
  bestGroup.reset();
  if (c.tops > 1) {
    bestTop.reset();
    offerRange(K, a, d2, rp, c.topAt, 0, c.tops, c.sumsAt, c.topSum16, c.topInvScale, bestTop);
    for (let i = 0; i < bestTop.m; i++) {
      const t = bestTop.idx[i];
      if (t >= 0) offerRange(K, a, d2, rp, c.coarseAt, c.topStart[t], c.topStart[t + 1] - c.topStart[t], c.sumsAt, c.coarseSum16, c.coarseInvScale, bestGroup);
    }
  } else {
    offerRange(K, a, d2, rp, c.coarseAt, 0, c.groups, c.sumsAt, c.coarseSum16, c.coarseInvScale, bestGroup);
  }
  bestFine.reset();
  for (let i = 0; i < bestGroup.m; i++) {
    const g = bestGroup.idx[i];
    if (g >= 0) offerRange(K, a, d2, rp, c.at, c.groupStart[g], c.groupStart[g + 1] - c.groupStart[g], c.sumsAt, c.sum16, c.invScale, bestFine);
  }
  return Math.max(0, bestFine.idx[0]);
}

/** Score of every list for a query encoded (centred, rotated, 4-bit) at `rp`: q·ĉ up to a positive factor. */
export function listScores(a: Arena, K: Kernels, c: Centroids, rp: number, out: Float32Array): void {
  K.dots4(rp, c.at, c.count, c.sumsAt);
  const i32 = a.views().i32, s0 = c.sumsAt >> 2;
  for (let k = 0; k < c.count; k++) out[k] = (i32[s0 + k] - c.sum16[k]) * c.invScale[k];
}

export function freeCentroids(a: Arena, c: Centroids): void {
  a.freeRun({ off: c.run, bytes: c.runBytes }, true);
}

/** xorshift32 stream (deterministic training). */
function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 4294967296;
  };
}

/** Rows of work between yields of a training generator (a few hundred µs at most). */
const STEP_ROWS = 64;

/**
 * Spherical k-means (Lloyd, ITERATIONS rounds) of the sample rows `rows` (indices into X, unit
 * rows; ptr = their nibbles in the arena) into m unit centroids; assignment runs in dots4 with
 * the centroids quantised at `scratch`. Empty clusters are re-seeded from random rows. A
 * generator: it yields every STEP_ROWS rows so a caller can spread training over event-loop
 * turns (the arena may grow in between, hence a.views() after each yield).
 */
function* kmeans(
  d: number, a: Arena, K: Kernels, X: Float32Array, ptr: Int32Array, rows: Int32Array, m: number, scratch: number, rand: () => number,
): Generator<void, { cent: Float32Array; assign: Int32Array }> {
  const S = rows.length;
  const cent = new Float32Array(m * d);
  for (let k = 0; k < m; k++) {
    const r = rows[Math.floor((k * S) / m)] * d;
    cent.set(X.subarray(r, r + d), k * d);
  }
  const sum16 = new Float32Array(m), inv = new Float32Array(m), sizes = new Int32Array(m), assign = new Int32Array(S);
  const sums = scratch + m * d * 2;
  for (let it = 0; it <= ITERATIONS; it++) {
    quantize(d, a, cent, m, scratch, sum16, inv);
    for (let i = 0; i < S; i++) {
      assign[i] = best(K, a, ptr[rows[i]], scratch, m, sums, sum16, inv, 0);
      if (i % STEP_ROWS === STEP_ROWS - 1) {
        yield;
        a.views();
      }
    }
    if (it === ITERATIONS) break;
    cent.fill(0);
    sizes.fill(0);
    for (let i = 0; i < S; i++) {
      const o = assign[i] * d, x = rows[i] * d;
      sizes[assign[i]]++;
      for (let j = 0; j < d; j++) cent[o + j] += X[x + j];
      if (i % (4 * STEP_ROWS) === 0) yield;
    }
    for (let k = 0; k < m; k++) {
      const o = k * d;
      if (sizes[k] === 0) {
        const r = rows[Math.floor(rand() * S)] * d;
        cent.set(X.subarray(r, r + d), o);
        continue;
      }
      let nn = 0;
      for (let j = 0; j < d; j++) nn += cent[o + j] * cent[o + j];
      const u = nn > 0 ? 1 / Math.sqrt(nn) : 0;
      for (let j = 0; j < d; j++) cent[o + j] *= u;
    }
    yield;
    a.views();
  }
  // assign is the last pass's: each sample row's centroid among the ones returned.
  return { cent, assign };
}

/**
 * The centroid tree of a partition (treeShape), trained top down on a strided sample of its rows
 * (decoded from their 4-bit codes, so no exact vector is read): the top-level groups (many lists
 * only) by k-means on the whole sample, each one's sample split into coarse groups, each coarse
 * group's into fine centroids, each in proportion to its share of the sample. So every k-means
 * runs over at most ~32 centroids per sample row below the top level, whatever the list count.
 * Centroids are stored parent by parent, so a parent's children are one contiguous range
 * (topStart, groupStart).
 *
 * A generator (see kmeans): the partition may change between its steps, so the sample's codes
 * are first copied, as 4-bit nibbles (`nibblesOf`: copied, or expanded from 2-bit codes), into a
 * run of their own (S × 256 B: 16 MiB for 2 048 lists), which is
 * given back when it ends or is abandoned (return()). The centroids' run belongs to the caller
 * once returned.
 */
export function* trainCentroids(
  L: Layout, a: Arena, K: Kernels, p: Partition, count: number, nibblesOf: (slot: number, dst: number) => void,
): Generator<void, Centroids> {
  const d = L.padDim;
  const n0 = p.n;
  const S = Math.min(p.n, Math.max(2 * count, SAMPLE_PER_LIST * count));
  const sampleRun = a.allocRun(S * L.nibbleBytes);
  let run: { off: number; bytes: number } | null = null;
  let done = false;
  try {
    const ptr = new Int32Array(S);
    const X = new Float32Array(S * d);
    {
      // Strided over the partition as it is now; rows removed meanwhile only shorten the walk.
      const every = p.n / S;
      let i = 0, next = 0, seen = 0;
      for (const l of p.lists) {
        for (let pos = 0; pos < l.n && i < S; pos++, seen++) {
          if (seen < next) continue;
          const slot = p.slotOf(l, pos);
          ptr[i] = sampleRun.off + i * L.nibbleBytes;
          nibblesOf(slot, ptr[i]);
          decodeAt(L, a, ptr[i], X, i * d);
          i++;
          next = Math.floor(i * every);
          if (i % STEP_ROWS === 0) yield;
        }
      }
      // Rows removed during the walk: fill the rest with copies of the first (harmless for k-means).
      for (let j = i; j < S; j++) {
        ptr[j] = ptr[0];
        X.copyWithin(j * d, 0, d);
      }
    }
    a.views();
    const rand = rng(0x9e3779b9 ^ n0);
    const { groups, tops } = treeShape(count);
    // One arena run, sized for the most centroids the rounding below can give (each level's
    // shares are rounded per parent, so up to one more per parent): scratch for k-means first,
    // then the centroids. Retraining with the same count reuses it.
    const groupCap = groups + tops, cap = count + groupCap;
    run = a.allocRun((cap + groupCap + tops) * d * 2 + cap * 4);
    const scratch = run.off;
    // Splits `rows` into centroids in proportion to their share of the sample (at least 1 each);
    // returns them with the rows of each.
    const split = function* (rows: Int32Array, m: number): Generator<void, { cent: Float32Array; members: Int32Array[] }> {
      if (rows.length === 0 || m === 0) return { cent: new Float32Array(0), members: [] };
      const { cent, assign } = yield* kmeans(d, a, K, X, ptr, rows, Math.min(rows.length, m), scratch, rand);
      const sizes = new Int32Array(cent.length / d);
      for (const k of assign) sizes[k]++;
      const members = Array.from(sizes, (n) => new Int32Array(n));
      sizes.fill(0);
      for (let i = 0; i < rows.length; i++) members[assign[i]][sizes[assign[i]]++] = rows[i];
      return { cent, members };
    };
    const share = (rows: number, total: number) => (rows === 0 ? 0 : Math.max(1, Math.min(rows, Math.round((total * rows) / S))));
    const all = Int32Array.from({ length: S }, (_, i) => i);
    // Top level (many lists only), then the coarse groups of each top group.
    const top = tops > 1 ? yield* split(all, tops) : { cent: new Float32Array(0), members: [all] };
    const coarse: Float32Array[] = [], groupRows: Int32Array[] = [];
    const topStart = new Int32Array(top.members.length + 1);
    for (let t = 0; t < top.members.length; t++) {
      const rows = top.members[t];
      const g = yield* split(rows, tops > 1 ? share(rows.length, groups) : groups);
      coarse.push(g.cent);
      groupRows.push(...g.members);
      topStart[t + 1] = topStart[t] + g.members.length;
    }
    const groupCount = groupRows.length;
    // Fine centroids (the lists), group by group: a group's lists are one contiguous range.
    const fine: Float32Array[] = [];
    const groupStart = new Int32Array(groupCount + 1);
    for (let g = 0; g < groupCount; g++) {
      const f = yield* split(groupRows[g], share(groupRows[g].length, count));
      fine.push(f.cent);
      groupStart[g + 1] = groupStart[g] + f.cent.length / d;
    }
    const total = groupStart[groupCount], topCount = tops > 1 ? top.members.length : 0;
    // The run now holds: fine i16, coarse i16, top i16, then the dots4 sums.
    const coarseAt = run.off + total * d * 2;
    const topAt = coarseAt + groupCount * d * 2;
    const c: Centroids = {
      count: total, groups: groupCount, groupStart, tops: Math.max(1, topCount), topStart, trainedAt: n0, run: run.off, runBytes: run.bytes,
      at: run.off, coarseAt, topAt, sumsAt: topAt + topCount * d * 2,
      sum16: new Float32Array(total), invScale: new Float32Array(total),
      coarseSum16: new Float32Array(groupCount), coarseInvScale: new Float32Array(groupCount),
      topSum16: new Float32Array(topCount), topInvScale: new Float32Array(topCount),
    };
    for (let g = 0; g < groupCount; g++) {
      const from = groupStart[g], m = groupStart[g + 1] - from;
      if (m) quantize(d, a, fine[g], m, c.at + from * d * 2, c.sum16, c.invScale, from);
    }
    for (let t = 0, at = coarseAt; t < coarse.length; t++) {
      const m = coarse[t].length / d;
      quantize(d, a, coarse[t], m, at, c.coarseSum16, c.coarseInvScale, topStart[t]);
      at += m * d * 2;
    }
    if (topCount) quantize(d, a, top.cent, topCount, topAt, c.topSum16, c.topInvScale);
    done = true;
    return c;
  } finally {
    a.freeRun(sampleRun, true);
    if (!done && run) a.freeRun(run, true);
  }
}

/** A row's 4-bit codes at `rp` decoded to (u − 7.5), then scaled to unit length. */
function decodeAt(L: Layout, a: Arena, rp: number, out: Float32Array, at: number): void {
  const u8 = a.u8;
  let nn = 0;
  for (let g = 0; g < L.padDim; g += 32) {
    const p = rp + g / 2;
    for (let i = 0; i < 16; i++) {
      const b = u8[p + i];
      const lo = (b & 15) - 7.5, hi = (b >> 4) - 7.5;
      out[at + g + i] = lo;
      out[at + g + 16 + i] = hi;
      nn += lo * lo + hi * hi;
    }
  }
  // Unit length (spherical k-means): the row's step is a common factor and drops out.
  const u = nn > 0 ? 1 / Math.sqrt(nn) : 0;
  for (let j = 0; j < L.padDim; j++) out[at + j] *= u;
}

/**
 * Lists a query reads, best first by score, until their estimated allowed rows reach
 * `wantRows`; null when that would pass `fullAbove` rows (a full scan is then as cheap).
 * `allowedIn(list)` estimates a list's allowed rows (filters).
 */
export function probeLists(
  p: Partition, scores: Float32Array, wantRows: number, allowedIn: (li: number) => number, fullAbove: number,
): { lists: number[]; rows: number; allowed: number } | null {
  const c = p.centroids!;
  // Only the best few hundred lists are ever needed: select them, then sort those.
  const m = Math.min(c.count, Math.max(256, Math.ceil((4 * c.count * wantRows) / Math.max(1, p.n))));
  const idx = new Int32Array(c.count), work = new Float32Array(c.count);
  const got = topIndices(scores, c.count, m, idx, work);
  const order = Array.from(idx.subarray(0, got)).sort((x, y) => scores[y] - scores[x]);
  const lists: number[] = [];
  let rows = 0, allowed = 0;
  for (const k of order) {
    if (allowed >= wantRows) break;
    const l = p.lists[k];
    if (l.n === 0) continue;
    const al = allowedIn(k);
    if (al <= 0) continue;
    lists.push(k);
    rows += l.n;
    allowed += al;
    if (rows > fullAbove) return null;
  }
  return allowed >= wantRows || got === c.count ? { lists, rows, allowed } : null;
}
