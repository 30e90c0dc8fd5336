/**
 * Search over one partition: first the chunks to read are chosen (plan.ts: every list, or with
 * `probe` the inverted lists nearest the query); positions then index that table of chunks
 * (position i·chunkRows + r ↦ chunk chunks[i], row r). Then four stages:
 *
 *   1. filter   per-slot mask (0 allowed, 0xFFFF not) from the query's collections, videos and
 *               excluded rows — before anything is ranked, so a filtered query gets the true
 *               top-k of its allowed rows, never a post-filtered global top-k;
 *   2. scan     WebAssembly SIMD Hamming distance of every row read to the query's sign bits. The
 *               threshold that lets ~`coarse` rows through is estimated first from a sample of
 *               ~32 k rows (exact histogram for small partitions); rows under it get their
 *               1-bit asymmetric estimate while their codes are in cache;
 *   3. estimate best `middle` by the 1-bit estimate → the middle-pass estimate (2-bit or 4-bit
 *               codes, layout.refineBits) → best `rescored`;
 *   4. rescore  exact cosine from the caller's source vectors → top k.
 *
 * When at most `exactBelow` rows are allowed, 2–3 are skipped: every allowed row is rescored.
 *
 * Over the ~450-line guide on purpose: the four stages share one query's state (mask, distances,
 * candidates); split, that state would be threaded through every file.
 */
import type { Arena } from "./arena.ts";
import type { Encoder, PreparedQuery } from "./encode.ts";
import { MASKED } from "./layout.ts";
import type { Partition } from "./partition.ts";
import type { RowStore } from "./rows.ts";
import { carve, denseIds, fillTable, selectChunks, selectSlots, stageSizes, thresholdFor } from "./plan.ts";
import { bestK, topIndices, type Scored } from "./select.ts";
import type { Candidates, ScanReuse, SearchOptions, SearchResult, SearchStats, VectorSource } from "./types.ts";
import { compactionTable, type Kernels } from "./wasm/kernels.ts";
import { RowDots } from "./wasm/row-dots.ts";

const HIST_BINS = 65536;
/** The threshold aims at this many times `coarse` rows (the sample is an estimate). */
const THRESHOLD_MARGIN = 1.1;
/** Candidate buffer: this many times `coarse`; beyond it, or below MIN_FILL, the scan is redone with the exact threshold. */
const CANDIDATE_BUFFER = 4;
const MIN_FILL = 0.6;
/**
 * The scan's Hamming threshold comes from a sample of the table's rows, in runs of up to
 * SAMPLE_RUN_ROWS adjacent rows (whole chunks; prefetch-friendly). A flat scan samples
 * SAMPLE_MIN_ROWS (~32 k) rows in 32 runs. Probed lists sample ~SAMPLE_HITS·allowed/coarse rows
 * (≥ SAMPLE_FLOOR_ROWS) in ≥ 64 runs, so that ~SAMPLE_HITS sampled rows fall under the threshold
 * (relative error ~1/√SAMPLE_HITS, ~6 %: THRESHOLD_MARGIN and the MIN_FILL / CANDIDATE_BUFFER
 * fallback absorb it); the exact histogram only when the table holds under twice that. Before
 * issue 27 any table under 32 k rows — every image probe up to ~1 M rows — took the exact
 * histogram: a second full pass over the rows read (~13 % of an image query's CPU at 100 k, ~25 %
 * once its stages were narrowed).
 */
const SAMPLE_RUN_ROWS = 1024;
const SAMPLE_MIN_ROWS = 32768;
const SAMPLE_FLOOR_ROWS = 2048;
const SAMPLE_HITS = 256;

/** Up to this many ids per group filter, the mask compares ids with SIMD; above, it looks rows up in a table. */
const MAX_EQ_IDS = 8;

/** Candidates compared per SIMD call in `rescore` (1 MiB of 512-d rows: the scratch never grows past it). */
const RESCORE_BLOCK = 512;

export class Searcher {
  private run: { off: number; bytes: number } | null = null;
  private work = new Float32Array(0);
  private idx = new Int32Array(0);
  private scores = new Float32Array(0);
  private readonly query: PreparedQuery;
  private readonly unit: Float32Array;
  private readonly compact = compactionTable();
  /** Room for the candidates' exact vectors while `rescore` compares them (grows to the largest look-up). */
  private rescoreDots: RowDots | null = null;

