import { accessSync, constants } from "node:fs";
import { concatBytes } from "../core/bytes.ts";
import { childGuard } from "./child-guard.ts";
import { MediaError } from "./errors.ts";
import { gconvGuardDir } from "./gconv.ts";

/** Where ffmpeg/ffprobe live. Passed in by the caller (src/runtime in the app, test/helpers in tests). */
export interface MediaBins {
  readonly ffmpeg: string;
  readonly ffprobe: string;
  /** Largest decoded frame, in pixels (`max_video_pixels`; default 8K, media/bounds.ts). */
  readonly maxPixels?: number;
}

export interface SpawnOptions {
  /**
   * Wall-clock limit for the whole run, ms. Runs that stream to a consumer of unknown speed leave
   * it out and are bounded by `stallTimeoutMs` instead; every run has at least one of the two.
   */
  timeoutMs?: number;
  /**
   * Kill the tool when it has written nothing (stdout or stderr) for this long *while we are
   * waiting on it*. Time the consumer spends holding a frame does not count: the tool is then
   * blocked by backpressure, not stuck. Long streaming runs rely on this plus `-progress`.
   */
  stallTimeoutMs?: number;
  /** Each stderr line as it arrives (already split; never the whole stderr at once). */
  onStderrLine?: (line: string) => void;
  /** How many trailing stderr lines to keep for error messages. */
  tailLines?: number;
  /**
   * Kills the tool the moment this aborts (a deleted video, a stopping server, a caller that
   * left), even while the consumer is busy elsewhere and the tool sits blocked on a full pipe.
   * Reads as "stopped by caller", like `kill()`.
   */
  signal?: AbortSignal;
}

export interface ToolExit {
  code: number | null;
  signal: string | null;
  /** Last few stderr lines. */
  tail: string[];
}

/** Longest stderr line kept; ffmpeg lines are short, anything longer is garbage we must not buffer. */
const MAX_LINE = 16 * 1024;

/**
 * One running ffmpeg/ffprobe with a pull-based stdout (we read only when the consumer asks, so the
 * pipe fills and the tool blocks — that is the backpressure) and a stderr that is always drained
 * (a tool blocked on a full stderr pipe would otherwise deadlock us) and split into lines.
 */
export class ToolProcess {
  private readonly proc: ReturnType<typeof Bun.spawn>;
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>;
  private readonly stderrDone: Promise<void>;
  private readonly tail: string[] = [];
  private chunk: Uint8Array | null = null;
  private offset = 0;
  private waiting = 0;
  private lastActivity = Date.now();
  private killedBecause: string | null = null;
  private readonly timers: ReturnType<typeof setInterval>[] = [];

  constructor(
    private readonly bin: string,
    args: string[],
    private readonly opts: SpawnOptions,
  ) {
    // Started through a guard that makes the tool die with this process (child-guard.ts).
    const guard = childGuard();
    try {
      // Through a guard the spawn itself succeeds (the guard starts) and a missing tool only shows
      // as the guard's exit: checked here so it is the same clear error as without one.
      if (guard.prefix.length) accessSync(bin, constants.X_OK);
      this.proc = Bun.spawn({
        cmd: [...guard.prefix, bin, ...args],
        stdin: "ignore",
        stdout: "pipe",
        stderr: "pipe",
        // A minimal environment: the tools need nothing from ours (and must not see our secrets);
        // GCONV_PATH works around the static ffprobe crash on MPEG-TS (see gconv.ts).
        env: { GCONV_PATH: gconvGuardDir(), ...guard.env },
      });
    } catch (e) {
      throw new MediaError("TOOL_FAILED", `cannot start ${bin}: ${(e as Error).message}`);
    }
    this.reader = (this.proc.stdout as ReadableStream<Uint8Array>).getReader();
    this.stderrDone = this.pumpStderr(this.proc.stderr as ReadableStream<Uint8Array>);
    if (opts.signal) {
      const onAbort = () => this.kill();
      if (opts.signal.aborted) onAbort();
      else {
        opts.signal.addEventListener("abort", onAbort, { once: true });
        void this.proc.exited.then(() => opts.signal?.removeEventListener("abort", onAbort));
      }
    }
    if (opts.timeoutMs === undefined && opts.stallTimeoutMs === undefined) {
      this.kill("had no time limit");
      throw new MediaError("TOOL_FAILED", "internal: a tool run needs timeoutMs or stallTimeoutMs");
    }
    if (opts.timeoutMs !== undefined) {
      // setTimeout overflows (fires at once) past 2^31-1 ms.
      const ms = Math.min(opts.timeoutMs, 2 ** 31 - 1);
      this.timers.push(setTimeout(() => this.kill(`ran past ${opts.timeoutMs} ms`), ms));
    }
    const stall = opts.stallTimeoutMs;
    if (stall !== undefined) {
      const every = Math.max(50, Math.min(1000, stall / 4));
      this.timers.push(
        setInterval(() => {
          if (this.waiting > 0 && Date.now() - this.lastActivity > stall) this.kill(`made no progress for ${stall} ms`);
        }, every),
      );
    }
  }

