/**
 * Planning a search: which chunks it reads (all, or the inverted lists nearest the query), how
 * many rows each stage keeps, and the small table helpers of search.ts.
 */
import { MASKED } from "./layout.ts";
import { probeLists } from "./lists.ts";
import type { Partition } from "./partition.ts";

/**
 * Inverted lists: a query given `probe` reads the nearest lists until they hold that share of
 * the allowed rows (at least PROBE_MIN_ROWS); all lists once that passes FULL_ABOVE of the
 * partition. Inside the probed lists the Hamming pass keeps PROBED_COARSE_FRACTION of the rows
 * read (they are already the query's neighbourhood, so a larger share than the flat scan's
 * 40·√n, 4 % at 1 M).
 * Without `probe` every row is read: text-like queries need it (see README.md, "Inverted lists").
 */
const PROBE_MIN_ROWS = 4096;
const FULL_ABOVE = 0.5;
const PROBED_COARSE_FRACTION = 0.2;
const COARSE_PER_SQRT = 40;
const COARSE_MIN = 8192;
/** 65 536 until issue 14's 10 M run: a 9.4 M-row segment's text queries then got 0.7 % (recall 0.936); 131 072: 0.964 for +5 % p50. */
const COARSE_MAX = 131072;
const MIDDLE_FRACTION = 0.1;
const MIDDLE_MIN = 1024;
/**
 * Probed in-distribution queries (SearchOptions.inDistribution: image against frames) keep fewer
 * rows per stage. At 100 k rows, the app's image probe (9 k rows read), recall@10 0.989 was set by
 * the lists read alone: rescoring all 1 024 middle rows gave 0.989, and so did coarse 500, middle
 * 128, 32 rescored (16 rescored: 0.985). These sizes keep about twice that margin at each stage.
 */
const NEAR_COARSE_FRACTION = 0.1;
const NEAR_COARSE_MIN = 1024;
const NEAR_MIDDLE_MIN = 256;
const NEAR_RESCORE_MIN = 64;
const RESCORE_MIN = 64;
const RESCORE_PER_K = 4;
/**
 * Rows rescored exactly: 4k up to k = 85, then k + 256 of the 4k best by the 4-bit estimate (which
 * only misorders rows near the k-th). Measured on 100 k clustered rows, text queries: recall@512
 * 0.799 and @1000 0.826 either way, while rescoring 768 rows instead of 2 048 and 1 256 instead of
 * 4 000 — each one an exact vector read from the store.
 */
const RESCORE_MARGIN = 256;

const round16 = (n: number) => (n + 15) & ~15;

export interface Selection {
  chunks: number[];
  tails: number[];
  /** Live rows per table chunk. */
  fill: Uint8Array;
  /** Live rows in the chunks. */
  tableRows: number;
  listCount: number;
  /** Some lists were left out. */
  probed: boolean;
  /** Allowed rows the probe aimed at. */
  want: number;
}

/**
 * The chunks a query reads, in table order (position i·chunkRows + r ↦ chunk chunks[i], row r), and
 * the [from, to) positions of list tails to mask. A trained partition probes the lists
 * nearest the query until they hold ~`probe` of the allowed rows (or, with `probeAt`,
 * probe·at·(n/at)^g, g = probeGrowth's exponent below or above `at` — with the default 0.5 that
 * is probe·√(at·n): that share at `at` rows, more below, less above; at least PROBE_MIN_ROWS);
 * collection filters count their rows per list exactly, video filters are assumed spread
 * evenly. Everything is read when untrained, when few rows are allowed (exact path), or when
 * the probe would cover most of the partition anyway.
 */
