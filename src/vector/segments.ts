/**
 * An index made of segments, each a VectorIndexImpl with its own WebAssembly memory, so that the
 * 4 GiB a WebAssembly memory can address is a limit per segment, not per process (issue 14).
 *
 * Rows go to the newest segment; once its memory passes `segmentBytes` (default 1.5 GiB, chosen
 * when a retrain copied a partition; kept as headroom), a new segment starts. A
 * search asks every segment holding the partition with the same k and filters, and merges their
 * answers by exact cosine, so filters still apply before ranking in each. Removing or replacing a
 * row finds it in whichever segment holds it.
 */
import { emptyCompactionStats, type CompactionStats } from "./compact.ts";
import type { TrainingStats } from "./retrain.ts";
import type { ByteSource, SegmentHeader } from "./snapshot.ts";
import type {
  Candidates,
  CompactionResult,
  IndexSnapshot,
  SearchOptions,
  SearchResult,
  SearchStats,
  VectorIndex,
  VectorIndexOptions,
  VectorRow,
} from "./types.ts";
import { VectorIndexImpl } from "./vector-index.ts";

const DEFAULT_SEGMENT_BYTES = 1.5 * 2 ** 30;
/** Rows added between checks of the current segment's size. */
const ADD_SLICE = 4096;

/** Candidates of several segments: each part is rescored by its own segment. */
interface SegmentedCandidates extends Candidates {
  readonly parts: { seg: VectorIndexImpl; c: Candidates; st: SearchStats }[];
}

export class SegmentedIndex implements VectorIndex {
  readonly dim: number;
  private readonly segs: VectorIndexImpl[] = [];
  private readonly segmentBytes: number;

  constructor(private readonly opts: VectorIndexOptions) {
    this.segmentBytes = Math.max(1 << 20, opts.segmentBytes ?? DEFAULT_SEGMENT_BYTES);
    this.segs.push(new VectorIndexImpl(opts));
    this.dim = this.segs[0].dim;
  }

  /** Segments (WebAssembly memories) in use. */
  get segments(): number {
    return this.segs.length;
  }

  get size(): number {
    return this.segs.reduce((n, s) => n + s.size, 0);
  }

  get center(): Float32Array | null {
    return this.segs[0].center;
  }

  get memoryBytes(): number {
    return this.segs.reduce((n, s) => n + s.memoryBytes, 0);
  }

  get rowBytes(): number {
    return this.segs[0].rowBytes;
  }

  get liveBytes(): number {
    return this.segs.reduce((n, s) => n + s.liveBytes, 0);
  }

  has(rowId: number): boolean {
    return this.segs.some((s) => s.has(rowId));
  }

  partitionSize(partition: string): number {
    return this.segs.reduce((n, s) => n + s.partitionSize(partition), 0);
  }

  listCount(partition: string): number {
    return this.segs.reduce((n, s) => n + s.listCount(partition), 0);
  }

  get training(): TrainingStats {
    const all = this.segs.map((s) => s.training);
    const t: TrainingStats = {
      retrains: 0,
      pending: 0,
      slices: 0,
      maxSliceMs: 0,
      maxSliceCpuMs: 0,
      cpuMs: 0,
      errors: 0,
    };
    for (const s of all) {
      t.retrains += s.retrains;
      t.pending += s.pending;
      t.slices += s.slices;
      t.errors += s.errors;
      t.maxSliceMs = Math.max(t.maxSliceMs, s.maxSliceMs);
      t.maxSliceCpuMs = Math.max(t.maxSliceCpuMs, s.maxSliceCpuMs);
      t.cpuMs += s.cpuMs;
      t.lastError = s.lastError ?? t.lastError;
    }
    return t;
  }

  compact(): CompactionResult {
    const total: CompactionResult = { bytesBefore: 0, bytesAfter: 0, ms: 0 };
    for (const s of this.segs) {
      const before = s.memoryStats.arenaBytes;
      const r = s.compact() ?? { bytesBefore: before, bytesAfter: before, ms: 0 };
      total.bytesBefore += r.bytesBefore;
      total.bytesAfter += r.bytesAfter;
      total.ms += r.ms;
    }
    return total;
  }

