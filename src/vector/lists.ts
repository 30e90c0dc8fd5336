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
/** i16 centroids are scaled to ±1000 so that 2 048 products of (u ≤ 15) · 1000 sum within i32. */
const I16_MAX = 1000;

/**
 * Default number of lists for a partition of n rows: ~n / 256 as a power of two, 16..8 192, then
 * n / 512 up to 16 384 (from 4.2 M rows).
 * Fine lists (a few videos' frames each) are what let a query's nearest centroids hold its
 * neighbours — at 200 k rows, 256 lists gave image-query recall@10 0.52 reading 3 % of the rows,
 * 1 024 lists 0.98. n / 512 until issue 14's 32-row chunks: every list's last chunk is part
 * empty, which with 128-row chunks cost ~12 % more positions at n / 512 (25 % at n / 256); at 1 M
 * rows n / 256 (4 096 lists) in 32-row chunks reads 4 096 rows for image recall 0.955 against
 * 0.837 (0.98 from 10 k rows against 40 k) in 184 B/row live against 191, build CPU 32 s against
 * 24 (BENCHMARKS.md, "Finer lists in 32-row chunks"). n / 128 gave 0.989 from 4 096 rows but
 * 198 B/row and 51 s of build CPU: not taken.
 */
export function listsFor(n: number): number {
  const pow2For = (rowsPerList: number) => {
    let c = 16;
    while (c < 16384 && c * rowsPerList < n) c *= 2;
    return c;
  };
  // n / 256 up to 8 192 lists, then n / 512 (as before) from 4.2 M rows on: 16 384 lists train on
  // 524 k sampled rows (a 1 GiB f32 copy) with 4× the work of 8 192 — at 1 M rows 208 s of
  // rebuild against 42 s at load ~9 — so they keep coming only where they did before.
  return Math.max(pow2For(512), Math.min(8192, pow2For(256)));
}

/**
 * Unit centroids `f32` (m × padDim) → i16 at arena offset `at` (scaled to ±I16_MAX each), with
 * their 7.5·Σc16 and 1/scale: a row's r·ĉ is then step · invScale · (dots4 − sum16).
 */
