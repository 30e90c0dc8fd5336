/**
 * Saving the in-memory index's snapshot (issue 27; loading it is index-loader.ts, the file
 * snapshot-file.ts, a segment's bytes src/vector/snapshot.ts).
 *
 * The watermark a snapshot records is the latest change (migration 010's sequence) the index
 * reflects: every change at or below it was applied. The saver knows the change at which the
 * index was complete (`base`: the log's position when a pass over the store began, or a loaded
 * snapshot's watermark once its changes were replayed) and the changes applied since (the event
 * hooks, the replay); a video changed since that nothing applied yet (a stage whose rows are
 * written but not yet committed as a stage) holds the watermark just below its change.
 *
 * Snapshots are written when a load ends, every `everyMs` while the log moves, and at close. The
 * periodic writes run a few pieces per event-loop turn and are given up (and tried again later)
 * when the index changes under them; the close writes at once.
 */
import type { Logger } from "../core/logger.ts";
import type { SegmentHeader } from "../vector/index.ts";
import type { MemoryBackendOptions, MemoryVectorBackend } from "./memory-backend.ts";
import { type SnapshotWrite, writeSnapshotFile } from "./snapshot-file.ts";
import type { VectorKind } from "./store.ts";
import type { VectorChangeStore } from "./vector-change-store.ts";

export interface SnapshotOptions {
  /** The snapshot file (`<data dir>/index/vectors.snap`). */
  path: string;
  /** How often a changed index is saved again (default SNAPSHOT_EVERY_MS). */
  everyMs?: number;
}

/** What the file's header holds (besides the format, snapshot-file.ts). */
export interface SnapshotHeader {
  kind: "vsearch-vector-index";
  watermark: number;
  /** The change history the watermark counts in (VectorChangeStore.databaseId). */
  database: string;
  createdAt: string;
  /** The index options it was built with (another set is not loaded: list training differs). */
  options: MemoryBackendOptions["index"];
  groups: [string, number][];
  nextGroup: number;
  indexes: { kind: VectorKind; modelId: string; dim: number; segments: SegmentHeader[] }[];
}

const SNAPSHOT_EVERY_MS = 10 * 60_000;
/** A periodic write's turn: pieces written until this many ms passed, then the next turn. */
const WRITE_SLICE_MS = 8;
/** After a periodic write was given up (the index changed under it), the next try. */
const RETRY_MS = 30_000;

export class SnapshotSaver {
  /** Every change at or below this is in the index. */
  private base = 0;
  /** Videos changed after `base` whose change was applied: the latest change applied. */
  private readonly applied = new Map<string, number>();
  /** The watermark of the snapshot on disk (-1: none known). */
  private savedAt = -1;
  private writing: { write: SnapshotWrite } | null = null;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private closed = false;

  constructor(
    private readonly b: MemoryVectorBackend,
    private readonly changes: VectorChangeStore,
    private readonly opts: SnapshotOptions,
    /** Whether the index is complete (its load ended): nothing is saved before. */
    private readonly loaded: () => boolean,
    private readonly logger?: Logger,
  ) {}

  /** The index holds every change up to `seq` (a pass began there; a snapshot of `seq` was loaded, `onDisk`). */
  completeAt(seq: number, onDisk = false): void {
    this.base = seq;
    this.applied.clear();
    if (onDisk) this.savedAt = seq;
  }

  /** These videos' current rows (or their deletion) are in the index now. */
  async applied_(videoIds: string[]): Promise<void> {
    for (const v of videoIds) {
      const seq = await this.changes.of(v);
      if (seq > this.base) this.applied.set(v, Math.max(this.applied.get(v) ?? 0, seq));
    }
  }

  /** The same, when the change is known (the replay reads it from the log). */
  appliedAt(videoId: string, seq: number): void {
    if (seq > this.base) this.applied.set(videoId, Math.max(this.applied.get(videoId) ?? 0, seq));
  }

