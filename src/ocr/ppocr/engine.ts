import { statSync } from "node:fs";
import { OcrError, type GrayFrame } from "../engine.ts";
import { DET_MAX_SIDE, type TextBox } from "./detect.ts";
import type { PpOcrFiles } from "./model.ts";
import type { PpOcrReply, PpOcrTask } from "./worker.ts";

export { DET_MAX_SIDE };

type PiscinaPool = import("piscina").Piscina;

export interface PpOcrEngineOptions {
  /** The task module (ppocr/worker.ts, or its copy inside the binary) and the model files. */
  workerFile: string;
  files: PpOcrFiles;
  /** Worker threads at most, each running ONNX Runtime on one thread. Default 1. */
  workers?: number;
  /** Long side of the frame as the detector sees it (px). Default DET_MAX_SIDE. */
  detMaxSide?: number;
  /** Ends the worker threads once none has had a task for this long (0 or absent: never). */
  idleCloseMs?: number;
  /** Called after idle workers were ended (not after `close()`). */
  onIdleClosed?: (workers: number) => void;
}

/**
 * PP-OCR (PaddleOCR's v4 detector and recognizer, ONNX) in a pool of worker threads: at most
 * `workers` threads, each with one ONNX Runtime intra-op thread and one task at a time, so OCR
 * never takes more than that many cores however many frames wait. The threads start on the first
 * task and end after `idleCloseMs` without one (each holds its two sessions, ~15 MB of weights and
 * ONNX Runtime's buffers). The caller decides what to read: `detect` finds the text boxes of a
 * frame, `recognize` reads boxes cut out of it (src/ocr/ppocr/read.ts), so a line already read and
 * unchanged costs nothing.
 */
export class PpOcrEngine {
  readonly kind = "ppocr" as const;
  private pool: PiscinaPool | null = null;
  private starting: Promise<PiscinaPool> | null = null;
  private inflight = 0;
  private closed = false;
  private idleTimer: ReturnType<typeof setTimeout> | null = null;
  private readonly max: number;

  constructor(private readonly opts: PpOcrEngineOptions) {
    this.max = Math.max(1, Math.floor(opts.workers ?? 1));
  }

  /** Long side of a frame as the detector sees it (px). */
  get detMaxSide(): number {
    return this.opts.detMaxSide ?? DET_MAX_SIDE;
  }

  /**
   * Starts a worker thread and loads the models in it, so the first frame does not wait for them
   * (ingest calls it when a video's decode starts: the load overlaps the frame decode). Failures
   * are left to the first real task, which reports them.
   */
  warm(): void {
    if (this.closed || this.pool || this.busy) return;
    void this.run({ kind: "load", files: this.opts.files }).catch(() => {});
  }

  /** Text boxes in the frame (frame pixels), top to bottom. The frame is copied to the worker. */
  async detect(frame: GrayFrame): Promise<TextBox[]> {
    const reply = await this.run({
      kind: "detect",
      files: this.opts.files,
      frame,
      maxSide: this.detMaxSide,
    });
    return reply.boxes ?? [];
  }

  /** The text of each crop (a box's pixels cut out of a frame); confidence 0..1. */
  async recognize(crops: GrayFrame[]): Promise<{ text: string; confidence: number }[]> {
    if (crops.length === 0) return [];
    const reply = await this.run({ kind: "recognize", files: this.opts.files, crops });
    return reply.texts ?? [];
  }

  /** Worker threads running now (0 before the first task and after an idle close). */
  get running(): number {
    return this.pool?.threads.length ?? 0;
  }

  /** Whether a task is running or waiting. */
  get busy(): boolean {
    return this.inflight > 0;
  }

  /** Ends the worker threads if none has a task; returns how many ended. */
  async closeIdle(): Promise<number> {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = null;
    if (this.closed || this.busy || !this.pool) return 0;
    const pool = this.pool;
    const n = pool.threads.length;
    this.pool = null;
    this.starting = null;
    await pool.destroy();
    this.opts.onIdleClosed?.(n);
    return n;
  }

  /** Ends every worker thread; later calls fail. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = null;
    const pool = this.pool ?? (await this.starting?.catch(() => null));
    this.pool = null;
    this.starting = null;
    // Frames not started are refused; those being read finish first: a thread ended in the middle
    // of an ONNX Runtime call aborts the whole process while Bun tears it down (Napi::Error).
    await pool?.close({ force: true });
  }

  private async run(task: PpOcrTask): Promise<Extract<PpOcrReply, { ok: true }>> {
    if (this.closed) throw new OcrError("the OCR engine was closed");
    this.inflight++;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = null;
    try {
      const pool = await this.start();
      let reply: PpOcrReply;
      try {
        reply = await pool.run(task);
      } catch (e) {
        throw new OcrError(`the OCR worker failed: ${e instanceof Error ? e.message : String(e)}`);
      }
      if (!reply.ok) throw new OcrError(`OCR failed on a frame: ${reply.message}`);
      return reply;
    } finally {
      this.inflight--;
      this.armIdleClose();
    }
  }

  private start(): Promise<PiscinaPool> {
    if (this.pool) return Promise.resolve(this.pool);
    this.starting ??= (async () => {
      for (const f of [this.opts.files.det, this.opts.files.rec, this.opts.files.keys]) {
        if (!statSync(f, { throwIfNoEntry: false })?.isFile())
          throw new OcrError(`the PP-OCR model file is missing (${f})`);
      }
      // Loaded here, not at import: a process that never reads text starts no pool.
      const { Piscina } = await import("piscina");
      const pool = new Piscina({
        filename: this.opts.workerFile,
        minThreads: 0,
        maxThreads: this.max,
        concurrentTasksPerWorker: 1,
        // Threads end on our idle timer (closeIdle), not Piscina's.
        idleTimeout: 2 ** 31 - 1,
        // close() waits this long for the frames being read (see close).
        closeTimeout: 10_000,
      });
      // Piscina emits its close timeout as an "error" event (unhandled, it would throw); the close
      // ends the threads anyway, and the frames still being read have no one waiting for them.
      pool.on("error", () => {});
      this.pool = pool;
      return pool;
    })().catch((e) => {
      this.starting = null;
      throw e;
    });
    return this.starting;
  }

  /** (Re)starts the idle countdown once nothing is in flight: it runs from the last task. */
  private armIdleClose(): void {
    const ms = this.opts.idleCloseMs ?? 0;
    if (ms <= 0 || this.closed || this.busy) return;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => void this.closeIdle(), ms);
    this.idleTimer.unref?.();
  }
}