  constructor(
    private readonly rows: RowStore,
    private readonly arena: Arena,
    private readonly kernels: Kernels,
    private readonly encoder: Encoder,
    private readonly source: VectorSource | undefined,
    private readonly exactBelow: number,
    /** Fewest rows rescored exactly, and that share of the middle stage's rows (stageSizes; VectorIndexOptions.rescoreMin). */
    private readonly rescoreMin: number,
    private readonly rescoreShare: number,
  ) {
    this.query = encoder.newPreparedQuery();
    this.unit = new Float32Array(rows.layout.dim);
  }

  /** JS-side scratch bytes (the scratch run itself is in the arena). */
  get jsBytes(): number {
    return this.work.byteLength + this.idx.byteLength;
  }

  /** Both halves over the index's own source (tests, tools, benches: a synchronous source). */
  search(query: Float32Array, opts: SearchOptions): SearchResult[] {
    if (!this.source) throw new Error("this index has no vector source: use candidates() and rescore()");
    const c = this.candidates(query, opts);
    return this.rescore(c, c.rowIds.length ? this.source.getVectors(c.rowIds) : []);
  }

  /**
   * Stages 1–3 (filter, scan, estimates): the rows worth an exact look, copied out of the index so
   * they stay valid while the caller fetches their vectors (an await, during which other searches
   * reuse this searcher's scratch and compaction may move the arena). No I/O.
   */
  candidates(query: Float32Array, opts: SearchOptions): Candidates {
    const t0 = performance.now();
    const stats: SearchStats = {
      path: "empty",
      allowed: 0,
      coarse: 0,
      middle: 0,
      rescored: 0,
      ms: { filter: 0, scan: 0, estimate: 0, rescore: 0, total: 0 },
    };
    const done = (out: SearchResult[]) => {
      stats.ms.total = performance.now() - t0;
      if (opts.stats) Object.assign(opts.stats, stats);
      return out;
    };
    const settle = (rowIds: number[]): Candidates => ({
      rowIds,
      // The searcher's query scratch is reused by the next search: the candidates keep their own copy.
      unit: rowIds.length ? this.unit.slice() : this.unit,
      k: opts.k,
      finish: (out, ms) => {
        stats.ms.rescore = ms;
        return done(out);
      },
    });
    const L = this.rows.layout,
      K = this.kernels;

    if (!(query instanceof Float32Array) || query.length !== L.dim) {
      throw new RangeError(`query must be a Float32Array of ${L.dim}`);
    }
    const k = opts.k;
    if (!Number.isInteger(k) || k < 1) throw new RangeError(`k must be a positive integer, got ${k}`);
    if (opts.rescore !== undefined && !(opts.rescore >= 1))
      throw new RangeError(`rescore must be a number ≥ 1, got ${opts.rescore}`);
    const unit = this.unit;
    let qs = 0;
    for (let j = 0; j < L.dim; j++) qs += query[j] * query[j];
    if (!Number.isFinite(qs)) throw new RangeError("query has non-finite values");
    const qinv = qs > 0 ? 1 / Math.sqrt(qs) : 0;
    for (let j = 0; j < L.dim; j++) unit[j] = query[j] * qinv;

    const p = this.rows.partition(opts.partition);
    if (!p || p.n === 0) return settle([]);

    // Filters → dense group ids / slots of this partition.
    const allow = opts.allow ?? {};
    let flags = 0;
    let idsA: number[] = [],
      idsB: number[] = [];
    if (allow.collections) {
      idsA = denseIds(allow.collections, (v) => p.groupA.lookup(v));
      if (idsA.length === 0) return settle([]);
      flags |= 1;
    }
    if (allow.videos) {
      idsB = denseIds(allow.videos, (v) => p.groupB.lookup(v));
      if (idsB.length === 0) return settle([]);
      flags |= 2;
    }
    const exSlots: number[] = [];
    if (allow.excludeRowIds) {
      for (const id of allow.excludeRowIds) {
        const slot = this.rows.slotIn(p, id);
        if (slot !== undefined) exSlots.push(slot);
      }
    }
    let onlySlots: number[] | null = null;
    if (allow.rowIds) {
      onlySlots = [];
      for (const id of allow.rowIds) {
        const slot = this.rows.slotIn(p, id);
        if (slot !== undefined) onlySlots.push(slot);
      }
      if (onlySlots.length === 0) return settle([]);
    }
    const filtered = flags !== 0 || exSlots.length > 0 || onlySlots !== null;

    // Which chunks to read: those holding an explicit row filter's rows; else the lists nearest
    // the query (IVF), or all of them.
    const q = this.query;
    this.encoder.prepareQuery(query, q);
    const bySlots = onlySlots && selectSlots(p, onlySlots);
    // Rows spread over most of the partition's chunks: the plain selection reads the same.
    const sel =
      bySlots && bySlots.tableRows <= p.n / 2
        ? bySlots
        : selectChunks(
            p,
            flags,
            idsA,
            idsB,
            onlySlots ? undefined : opts.probe,
            this.exactBelow,
            () => {
              if (this.scores.length < p.centroids!.count) this.scores = new Float32Array(p.centroids!.count);
              this.rows.listScores(p, query, this.scores);
              return this.scores;
            },
            opts.probeAt,
            opts.probeGrowth,
          );
    const chunks = sel.chunks;
    // Table positions of the excluded rows and of an explicit filter's rows.
    let posOf: Int32Array | null = null;
    const positionsOf = (slots: number[]): number[] => {
      if (!posOf) {
        posOf = new Int32Array(p.scanBlocks.length).fill(-1);
        for (let i = 0; i < chunks.length; i++) posOf[chunks[i]] = i;
      }
      const out: number[] = [];
      for (const slot of slots) {
        const i = posOf[slot >> L.chunkShift];
        if (i >= 0) out.push((i << L.chunkShift) | (slot & (L.chunkRows - 1)));
      }
      return out;
    };
    const excluded = exSlots.length ? positionsOf(exSlots) : [];
    // Rows past the end of a list's last chunk are masked; an unfiltered query's scan skips the
    // mask (reading it cost ~10 %) and drops such rows from its candidates afterwards.
    const useMask = filtered;
    const tableRows = sel.tableRows;

    // Scratch for this query (sizes are upper bounds; the allowed count is known only later).
    const caps = stageSizes(
      tableRows,
      k,
      opts.candidates,
      sel.probed,
      opts.rescore,
      this.rescoreMin,
      this.rescoreShare,
      opts.inDistribution,
    );
    const bufferCap = Math.max(Math.min(tableRows, CANDIDATE_BUFFER * caps.coarse), this.exactBelow + 1);
    const nChunks = chunks.length,
      rows = nChunks * L.chunkRows;
    const lay = carve({
      codeTable: nChunks * 4,
      sideTable: nChunks * 4,
      mask: rows * 2,
      dist: rows * 2,
      code: L.codeBytes,
      planes: L.codeBytes * 4,
      q16: L.padDim * 2,
      hist: HIST_BINS * 4,
      tA: flags & 1 ? p.groupA.span * 2 : 0,
      tB: flags & 2 ? p.groupB.span * 2 : 0,
      idsA: idsA.length * 4,
      idsB: idsB.length * 4,
      compact: 256,
      candSlots: (rows + 4) * 4,
      candEst: (bufferCap + rows - tableRows + L.chunkRows) * 4,
      slots2: caps.middle * 4,
      est2: caps.middle * 4,
    });
    const base = this.ensureScratch(lay.total);
    const at = (name: keyof typeof lay) => base + lay[name];
    const a = this.arena.views();
    const codeTable = at("codeTable") / 4,
      sideTable = at("sideTable") / 4;
    for (let i = 0; i < nChunks; i++) {
      a.i32[codeTable + i] = p.scanBlocks[chunks[i]];
      a.i32[sideTable + i] = p.sideBlocks[chunks[i]];
    }
    const toSlot = (pos: number) => (chunks[pos >> L.chunkShift] << L.chunkShift) | (pos & (L.chunkRows - 1));

    // Stage 1: the mask (0 allowed, 0xFFFF not) per slot.
    const mask = at("mask") / 2;
    if (flags && idsA.length <= MAX_EQ_IDS && idsB.length <= MAX_EQ_IDS) {
      a.i32.set(idsA, at("idsA") / 4);
      a.i32.set(idsB, at("idsB") / 4);
      K.buildMaskIds(at("sideTable"), nChunks, at("idsA"), idsA.length, at("idsB"), idsB.length, at("mask"));
    } else if (flags) {
      if (flags & 1) fillTable(a.u16, at("tA") / 2, p.groupA.span, idsA);
      if (flags & 2) fillTable(a.u16, at("tB") / 2, p.groupB.span, idsB);
      K.buildMask(at("sideTable"), nChunks, at("tA"), at("tB"), flags, at("mask"));
    } else {
      a.u16.fill(0, mask, mask + rows);
    }
    for (let t = 0; t < sel.tails.length; t += 2) a.u16.fill(MASKED, mask + sel.tails[t], mask + sel.tails[t + 1]);
    for (const s of excluded) a.u16[mask + s] = MASKED;
    if (onlySlots) {
      // Explicit rows: only theirs keep what the group filters said; the rest of the table is masked.
      const positions = positionsOf(onlySlots);
      const kept = Uint16Array.from(positions, (pos) => a.u16[mask + pos]);
      a.u16.fill(MASKED, mask, mask + rows);
      positions.forEach((pos, i) => (a.u16[mask + pos] = kept[i]));
    }

    // Allowed rows: counted (and collected, when few enough for the exact path) from the mask.
    let allowed = tableRows;
    if (filtered || tableRows <= this.exactBelow) {
      allowed = K.collect(at("mask"), rows, 0, 0, at("candSlots"), this.exactBelow);
    }
    stats.lists = sel.probed ? sel.listCount : 0;
    stats.scanned = tableRows;
    if (sel.probed && allowed < sel.want / 2 && allowed < tableRows) {
      // The filter's rows are rarer in the probed lists than estimated: read them all instead.
      return this.candidates(query, { ...opts, probe: 1 });
    }
    stats.allowed = allowed;
    stats.ms.filter = performance.now() - t0;
    if (allowed === 0) return settle([]);
    if (allowed <= this.exactBelow) {
      stats.path = "exact";
      stats.rescored = allowed;
      const slots = a.i32.slice(at("candSlots") / 4, at("candSlots") / 4 + allowed).map(toSlot);
      return settle(Array.from(slots, (s) => p.rowIds[s]));
    }

    stats.path = "approx";
    const { coarse, middle, rescore } = stageSizes(
      allowed,
      k,
      opts.candidates,
      sel.probed,
      opts.rescore,
      this.rescoreMin,
      this.rescoreShare,
      opts.inDistribution,
    );
    // Unfiltered queries skip the mask: rows past the end of a list (tails of last chunks) may
    // then pass too, so the buffer has room for them; they are dropped after the scan.
    const cap = Math.min(bufferCap, allowed) + (useMask ? 0 : rows - tableRows);

    // Stage 2: Hamming threshold (sampled), then the full scan, which also computes the
    // candidates' 1-bit estimates.
    let t = performance.now();
    a.u8.set(q.code, at("code"));
    a.u8.set(q.planes, at("planes"));
    if (L.refineBits === 4) a.i16.set(q.q16, at("q16") / 2);
    else a.u8.set(new Uint8Array(q.q8.buffer, q.q8.byteOffset, q.q8.length), at("q16"));
    a.u8.set(this.compact, at("compact"));
    const hist = at("hist") / 4;
    const scanCandidates = useMask ? K.scanMasked : K.scanAll;
    const scan = (T: number) =>
      scanCandidates(
        at("codeTable"),
        0,
        nChunks,
        at("code"),
        at("planes"),
        q.sumAbs,
        q.twoStep,
        at("mask"),
        T,
        at("compact"),
        at("candSlots"),
        at("candEst"),
        cap,
      );
    const distances = (first: number, chunks: number) => {
      K.scanDist(at("codeTable"), first, chunks, at("code"), at("mask"), at("dist"));
      K.histogram(at("dist") + first * L.chunkRows * 2, chunks * L.chunkRows, at("hist"));
    };
    // The coarse candidates do not depend on k: a search that only raises k for the same query
    // and filters takes them from the earlier one (opts.reuse) instead of scanning again.
    const reuse = opts.reuse as ReuseState | undefined;
    const key: ReuseKey = {
      query,
      allow: opts.allow,
      partition: opts.partition,
      version: this.rows.version,
      coarse,
      cap,
      probe: opts.probe,
      probeAt: opts.probeAt,
      probeGrowth: opts.probeGrowth?.join(),
    };
    const reused = reuse?.key && reuse.slots && reuse.est && sameKey(reuse.key, key) ? reuse : null;
    let count: number;
    stats.scanReused = !!reused;
    if (reused) {
      count = reused.slots!.length;
      a.i32.set(reused.slots!, at("candSlots") / 4);
      a.f32.set(reused.est!, at("candEst") / 4);
    } else {
      a.u32.fill(0, hist, hist + L.padDim + 1);
      let T: number;
      const want = THRESHOLD_MARGIN * coarse;
      // A flat scan samples ~32 k rows as before issue 27; probed lists ~SAMPLE_HITS rows under T.
      const sampleRows = sel.probed
        ? Math.min(SAMPLE_MIN_ROWS, Math.max(SAMPLE_FLOOR_ROWS, (SAMPLE_HITS * allowed) / coarse))
        : SAMPLE_MIN_ROWS;
      if (want >= allowed) {
        // Every row is a candidate (a probe's few thousand rows under COARSE_MIN): no threshold to find.
        T = L.padDim;
      } else if (rows >= (sel.probed ? 2 : 1) * sampleRows) {
        // Runs of adjacent chunks (prefetch-friendly), spread over the table so that ~sampleRows
        // rows are sampled; the threshold is scaled from the sample's histogram.
        // Probed tables: ≥ 64 short runs (list-ordered tables vary in distance from list to list).
        const run = Math.max(
          1,
          Math.min(SAMPLE_RUN_ROWS, sel.probed ? sampleRows >> 6 : sampleRows >> 3) >> L.chunkShift,
        );
        const every = Math.max(1, Math.floor((nChunks * L.chunkRows) / sampleRows)) * run;
        for (let c = 0; c < nChunks; c += every) distances(c, Math.min(run, nChunks - c));
        let sampled = 0;
        for (let d = 0; d <= L.padDim; d++) sampled += a.u32[hist + d];
        T = thresholdFor(a.u32, hist, L.padDim, (want * sampled) / allowed);
      } else {
        // Small table: the exact histogram costs less than estimating extra candidates.
        distances(0, nChunks);
        T = thresholdFor(a.u32, hist, L.padDim, coarse);
      }
      count = scan(T);
      if (count > cap || count < MIN_FILL * coarse) {
        // The sample misjudged: the histogram of all distances gives the exact threshold.
        a.u32.fill(0, hist, hist + L.padDim + 1);
        distances(0, nChunks);
        T = thresholdFor(a.u32, hist, L.padDim, coarse);
        count = scan(T);
      }
    }
    if (!useMask) {
      // Unmasked scan: drop candidates past the end of their list's last chunk.
      const slots = a.i32,
        est = a.f32,
        s0 = at("candSlots") / 4,
        e0 = at("candEst") / 4,
        fill = sel.fill;
      const m = Math.min(count, cap);
      let w = 0;
      for (let i = 0; i < m; i++) {
        const pos = slots[s0 + i];
        if ((pos & (L.chunkRows - 1)) < fill[pos >> L.chunkShift]) {
          slots[s0 + w] = pos;
          est[e0 + w] = est[e0 + i];
          w++;
        }
      }
      count = w;
    }
    const n1 = Math.min(count, cap);
    if (reuse && !reused) {
      reuse.key = key;
      reuse.slots = a.i32.slice(at("candSlots") / 4, at("candSlots") / 4 + n1);
      reuse.est = a.f32.slice(at("candEst") / 4, at("candEst") / 4 + n1);
    }
    stats.coarse = n1;
    stats.ms.scan = performance.now() - t;

    // Stage 3: best `middle` by the 1-bit estimate → 4-bit estimate → best `rescore`.
    t = performance.now();
    const { work, idx } = this.jsScratch(n1);
    const n2 = topIndices(a.f32.subarray(at("candEst") / 4), n1, middle, idx, work);
    const slots1 = a.i32.subarray(at("candSlots") / 4);
    const slots2 = a.i32.subarray(at("slots2") / 4);
    for (let i = 0; i < n2; i++) slots2[i] = slots1[idx[i]];
    K.refine(at("slots2"), n2, at("codeTable"), at("sideTable"), at("q16"), q.invScale, q.offset, at("est2"));
    const n3 = topIndices(a.f32.subarray(at("est2") / 4), n2, rescore, idx, work);
    const finalSlots = new Int32Array(n3);
    for (let i = 0; i < n3; i++) finalSlots[i] = toSlot(slots2[idx[i]]);
    stats.middle = n2;
    stats.rescored = n3;
    stats.ms.estimate = performance.now() - t;

    // Stage 4 (exact cosine) is `rescore`, once the caller has the candidates' vectors.
    return settle(Array.from(finalSlots, (s) => p.rowIds[s]));
  }