function quantize(
  d: number,
  a: Arena,
  f32: Float32Array,
  m: number,
  at: number,
  sum16: Float32Array,
  invScale: Float32Array,
  first = 0,
): void {
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
function best(
  K: Kernels,
  a: Arena,
  rp: number,
  at: number,
  m: number,
  sums: number,
  sum16: Float32Array,
  invScale: Float32Array,
  first: number,
): number {
  K.dots4(rp, at, m, sums);
  const i32 = a.i32,
    s0 = sums >> 2;
  let bi = 0,
    bs = -Infinity;
  for (let k = 0; k < m; k++) {
    const score = (i32[s0 + k] - sum16[first + k]) * invScale[first + k];
    if (score > bs) {
      bs = score;
      bi = k;
    }
  }
  return bi;
}

/**
 * The list of a row whose 4-bit codes are at `rp`: its best coarse group, then the best fine
 * centroid of that group — G + F/G dot products instead of F (~5 µs for 4 096 lists).
 */
export function nearestList(L: Layout, a: Arena, K: Kernels, c: Centroids, rp: number): number {
  const d2 = L.padDim * 2;
  // The best GROUPS_SEARCHED groups: a row near a group boundary often belongs to a list of the runner-up.
  K.dots4(rp, c.coarseAt, c.groups, c.sumsAt);
  const i32 = a.i32,
    s0 = c.sumsAt >> 2;
  let g1 = 0,
    g2 = -1,
    b1 = -Infinity,
    b2 = -Infinity;
  for (let g = 0; g < c.groups; g++) {
    const score = (i32[s0 + g] - c.coarseSum16[g]) * c.coarseInvScale[g];
    if (score > b1) {
      g2 = g1;
      b2 = b1;
      g1 = g;
      b1 = score;
    } else if (score > b2) {
      g2 = g;
      b2 = score;
    }
  }
  let bestList = 0,
    bestScore = -Infinity;
  for (const g of g2 >= 0 && g2 !== g1 ? [g1, g2] : [g1]) {
    const from = c.groupStart[g],
      m = c.groupStart[g + 1] - from;
    if (m === 0) continue;
    const k = from + best(K, a, rp, c.at + from * d2, m, c.sumsAt, c.sum16, c.invScale, from);
    const score = (i32[s0 + k - from] - c.sum16[k]) * c.invScale[k];
    if (score > bestScore) {
      bestScore = score;
      bestList = k;
    }
  }
  return bestList;
}

/** Score of every list for a query encoded (centred, rotated, 4-bit) at `rp`: q·ĉ up to a positive factor. */
export function listScores(a: Arena, K: Kernels, c: Centroids, rp: number, out: Float32Array): void {
  K.dots4(rp, c.at, c.count, c.sumsAt);
  const i32 = a.views().i32,
    s0 = c.sumsAt >> 2;
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
  d: number,
  a: Arena,
  K: Kernels,
  X: Float32Array,
  ptr: Int32Array,
  rows: Int32Array,
  m: number,
  scratch: number,
  rand: () => number,
): Generator<void, Float32Array> {
  const S = rows.length;
  const cent = new Float32Array(m * d);
  for (let k = 0; k < m; k++) {
    const r = rows[Math.floor((k * S) / m)] * d;
    cent.set(X.subarray(r, r + d), k * d);
  }
  const sum16 = new Float32Array(m),
    inv = new Float32Array(m),
    sizes = new Int32Array(m),
    assign = new Int32Array(S);
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
      const o = assign[i] * d,
        x = rows[i] * d;
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
  return cent;
}

/**
 * Two-level centroids for a partition: ~√count coarse groups by k-means on a strided sample of
 * its rows (decoded from their 4-bit codes, so no exact vector is read), then each group's
 * sample split into fine centroids in proportion to its size. Fine centroids are stored group by
 * group, so a group's children are one contiguous range (groupStart).
 *
 * A generator (see kmeans): the partition may change between its steps, so the sample's codes
 * are first copied, as 4-bit nibbles (`nibblesOf`: copied, or expanded from 2-bit codes), into a
 * run of their own (S × 256 B: 16 MiB for 2 048 lists), which is
 * given back when it ends or is abandoned (return()). The centroids' run belongs to the caller
 * once returned.
 */
export function* trainCentroids(
  L: Layout,
  a: Arena,
  K: Kernels,
  p: Partition,
  count: number,
  nibblesOf: (slot: number, dst: number) => void,
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
      let i = 0,
        next = 0,
        seen = 0;
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
    let groups = 1;
    while (groups * groups < count) groups *= 2;
    groups = Math.min(groups, count);
    // One arena run, sized for the most fine centroids the rounding below can give (count + groups):
    // scratch for k-means first, then the centroids. Retraining with the same count reuses it.
    const cap = count + groups;
    run = a.allocRun((cap + groups) * d * 2 + cap * 4);
    const scratch = run.off;
    const all = Int32Array.from({ length: S }, (_, i) => i);
    const coarse = yield* kmeans(d, a, K, X, ptr, all, groups, scratch, rand);
    // Rows of each coarse group (final assignment, recomputed here).
    const gsum = new Float32Array(groups),
      ginv = new Float32Array(groups);
    quantize(d, a, coarse, groups, scratch, gsum, ginv);
    const members: number[][] = Array.from({ length: groups }, () => []);
    for (let i = 0; i < S; i++) {
      members[best(K, a, ptr[i], scratch, groups, scratch + groups * d * 2, gsum, ginv, 0)].push(i);
      if (i % STEP_ROWS === STEP_ROWS - 1) {
        yield;
        a.views();
      }
    }
    const fine: Float32Array[] = [];
    const groupStart = new Int32Array(groups + 1);
    let total = 0;
    for (let g = 0; g < groups; g++) {
      const rows = Int32Array.from(members[g]);
      const m = rows.length === 0 ? 0 : Math.max(1, Math.min(rows.length, Math.round((count * rows.length) / S)));
      fine.push(m > 0 ? yield* kmeans(d, a, K, X, ptr, rows, m, scratch, rand) : new Float32Array(0));
      total += m;
      groupStart[g + 1] = total;
    }
    // The run now holds: fine i16, coarse i16, then the dots4 sums.
    const c: Centroids = {
      count: total,
      groups,
      groupStart,
      trainedAt: n0,
      run: run.off,
      runBytes: run.bytes,
      at: run.off,
      coarseAt: run.off + total * d * 2,
      sumsAt: run.off + (total + groups) * d * 2,
      sum16: new Float32Array(total),
      invScale: new Float32Array(total),
      coarseSum16: new Float32Array(groups),
      coarseInvScale: new Float32Array(groups),
    };
    for (let g = 0; g < groups; g++) {
      const from = groupStart[g],
        m = groupStart[g + 1] - from;
      if (m) quantize(d, a, fine[g], m, c.at + from * d * 2, c.sum16, c.invScale, from);
    }
    quantize(d, a, coarse, groups, c.coarseAt, c.coarseSum16, c.coarseInvScale);
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
      const lo = (b & 15) - 7.5,
        hi = (b >> 4) - 7.5;
      out[at + g + i] = lo;
      out[at + g + 16 + i] = hi;
      nn += lo * lo + hi * hi;
    }
  }
  // Unit length (spherical k-means): the row's step is a common factor and drops out.
  const u = nn > 0 ? 1 / Math.sqrt(nn) : 0;
  for (let j = 0; j < L.padDim; j++) out[at + j] *= u;
}