export function selectChunks(
  p: Partition,
  flags: number,
  idsA: number[],
  idsB: number[],
  probe: number | undefined,
  exactBelow: number,
  listScores: () => Float32Array,
  probeAt = Infinity,
  probeGrowth: readonly [number, number] = [0.5, 0.5],
): Selection {
  let lists: number[] | null = null;
  let want = 0;
  const frac = probe ?? 1;
  if (p.centroids && p.lists.length > 1 && frac < 1) {
    let fracB = 1;
    if (flags & 2) {
      let nb = 0;
      for (const id of idsB) nb += p.groupB.rowCount(id);
      fracB = Math.min(1, nb / p.n);
    }
    const allowedIn = (li: number): number => {
      const l = p.lists[li];
      if (!(flags & 1)) return l.n * fracB;
      let al = 0;
      for (const id of idsA) al += l.countA[id] ?? 0;
      return al * fracB;
    };
    let total = 0;
    for (let li = 0; li < p.lists.length; li++) total += allowedIn(li);
    if (total > 2 * exactBelow) {
      const share = Number.isFinite(probeAt)
        ? frac * probeAt * (total / probeAt) ** (total < probeAt ? probeGrowth[0] : probeGrowth[1])
        : frac * total;
      want = Math.min(total, Math.max(PROBE_MIN_ROWS, share));
      lists = probeLists(p, listScores(), want, allowedIn, FULL_ABOVE * p.n, total)?.lists ?? null;
    }
  }
  const order = lists ?? p.lists.map((_, i) => i);
  const R = p.chunkRows,
    shift = p.chunkShift;
  const chunks: number[] = [],
    tails: number[] = [];
  let tableRows = 0,
    listCount = 0;
  for (const li of order) {
    const l = p.lists[li];
    if (l.n === 0) continue;
    listCount++;
    tableRows += l.n;
    for (const c of l.chunks) chunks.push(c);
    const rem = l.n & (R - 1);
    if (rem) tails.push((chunks.length - 1) * R + rem, chunks.length * R);
  }
  const fill = new Uint8Array(chunks.length).fill(R);
  for (let t = 0; t < tails.length; t += 2) fill[tails[t] >> shift] = tails[t] & (R - 1);
  return { chunks, tails, fill, tableRows, listCount, probed: lists !== null, want };
}

/**
 * The chunks holding the given slots (an explicit row filter, AllowFilter.rowIds), in chunk-number
 * order. Reading only them is what makes a one-video filter cost its own rows rather than a mask
 * over the whole partition (39 ms at 10 M rows).
 */
export function selectSlots(p: Partition, slots: readonly number[]): Selection {
  const R = p.chunkRows,
    shift = p.chunkShift;
  const chunks = [...new Set(slots.map((s) => s >> shift))].sort((a, b) => a - b);
  const fill = new Uint8Array(chunks.length).fill(R);
  const tails: number[] = [];
  let tableRows = 0;
  for (let i = 0; i < chunks.length; i++) {
    const l = p.lists[p.chunkList[chunks[i]]];
    const rem = l.n & (R - 1);
    // Only a list's last chunk is part-filled.
    if (rem && l.chunks[l.chunks.length - 1] === chunks[i]) {
      fill[i] = rem;
      tails.push(i * R + rem, (i + 1) * R);
    }
    tableRows += fill[i];
  }
  return { chunks, tails, fill, tableRows, listCount: 0, probed: false, want: 0 };
}

/** Smallest distance T whose cumulative histogram count reaches `want` (padDim if never). */
export function thresholdFor(u32: Uint32Array, hist: number, padDim: number, want: number): number {
  let cum = 0;
  for (let d = 0; d <= padDim; d++) {
    cum += u32[hist + d];
    if (cum >= want) return d;
  }
  return padDim;
}

/**
 * Rows kept after each stage for `allowed` rows: coarse = 40·√allowed (4 % at 1 M; 8 192..131 072), or the caller's
 * `candidates`), middle = 10 % of coarse (≥ 1 024, ≥ 4k), rescored = max(64, min(4k, k + 256)). Chosen on the 1 M
 * clustered set with text-like queries (40 queries): recall@10 0.955 / 0.975 / 0.98 at coarse
 * 30 000 / 40 000 / 50 000, and with coarse 50 000, middle at 4 % / 6 % / 10 % of it gave
 * 0.94 / 0.96 / 0.98. bench/vector-bench.ts reproduces the sweep. Probed lists with
 * `inDistribution` (image queries): the NEAR_* sizes above.
 */