  /**
   * Stage 4: exact cosine of the candidates against their full-precision vectors (aligned with
   * `c.rowIds`; `undefined` for a row gone meanwhile, which is skipped) → best k. Keeps nothing
   * of the query (its scratch is rewritten by the next).
   */
  rescore(c: Candidates, vectors: readonly (Float32Array | undefined)[]): SearchResult[] {
    const t = performance.now();
    const { rowIds, unit } = c;
    const dim = this.rows.layout.dim;
    const present: Float32Array[] = [];
    const at: number[] = [];
    for (let i = 0; i < rowIds.length; i++) {
      const v = vectors[i];
      if (!v || v.length !== dim) continue;
      present.push(v);
      at.push(i);
    }
    // SIMD dot products and norms (wasm/row-dots.ts; the scalar loop was ~1.4 ms of a 100 k-frame
    // text search), a block of rows at a time: an exact scan's thousands of rows need no more room.
    const rd = (this.rescoreDots ??= new RowDots(dim, RESCORE_BLOCK));
    const cosines = new Float64Array(rowIds.length).fill(Number.NaN);
    for (let from = 0; from < present.length; from += RESCORE_BLOCK) {
      const block = present.slice(from, from + RESCORE_BLOCK);
      rd.load(block);
      const { dots, norms } = rd.dots(unit, block.length, true);
      for (let i = 0; i < block.length; i++) {
        const nn = norms[i];
        cosines[at[from + i]] = nn > 0 ? dots[i] / Math.sqrt(nn) : 0;
      }
    }
    return this.bestOf(c, cosines, t);
  }

