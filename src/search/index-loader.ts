/**
 * How the in-memory index gets its rows at a start, and keeps a snapshot of them (issue 27).
 *
 * With a snapshot (`<data dir>/index/vectors.snap`, snapshot-file.ts): its indexes are loaded
 * block by block (src/vector/snapshot.ts), then every video the change log (migration 010) shows
 * changed after the snapshot's watermark is dropped and read again from the store as it is now
 * ("replay"): rows added, replaced or deleted meanwhile, by this process before it stopped or by
 * another, are all seen. Anything wrong with the file (another format, another layout or encoder,
 * a size or hash that does not match, options that differ) is logged and the file ignored: the
 * pass below runs instead, and the next snapshot replaces the file.
 *
 * Without one, a pass over the store: every account's rows by ascending id, a page per step,
 * frames then shots. Rows of a kind with ids up to the pass's cursor are the event hooks' (a
 * re-indexed video is dropped and its current rows up to the cursor added back), rows above it
 * are the pass's, read as they are when their page comes.
 *
 * Saving the snapshot, and the watermark it records: index-snapshot.ts.
 */
import { existsSync, rmSync } from "node:fs";
import type { Logger } from "../core/logger.ts";
import { type SegmentHeader, SnapshotMismatch, segmentBodyBytes } from "../vector/index.ts";
import type { WarmProgress } from "./index-warmer.ts";
import { KINDS, type KindIndex, type MemoryBackendOptions, type MemoryVectorBackend } from "./memory-backend.ts";
import { type SnapshotHeader, type SnapshotOptions, SnapshotSaver } from "./index-snapshot.ts";
import { openSnapshotFile, type SnapshotRead } from "./snapshot-file.ts";
import type { IndexRow, VectorKind } from "./store.ts";
import type { VectorChangeRow, VectorChangeStore } from "./vector-change-store.ts";

/** Restore steps per `step` call (each reads ≤ 1024 chunks, a few MB). */
const RESTORE_STEPS = 4;
/** Videos replayed per `step` call. */
const REPLAY_VIDEOS = 8;

interface Pass {
  mode: "pass";
  cursor: Record<VectorKind, number>;
  /** Kinds whose last page was read: every row of theirs is the hooks' from then on. */
  done: Record<VectorKind, boolean>;
  /** The highest ids when the pass began (progress only: rows written later are read too). */
  last: Record<VectorKind, number>;
  rows: number;
}

interface Restore {
  mode: "restore";
  file: SnapshotRead;
  header: SnapshotHeader;
  total: number;
  fresh: KindIndex[];
  steps: Generator<void, void>;
}

interface Replay {
  mode: "replay";
  queue: VectorChangeRow[];
  at: number;
  /** Rows the snapshot held. */
  rows: number;
}

export class IndexLoader {
  private state: Pass | Restore | Replay | null = null;
  private finished = false;
  /** Saves the index and knows the watermark it reflects (null: no snapshot configured). */
  private readonly saver: SnapshotSaver | null;
  /** Where the last load came from, for /readyz: the snapshot and what was replayed, or why it was not used. */
  source: string | null = null;

  constructor(
    private readonly b: MemoryVectorBackend,
    private readonly changes: VectorChangeStore | null,
    private readonly snapshot: SnapshotOptions | null,
    private readonly logger?: Logger,
  ) {
    this.saver =
      snapshot && changes ? new SnapshotSaver(b, changes, snapshot, () => this.finished && !this.state, logger) : null;
  }

  /** A load was begun (the app started): searches wait for it; without one, accounts load on first search. */
  get active(): boolean {
    return this.state !== null || this.finished;
  }

  async begin(): Promise<void> {
    if (this.active) return;
    this.b.admission.beginLoad();
    if (this.snapshot && this.changes && existsSync(this.snapshot.path)) {
      try {
        this.state = await this.openRestore(this.snapshot.path);
        return;
      } catch (e) {
        this.ignoreSnapshot(e);
      }
    }
    await this.startPass();
  }

  private async startPass(): Promise<void> {
    // The log's position before the first page: every change after it is seen by the pass or a hook.
    this.saver?.completeAt(await this.changes!.current());
    const s = this.b.store;
    this.state = {
      mode: "pass",
      cursor: { frames: 0, shots: 0 },
      done: { frames: false, shots: false },
      last: { frames: await s.lastIndexRowId("frames"), shots: await s.lastIndexRowId("shots") },
      rows: 0,
    };
  }