  private async pumpStderr(stream: ReadableStream<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder();
    const keep = this.opts.tailLines ?? 12;
    let partial = "";
    const emit = (line: string) => {
      if (line.length === 0) return;
      this.tail.push(line);
      if (this.tail.length > keep) this.tail.shift();
      this.opts.onStderrLine?.(line);
    };
    const reader = stream.getReader();
    try {
      for (;;) {
        const { done, value: bytes } = await reader.read();
        if (done) break;
        this.lastActivity = Date.now();
        partial += decoder.decode(bytes, { stream: true });
        const lines = partial.split(/\r\n|\n|\r/);
        partial = lines.pop() ?? "";
        if (partial.length > MAX_LINE) partial = partial.slice(0, MAX_LINE);
        for (const line of lines) emit(line.length > MAX_LINE ? line.slice(0, MAX_LINE) : line);
      }
      emit(partial + decoder.decode());
    } catch {
      // The pipe closes under us when we kill the tool; the exit status tells the story.
    }
  }

  /**
   * Fills `target` from stdout. Returns the number of bytes written: less than `target.length`
   * only at end of stream. Copies out of Bun's chunks, so the caller owns `target`.
   */
  async readFull(target: Uint8Array): Promise<number> {
    let filled = 0;
    this.waiting++;
    this.lastActivity = Date.now();
    try {
      while (filled < target.length) {
        if (this.chunk === null || this.offset >= this.chunk.length) {
          const r = await this.reader.read();
          if (r.done) break;
          this.chunk = r.value;
          this.offset = 0;
          this.lastActivity = Date.now();
          continue;
        }
        const n = Math.min(target.length - filled, this.chunk.length - this.offset);
        target.set(this.chunk.subarray(this.offset, this.offset + n), filled);
        this.offset += n;
        filled += n;
      }
    } catch {
      // A cancelled/killed pipe reads as end of stream; checked below.
    } finally {
      this.waiting--;
    }
    this.throwIfKilled();
    return filled;
  }

  /** Reads stdout to the end, refusing more than `maxBytes`. */
  async readAll(maxBytes: number): Promise<Uint8Array> {
    const parts: Uint8Array[] = [];
    let total = 0;
    for (;;) {
      const buf = new Uint8Array(64 * 1024);
      const n = await this.readFull(buf);
      total += n;
      if (total > maxBytes) {
        this.kill(`wrote more than ${maxBytes} bytes`);
        throw new MediaError("TOOL_FAILED", `${this.bin} wrote more than ${maxBytes} bytes`);
      }
      parts.push(buf.subarray(0, n));
      if (n < buf.length) break;
    }
    return concatBytes(parts);
  }

  /** Waits for exit and for stderr to be fully read. Throws TIMEOUT if we killed it. */
  async exited(): Promise<ToolExit> {
    this.waiting++;
    try {
      await this.proc.exited;
      await this.stderrDone;
    } finally {
      this.waiting--;
      this.clearTimers();
    }
    this.throwIfKilled();
    const signal = this.proc.signalCode;
    return {
      code: this.proc.exitCode,
      signal: signal === null || signal === undefined ? null : String(signal),
      tail: [...this.tail],
    };
  }