export function stageSizes(
  allowed: number,
  k: number,
  candidates?: number,
  probed = false,
  rescore?: number,
  rescoreMin = RESCORE_MIN,
  rescoreShare = 0,
  inDistribution = false,
): { coarse: number; middle: number; rescore: number } {
  if (probed && inDistribution) {
    const coarse = Math.min(
      allowed,
      Math.max(1, Math.floor(candidates ?? Math.max(NEAR_COARSE_MIN, Math.ceil(allowed * NEAR_COARSE_FRACTION)))),
    );
    const middle = Math.min(coarse, Math.max(RESCORE_PER_K * k, NEAR_MIDDLE_MIN, Math.ceil(coarse * MIDDLE_FRACTION)));
    const rescoreWanted =
      rescore !== undefined
        ? Math.max(k, Math.floor(rescore))
        : Math.max(NEAR_RESCORE_MIN, Math.min(RESCORE_PER_K * k, k + RESCORE_MARGIN));
    const mid = Math.max(middle, Math.min(coarse, rescoreWanted));
    return { coarse, middle: mid, rescore: Math.min(mid, rescoreWanted) };
  }
  // A full scan keeps COARSE_PER_SQRT·√allowed (= 4 % at 1 M): the candidates a top-10 needs grow
  // more slowly than the rows, but faster than a fixed count (1 collection of 20 at 10 M — 500 k
  // allowed rows — got 0.928 from 4 %). Probed lists are the query's neighbourhood: a share. Also
  // for a text probe's hundreds of thousands of rows: keeping 40·√rows read there instead (22 k
  // candidates of 300 k at 1 M, not 60 k) dropped its recall@10 from 0.976 to 0.919 (issue 27).
  const auto = probed ? Math.ceil(allowed * PROBED_COARSE_FRACTION) : Math.ceil(COARSE_PER_SQRT * Math.sqrt(allowed));
  const coarse = Math.min(allowed, Math.max(1, Math.floor(candidates ?? clamp(auto, COARSE_MIN, COARSE_MAX))));
  const estimateWanted = Math.max(rescoreMin, RESCORE_PER_K * k);
  const middle = Math.min(coarse, Math.max(estimateWanted, MIDDLE_MIN, Math.ceil(coarse * MIDDLE_FRACTION)));
  const rescoreWanted =
    rescore !== undefined
      ? Math.max(k, Math.floor(rescore))
      : Math.max(rescoreMin, Math.ceil(middle * rescoreShare), Math.min(estimateWanted, k + RESCORE_MARGIN));
  // A caller's larger `rescore` also widens the middle pass, so there are that many to rescore.
  const mid = Math.max(middle, Math.min(coarse, rescoreWanted));
  return { coarse, middle: mid, rescore: Math.min(mid, rescoreWanted) };
}

function clamp(x: number, lo: number, hi: number): number {
  return x < lo ? lo : x > hi ? hi : x;
}

export function denseIds(values: readonly number[], lookup: (v: number) => number | undefined): number[] {
  const out: number[] = [];
  for (const v of values) {
    const id = lookup(v);
    if (id !== undefined) out.push(id);
  }
  return out;
}

/** u16 table of `span` entries: 0 for allowed ids, MASKED for the rest. */
export function fillTable(u16: Uint16Array, at: number, span: number, allowed: number[]): void {
  u16.fill(MASKED, at, at + span);
  for (const id of allowed) u16[at + id] = 0;
}

/** Byte offsets (16-aligned) of named regions laid out back to back, plus the total. */
export function carve<T extends Record<string, number>>(sizes: T): { [K in keyof T]: number } & { total: number } {
  const out: Record<string, number> = {};
  let off = 0;
  for (const [name, bytes] of Object.entries(sizes)) {
    out[name] = off;
    off += round16(bytes);
  }
  out.total = off;
  return out as { [K in keyof T]: number } & { total: number };
}