  /**
   * Stage 4 with the exact cosines already computed by the caller (search/vector-cache.ts compares
   * the rows where it keeps them): cosines[i] for c.rowIds[i], NaN for a row gone meanwhile.
   */
  rescoreCosines(c: Candidates, cosines: ArrayLike<number>): SearchResult[] {
    return this.bestOf(c, cosines, performance.now());
  }

  /** The best k of the candidates by their cosines (NaN: skipped); the stage's time counted from `t`. */
  private bestOf(c: Candidates, cosines: ArrayLike<number>, t: number): SearchResult[] {
    const scored: Scored[] = [];
    for (let i = 0; i < c.rowIds.length; i++) {
      const score = cosines[i];
      if (!Number.isNaN(score)) scored.push({ rowId: c.rowIds[i], score });
    }
    return c.finish(bestK(scored, c.k), performance.now() - t);
  }

  /** Bytes of the arena scratch run (compaction keeps its size). */
  get scratchBytes(): number {
    return this.run?.bytes ?? 0;
  }

  /** Compaction: a scratch run of the same size in `fresh` (its bytes are per query: nothing to copy), and the step that switches to it. */
  relocateInto(fresh: Arena): () => void {
    const run = this.run ? fresh.allocRun(this.run.bytes) : null;
    return () => {
      this.run = run;
    };
  }