/** Per-call scratch of probeLists (searches are synchronous: one at a time). */
let probeScratch = { idx: new Int32Array(0), work: new Float32Array(0), keys: new Float64Array(0) };
const bitsF32 = new Float32Array(1);
const bitsU32 = new Uint32Array(bitsF32.buffer);

/** An f32's bits as a u32 that orders as the floats do (negatives flipped below positives); NaN as −∞. */
function orderedBits(x: number): number {
  if (x !== x) return 0;
  bitsF32[0] = x;
  const b = bitsU32[0];
  return b & 0x80000000 ? ~b >>> 0 : (b | 0x80000000) >>> 0;
}

/**
 * Lists a query reads, best first by score, until their estimated allowed rows reach
 * `wantRows`; null when that would pass `fullAbove` rows (a full scan is then as cheap).
 * `allowedIn(list)` estimates a list's allowed rows (filters), `allowedTotal` their sum.
 */
export function probeLists(
  p: Partition,
  scores: Float32Array,
  wantRows: number,
  allowedIn: (li: number) => number,
  fullAbove: number,
  allowedTotal = p.n,
): { lists: number[]; rows: number; allowed: number } | null {
  const c = p.centroids!;
  // Only the best few hundred lists are ever needed: select them (4× the share of lists that
  // holds wantRows of the allowed rows), then sort those. By the allowed rows, not all rows: with
  // 8 192 lists at 1 M a 1-in-20 collection filter found only ~1.5 k of its 4 096 rows in the
  // best 256 lists and fell back to the full scan (image+coll p50 165 ms instead of ~15).
  const m = Math.min(c.count, Math.max(256, Math.ceil((4 * c.count * wantRows) / Math.max(1, allowedTotal))));
  if (probeScratch.idx.length < c.count)
    probeScratch = { idx: new Int32Array(c.count), work: new Float32Array(c.count), keys: new Float64Array(c.count) };
  const { idx, work } = probeScratch;
  const got = topIndices(scores, c.count, m, idx, work);
  // Best first without a comparator: each list as one float64 key, its score's order-preserving
  // bits above its number (lists < 2^16), sorted natively (ascending) and read from the end. The
  // comparator sort of Array.from(idx) was ~15 % of an image query's CPU at 100 k rows (issue 27).
  const keys = probeScratch.keys.subarray(0, got);
  for (let i = 0; i < got; i++) keys[i] = orderedBits(scores[idx[i]]) * 65536 + idx[i];
  keys.sort();
  const lists: number[] = [];
  let rows = 0,
    allowed = 0;
  for (let i = got - 1; i >= 0; i--) {
    const k = keys[i] % 65536;
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