  private ignoreSnapshot(e: unknown): void {
    const why = e instanceof Error ? e.message : String(e);
    this.source = `snapshot not used (${why}): read from the store`;
    this.logger?.warn("search index snapshot not used; reading every vector from the store", {
      reason: why,
      path: this.snapshot?.path,
      corrupt: e instanceof SnapshotMismatch,
    });
  }

  /** One step of the load; false once every row is in. */
  async step(maxRows: number): Promise<boolean> {
    const st = this.state;
    if (!st) return false;
    if (st.mode === "pass") return await this.passStep(st, maxRows);
    if (st.mode === "restore") {
      try {
        for (let i = 0; i < RESTORE_STEPS; i++) {
          if (st.steps.next().done) {
            st.file.finish();
            await this.adopt(st);
            return true;
          }
        }
        return true;
      } catch (e) {
        st.file.close();
        this.ignoreSnapshot(e);
        await this.startPass();
        return true;
      }
    }
    // The change log replays in order: a video's later change must land after its earlier one.
    for (let i = 0; i < REPLAY_VIDEOS && st.at < st.queue.length; i++, st.at++) {
      const c = st.queue[st.at];
      await this.b.reloadVideo(c.video_id, await this.b.store.accountOfVideo(c.video_id));
      this.saver?.appliedAt(c.video_id, c.seq);
    }
    if (st.at < st.queue.length) return true;
    this.finish();
    return false;
  }

  /**
   * Loads the next page (at most `maxRows` rows, in id order) and moves the cursor past it. The
   * backend runs each step holding its mutation lock (MemoryVectorBackend.warmStep), which the
   * hooks take too: no hook runs between reading a page and owning its ids.
   */
  private async passStep(w: Pass, maxRows: number): Promise<boolean> {
    const kind = KINDS.find((k) => !w.done[k]);
    if (!kind) {
      this.finish();
      return false;
    }
    const page = await this.b.store.indexRowsAfter(kind, w.cursor[kind], maxRows);
    w.rows += this.b.addIndexRows(kind, page, (ki, r) => !ki.loaded.has(r.account_id));
    if (page.length) w.cursor[kind] = page[page.length - 1].id;
    if (page.length < maxRows) w.done[kind] = true;
    if (KINDS.some((k) => !w.done[k])) return true;
    this.finish();
    return false;
  }

  private finish(): void {
    this.state = null;
    this.finished = true;
    this.b.admission.endLoad();
    this.saver?.schedule(0);
  }

  get progress(): WarmProgress | null {
    const st = this.state;
    if (!st) return this.finished ? { rows: this.b.rows(), fraction: 1, done: true } : null;
    if (st.mode === "pass") {
      const total = st.last.frames + st.last.shots;
      const at = KINDS.reduce((n, k) => n + (st.done[k] ? st.last[k] : Math.min(st.cursor[k], st.last[k])), 0);
      return { rows: st.rows, fraction: total ? at / total : 0, done: false };
    }
    if (st.mode === "restore") {
      const read = st.total - st.file.bodyBytes;
      return {
        rows: st.fresh.reduce((n, ki) => n + ki.index.size, 0),
        fraction: (0.95 * read) / Math.max(1, st.total),
        done: false,
      };
    }
    return { rows: st.rows, fraction: 0.95 + (0.05 * st.at) / Math.max(1, st.queue.length), done: false };
  }

  /**
   * Whether every vector of this account and model is in though the load is not done. A pass:
   * for each kind, it read all of that kind or its cursor is at or past the account's highest id
   * (rows up to the cursor are the pass's or the hooks'). A snapshot: loaded, and none of the
   * account's changed videos waits for its replay.
   */
  async accountWarm(accountId: string, modelId: string): Promise<boolean> {
    const st = this.state;
    if (!st) return true;
    if (st.mode === "restore") return false;
    if (st.mode === "replay") {
      for (let i = st.at; i < st.queue.length; i++) if (st.queue[i].account_id === accountId) return false;
      return true;
    }
    // Two kinds at most, one look-up each.
    for (const k of KINDS) {
      if (st.done[k]) continue;
      if ((await this.b.store.lastIndexRowIdOf(k, accountId, modelId)) > st.cursor[k]) return false;
    }
    return true;
  }

  /** Whether a row the hooks see belongs in the index now. */
  held(ki: KindIndex, r: IndexRow): boolean {
    const st = this.state;
    if (ki.loaded.has(r.account_id)) return true;
    if (!st) return this.finished;
    // While a snapshot loads the hooks leave the index alone: their changes are after its watermark and are replayed.
    if (st.mode === "restore") return false;
    if (st.mode === "replay") return true;
    return st.done[ki.kind] || r.id <= st.cursor[ki.kind];
  }