  /**
   * The latest change the index reflects: the log's position (read first, so every change at or
   * below it is in the list read next), unless a video changed after `base` that nothing applied
   * yet; then just below the first such change.
   */
  async watermark(): Promise<number> {
    const now = await this.changes.current();
    let w = now;
    for (const c of await this.changes.after(this.base)) {
      if (c.seq > now) break;
      if ((this.applied.get(c.video_id) ?? 0) < c.seq) {
        w = c.seq - 1;
        break;
      }
    }
    return Math.max(this.base, w);
  }

  /** Saves once `ms` passed (the load's end: 0), then every `everyMs`. */
  schedule(ms = this.opts.everyMs ?? SNAPSHOT_EVERY_MS): void {
    if (this.closed || this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.saveInTurns();
    }, ms);
    this.timer.unref?.();
  }

  /** Whether a snapshot now would differ from the one on disk and can be taken (loaded, nothing retraining). */
  private async due(): Promise<boolean> {
    if (!this.loaded() || this.writing) return false;
    for (const ki of this.b.indexes.values()) if (ki.index.training.pending > 0) return false;
    return this.savedAt < 0 || (await this.watermark()) !== this.savedAt;
  }

  private async start(): Promise<{ write: SnapshotWrite; versions: string[]; watermark: number }> {
    const watermark = await this.watermark();
    const kis = [...this.b.indexes.values()].filter((ki) => ki.index.size > 0);
    const snaps = kis.map((ki) => ki.index.snapshot());
    const header: SnapshotHeader = {
      kind: "vsearch-vector-index",
      watermark,
      database: await this.changes.databaseId(),
      createdAt: new Date().toISOString(),
      options: this.b.options,
      groups: [...this.b.groupIds],
      nextGroup: this.b.nextGroup,
      indexes: kis.map((ki, i) => ({
        kind: ki.kind,
        modelId: ki.modelId,
        dim: ki.index.dim,
        segments: snaps[i].headers,
      })),
    };
    const body = (function* () {
      for (const s of snaps) yield* s.body();
    })();
    return { write: writeSnapshotFile(this.opts.path, header, body), versions: snaps.map((s) => s.version), watermark };
  }

  private async committed(watermark: number, ms: number): Promise<void> {
    this.savedAt = watermark;
    // Everything at or below the watermark is in: it is the new base, and older tombstones can go.
    this.base = watermark;
    for (const [v, seq] of this.applied) if (seq <= watermark) this.applied.delete(v);
    await this.changes.prune(watermark);
    this.logger?.info("search index snapshot saved", { watermark, rows: this.b.rows(), ms: Math.round(ms) });
  }

  private failed(e: unknown): void {
    this.logger?.warn("search index snapshot not saved", { err: e instanceof Error ? e.message : String(e) });
  }

  /** A periodic save, a few pieces per event-loop turn; given up when the index changes meanwhile. */
  private async saveInTurns(): Promise<void> {
    if (!(await this.due())) return this.schedule();
    const t0 = performance.now();
    const kis = [...this.b.indexes.values()].filter((ki) => ki.index.size > 0);
    let w: Awaited<ReturnType<SnapshotSaver["start"]>> | null = null;
    try {
      w = await this.start();
      this.writing = w;
      for (;;) {
        const until = performance.now() + WRITE_SLICE_MS;
        let more = true;
        while (more && performance.now() < until) more = w.write.step();
        if (!more) break;
        await new Promise((r) => setImmediate(r));
        if (this.closed || kis.some((ki, i) => ki.index.version !== w!.versions[i])) {
          w.write.abort();
          this.writing = null;
          return this.schedule(RETRY_MS);
        }
      }
      w.write.commit();
      await this.committed(w.watermark, performance.now() - t0);
    } catch (e) {
      w?.write.abort();
      this.failed(e);
    } finally {
      this.writing = null;
    }
    this.schedule();
  }

  /** At close: no more periodic saves; a due snapshot is written now, whole. */
  async saveNow(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.writing?.write.abort();
    this.writing = null;
    if (!(await this.due())) return;
    const t0 = performance.now();
    let w: Awaited<ReturnType<SnapshotSaver["start"]>> | null = null;
    try {
      w = await this.start();
      while (w.write.step());
      w.write.commit();
      await this.committed(w.watermark, performance.now() - t0);
    } catch (e) {
      w?.write.abort();
      this.failed(e);
    }
  }
}