  get stderrTail(): string[] {
    return [...this.tail];
  }

  /** Resolves once stderr has been read to its end (every onStderrLine call has happened). */
  get stderrClosed(): Promise<void> {
    return this.stderrDone;
  }

  /** Kills the tool (if still running) and stops its timers. Safe to call more than once. */
  kill(reason = "stopped by caller"): void {
    if (this.proc.exitCode === null && this.proc.signalCode === null && this.killedBecause === null) {
      this.killedBecause = reason;
      this.proc.kill("SIGKILL");
    }
    this.clearTimers();
  }

  /** For `finally` blocks of consumers that may stop early: kill if running, drop stdout. */
  dispose(): void {
    const running = this.proc.exitCode === null && this.proc.signalCode === null;
    if (running) this.kill();
    this.clearTimers(); // the stall interval would otherwise outlive a run that ended on its own
    this.reader.cancel().catch(() => {});
  }

  private clearTimers(): void {
    for (const t of this.timers) clearTimeout(t);
    this.timers.length = 0;
  }

  private throwIfKilled(): void {
    const r = this.killedBecause;
    if (r !== null && r !== "stopped by caller") {
      throw new MediaError("TIMEOUT", `${basename(this.bin)} ${r}`, this.tail.join("\n"));
    }
  }
}

const basename = (p: string) => p.slice(p.lastIndexOf("/") + 1);

/** Runs a tool to completion, collecting stdout (bounded). Never rejects on a non-zero exit. */
export async function runTool(
  bin: string,
  args: string[],
  opts: SpawnOptions & { maxStdoutBytes?: number },
): Promise<ToolExit & { stdout: Uint8Array }> {
  const p = new ToolProcess(bin, args, opts);
  try {
    const stdout = await p.readAll(opts.maxStdoutBytes ?? 16 * 1024 * 1024);
    const exit = await p.exited();
    return { ...exit, stdout };
  } finally {
    p.dispose();
  }
}

/**
 * The code for a failed run, read from ffmpeg's last words. Anything that is not clearly "missing
 * file" or "crash" counts as a file we cannot decode: that is what the job record should say.
 */
export function failureFromExit(what: string, exit: ToolExit): MediaError {
  const text = exit.tail.join("\n");
  if (exit.signal) {
    return new MediaError("TOOL_FAILED", `${what}: the tool crashed (${exit.signal})`, text);
  }
  if (/No such file or directory/i.test(text)) return new MediaError("FILE_NOT_FOUND", `${what}: file not found`, text);
  const last = lastMeaningfulLine(exit.tail);
  return new MediaError("DECODE_FAILED", `${what}: ${last || `exit code ${exit.code}`}`, text);
}

/**
 * Throws for a failed run that maps one stream of the input (`-map 0:v:0`, `0:a:0`): ffmpeg
 * refuses a map that matches nothing at once, which means the file has no such stream and gets its
 * own code; any other failure is read by failureFromExit.
 */
export function throwIfStreamRunFailed(what: string, exit: ToolExit, stream: "video" | "audio"): void {
  if (exit.code === 0) return;
  if (exit.tail.some((l) => l.includes("matches no streams"))) {
    throw stream === "video"
      ? new MediaError("NO_VIDEO_STREAM", "the file has no video stream")
      : new MediaError("NO_AUDIO_STREAM", "the file has no audio stream");
  }
  throw failureFromExit(what, exit);
}

/** ffmpeg's final "Conversion failed!" says nothing; the line before it usually does. */
function lastMeaningfulLine(tail: string[]): string {
  for (let i = tail.length - 1; i >= 0; i--) {
    const line = tail[i]
      .replace(/^\[[^\]]*@ 0x[0-9a-f]+\]\s*/i, "")
      .replace(/^\[(error|fatal|warning|info)\]\s*/i, "")
      .trim();
    if (line && !/^Conversion failed!?$/i.test(line) && !/^progress=|^\w+=/.test(line)) return line.slice(0, 300);
  }
  return "";
}