  /** The arena scratch run, grown (doubling) when a query needs more. */
  private ensureScratch(bytes: number): number {
    if (!this.run || this.run.bytes < bytes) {
      const old = this.run;
      this.run = this.arena.allocRun(Math.max(bytes, (old?.bytes ?? 0) * 2));
      if (old) this.arena.freeRun(old);
    }
    return this.run.off;
  }

  private jsScratch(n: number): { work: Float32Array; idx: Int32Array } {
    if (this.work.length < n) {
      this.work = new Float32Array(n);
      this.idx = new Int32Array(n);
    }
    return { work: this.work, idx: this.idx };
  }
}

/** What opts.reuse carries between searches. */
interface ReuseState extends ScanReuse {
  key?: ReuseKey;
  slots?: Int32Array;
  est?: Float32Array;
}

/** What must match for a search to take over an earlier search's coarse candidates. */
interface ReuseKey {
  query: Float32Array;
  allow: SearchOptions["allow"];
  partition: string;
  version: number;
  coarse: number;
  cap: number;
  probe: number | undefined;
  probeAt: number | undefined;
  probeGrowth: string | undefined;
}

function sameKey(a: ReuseKey, b: ReuseKey): boolean {
  return (
    a.query === b.query &&
    a.allow === b.allow &&
    a.partition === b.partition &&
    a.version === b.version &&
    a.coarse === b.coarse &&
    a.cap === b.cap &&
    a.probe === b.probe &&
    a.probeAt === b.probeAt &&
    a.probeGrowth === b.probeGrowth
  );
}