  get compactions(): CompactionStats {
    const t = emptyCompactionStats();
    for (const s of this.segs) {
      const c = s.compactions;
      t.count += c.count;
      t.pending += c.pending;
      t.abandoned += c.abandoned;
      t.bytesGivenBack += c.bytesGivenBack;
      t.lastMs = c.count > 0 ? c.lastMs : t.lastMs;
      t.lastCpuMs = c.count > 0 ? c.lastCpuMs : t.lastCpuMs;
      t.maxMs = Math.max(t.maxMs, c.maxMs);
      t.slices += c.slices;
      t.maxSliceMs = Math.max(t.maxSliceMs, c.maxSliceMs);
      t.maxSliceCpuMs = Math.max(t.maxSliceCpuMs, c.maxSliceCpuMs);
      t.peakBytes = Math.max(t.peakBytes, c.peakBytes);
      t.errors += c.errors;
      t.lastError = c.lastError ?? t.lastError;
    }
    return t;
  }

  flushTraining(): void {
    for (const s of this.segs) s.flushTraining();
  }

  async whenTrained(): Promise<void> {
    // A segment may start a retrain while another is awaited: loop until all are idle at once.
    while (this.training.pending > 0) await Promise.all(this.segs.map((s) => s.whenTrained()));
  }

  rebuild(partition: string): void {
    for (const s of this.segs) s.rebuild(partition);
  }

  add(rows: readonly VectorRow[]): void {
    for (let i = 0; i < rows.length; i += ADD_SLICE) {
      const slice = rows.length <= ADD_SLICE ? rows : rows.slice(i, i + ADD_SLICE);
      let current = this.segs[this.segs.length - 1];
      if (current.memoryBytes >= this.segmentBytes && current.size > 0) {
        // Later segments take the first one's centre: their codes then match (and skip relearning).
        current = new VectorIndexImpl({ ...this.opts, center: this.segs[0].center ?? this.opts.center });
        this.segs.push(current);
      }
      // A row already held by an older segment is replaced there by removal, then added here.
      if (this.segs.length > 1) {
        const ids = slice.map((r) => r.rowId);
        for (const s of this.segs) if (s !== current) s.remove(ids);
      }
      current.add(slice);
    }
  }

  remove(rowIds: Iterable<number>): number {
    if (this.segs.length === 1) return this.segs[0].remove(rowIds);
    const ids = [...rowIds];
    return this.segs.reduce((n, s) => n + s.remove(ids), 0);
  }

  search(query: Float32Array, opts: SearchOptions): SearchResult[] {
    const holding = this.segs.filter((s) => s.partitionSize(opts.partition) > 0);
    if (holding.length <= 1) {
      const seg = holding[0] ?? this.segs[0];
      return seg.search(query, { ...opts, reuse: this.segReuse(opts, this.segs.indexOf(seg)) });
    }
    const c = this.candidates(query, opts);
    // Each segment reads its own source (they share one in practice).
    return this.rescore(
      c,
      (c as SegmentedCandidates).parts.flatMap((p) => p.seg.vectorsOf(p.c.rowIds)),
    );
  }