  /** The hooks applied these videos' current rows (or their deletion): noted for the watermark. */
  async noteChanged(videoIds: string[]): Promise<void> {
    if (this.active) await this.saver?.applied_(videoIds);
  }

  /** At close: the index saved now, when complete and idle. */
  async saveNow(): Promise<void> {
    await this.saver?.saveNow();
  }

  // ---- snapshot: load ------------------------------------------------------------------------

  private async openRestore(path: string): Promise<Restore> {
    const file = openSnapshotFile(path);
    try {
      const h = file.header as SnapshotHeader;
      if (h?.kind !== "vsearch-vector-index" || !Array.isArray(h.indexes) || !Array.isArray(h.groups))
        throw new SnapshotMismatch("not an index snapshot");
      if (JSON.stringify(h.options ?? {}) !== JSON.stringify(this.b.options))
        throw new SnapshotMismatch("made with other index options");
      if (!(Number.isSafeInteger(h.watermark) && h.watermark >= 0)) throw new SnapshotMismatch("no watermark");
      if (h.database !== (await this.changes!.databaseId())) throw new SnapshotMismatch("made for another database");
      if (h.watermark > (await this.changes!.current()))
        throw new SnapshotMismatch(`watermark ${h.watermark} is ahead of the change log (another database?)`);
      const total = file.bodyBytes;
      let described = 0;
      for (const x of h.indexes) for (const seg of x.segments) described += segmentBodyBytes(seg);
      if (described !== total)
        throw new SnapshotMismatch(`the header describes ${described} bytes, the file holds ${total}`);
      if (!this.b.admission.fits(Math.ceil(total / 190)))
        throw new Error(`its ${Math.round(total / 2 ** 20)} MiB do not fit vector_memory_budget`);
      const fresh = h.indexes.map((x) => this.b.newKindIndex(x.kind, x.modelId, x.dim));
      const steps = (function* () {
        for (let i = 0; i < fresh.length; i++)
          yield* fresh[i].index.restore(h.indexes[i].segments, (into) => file.read(into));
      })();
      return { mode: "restore", file, header: h, total, fresh, steps };
    } catch (e) {
      file.close();
      throw e;
    }
  }

  /** The snapshot is whole and checked: its indexes become the backend's, then its changes are replayed. */
  private async adopt(st: Restore): Promise<void> {
    const b = this.b;
    const h = st.header;
    b.indexes.clear();
    b.groupIds.clear();
    for (const [id, n] of h.groups) b.groupIds.set(id, n);
    b.nextGroup = h.nextGroup;
    const idOf = new Map<number, string>();
    for (const [id, n] of h.groups) idOf.set(n, id);
    for (const ki of st.fresh) {
      b.indexes.set(ki.key, ki);
      ki.index.forEachRow((rowId, account, _collection, video) => {
        const v = idOf.get(video);
        if (v === undefined) return;
        let ids = ki.byVideo.get(v);
        if (!ids) ki.byVideo.set(v, (ids = []));
        ids.push(rowId);
        let vs = ki.videosOf.get(account);
        if (!vs) ki.videosOf.set(account, (vs = new Set()));
        vs.add(v);
      });
    }
    this.saver?.completeAt(h.watermark, true);
    const rows = b.rows();
    // Deleted videos leave no trace in the change log (nothing of a deleted account may remain),
    // so the snapshot's videos that are gone from the store are dropped first; their ids are
    // random and never reused, so "gone" cannot mean "replaced".
    const accountOf = new Map<string, string>();
    for (const ki of st.fresh) for (const [account, vs] of ki.videosOf) for (const v of vs) accountOf.set(v, account);
    const present = await b.store.existingVideoIds([...accountOf.keys()]);
    const gone: VectorChangeRow[] = [...accountOf]
      .filter(([v]) => !present.has(v))
      .map(([video_id, account_id]) => ({ video_id, account_id, seq: h.watermark }));
    const queue = [...gone, ...(await this.changes!.after(h.watermark))];
    this.logger?.info("search index snapshot loaded", {
      rows,
      watermark: h.watermark,
      changed_videos: queue.length,
      mb: Math.round(st.total / 2 ** 20),
    });
    this.state = { mode: "replay", queue, at: 0, rows };
    this.source = `from its snapshot, ${queue.length} changed video(s) read again`;
  }

  /** Removes the snapshot (tests, tools). */
  static remove(path: string): void {
    rmSync(path, { force: true });
  }
}