  /** Every segment's candidates, side by side (rescore splits the vectors back). */
  candidates(query: Float32Array, opts: SearchOptions): Candidates {
    const holding = this.segs.filter((s) => s.partitionSize(opts.partition) > 0);
    if (holding.length <= 1) {
      const seg = holding[0] ?? this.segs[0];
      return seg.candidates(query, { ...opts, reuse: this.segReuse(opts, this.segs.indexOf(seg)) });
    }
    const total: SearchStats = {
      path: "empty",
      allowed: 0,
      coarse: 0,
      middle: 0,
      rescored: 0,
      lists: 0,
      scanned: 0,
      ms: { filter: 0, scan: 0, estimate: 0, rescore: 0, total: 0 },
    };
    const parts = holding.map((seg) => {
      const st = { ...total, ms: { ...total.ms } };
      const c = seg.candidates(query, { ...opts, stats: st, reuse: this.segReuse(opts, this.segs.indexOf(seg)) });
      return { seg, c, st };
    });
    const out: SegmentedCandidates = {
      parts,
      rowIds: parts.flatMap((p) => p.c.rowIds),
      unit: parts[0].c.unit,
      k: opts.k,
      finish: (all) => {
        for (const { st } of parts) {
          if (st.path === "approx" || (st.path === "exact" && total.path === "empty")) total.path = st.path;
          for (const key of ["allowed", "coarse", "middle", "rescored", "lists", "scanned"] as const)
            total[key] = (total[key] ?? 0) + (st[key] ?? 0);
          for (const key of ["filter", "scan", "estimate", "rescore", "total"] as const) total.ms[key] += st.ms[key];
        }
        if (opts.stats) Object.assign(opts.stats, total);
        return all;
      },
    };
    return out;
  }

  rescore(c: Candidates, vectors: readonly (Float32Array | undefined)[]): SearchResult[] {
    const parts = (c as Partial<SegmentedCandidates>).parts;
    if (!parts) return this.segs[0].rescore(c, vectors); // one segment's own candidates
    return this.merged(c, parts, (p, at, n) => p.seg.rescore(p.c, vectors.slice(at, at + n)));
  }

  rescoreCosines(c: Candidates, cosines: ArrayLike<number>): SearchResult[] {
    const parts = (c as Partial<SegmentedCandidates>).parts;
    if (!parts) return this.segs[0].rescoreCosines(c, cosines);
    return this.merged(c, parts, (p, at, n) =>
      p.seg.rescoreCosines(p.c, Array.prototype.slice.call(cosines, at, at + n)),
    );
  }

  /** Each segment's part rescored (its slice of the candidates at `at`, `n` long), merged → best k. */
  private merged(
    c: Candidates,
    parts: SegmentedCandidates["parts"],
    rescorePart: (p: SegmentedCandidates["parts"][number], at: number, n: number) => SearchResult[],
  ): SearchResult[] {
    const all: SearchResult[] = [];
    let at = 0;
    for (const p of parts) {
      const n = p.c.rowIds.length;
      for (const r of rescorePart(p, at, n)) all.push(r);
      at += n;
    }
    all.sort((a, b) => b.score - a.score || a.rowId - b.rowId);
    return c.finish(all.slice(0, c.k), 0);
  }

  forEachRow(fn: (rowId: number, partition: string, groupA: number, groupB: number) => void): void {
    for (const s of this.segs) s.forEachRow(fn);
  }

  /** Changes with any change of any segment's rows or layout (and with their number). */
  get version(): string {
    return this.segs.map((s) => s.version).join("/");
  }

  snapshot(): IndexSnapshot {
    const version = this.version;
    const headers = this.segs.map((s) => s.snapshotHeader());
    const segs = [...this.segs];
    return {
      headers,
      version,
      *body() {
        for (let i = 0; i < segs.length; i++) yield* segs[i].snapshotBody(headers[i]);
      },
    };
  }

  *restore(headers: readonly SegmentHeader[], read: ByteSource): Generator<void, void> {
    if (this.size > 0 || this.segs.length !== 1) throw new Error("restore: the index holds rows");
    for (let i = 0; i < headers.length; i++) {
      if (i > 0) this.segs.push(new VectorIndexImpl({ ...this.opts }));
      yield* this.segs[i].restore(headers[i], read);
    }
  }

  /** Each segment keeps its own coarse-pass reuse state inside the caller's object. */
  private segReuse(opts: SearchOptions, i: number): SearchOptions["reuse"] {
    if (!opts.reuse) return undefined;
    const r = opts.reuse as { segs?: object[] };
    r.segs ??= [];
    return (r.segs[i] ??= {});
  }
}
