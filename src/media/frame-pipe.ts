import { MediaError } from "./errors.ts";
import type { ToolProcess } from "./process.ts";
import type { ShowinfoFrame } from "./showinfo.ts";

/**
 * The showinfo lines of one ffmpeg run, in order. showinfo logs a frame before ffmpeg writes it,
 * but stdout and stderr are read independently: `next()` waits for the line when the pixels win
 * the race, and answers null once stderr has closed with no line left.
 */
export class ShowinfoQueue {
  private readonly items: ShowinfoFrame[] = [];
  private head = 0;
  private wake: (() => void) | null = null;
  private closed = false;

  push(f: ShowinfoFrame): void {
    this.items.push(f);
    this.wake?.();
  }

  close(): void {
    this.closed = true;
    this.wake?.();
  }

  async next(): Promise<ShowinfoFrame | null> {
    for (;;) {
      if (this.head < this.items.length) {
        const f = this.items[this.head++];
        // Drop what was read now and then, so a long run holds a bounded list.
        if (this.head > 256) {
          this.items.splice(0, this.head);
          this.head = 0;
        }
        return f;
      }
      if (this.closed) return null;
      await new Promise<void>((resolve) => (this.wake = resolve));
      this.wake = null;
    }
  }
}

export interface PipedFrame {
  /** 0-based position in this stream. */
  index: number;
  /** Presentation time in seconds (the previous frame's when this one had no pts). */
  timestamp: number;
  /** `frameBytes` bytes of pixels, owned by the consumer. */
  bytes: Uint8Array;
  keyframe: boolean;
  /** The first frame at or after one of `extras` (a shot boundary). */
  forced: boolean;
}

/**
 * Raw frames of `frameBytes` from ffmpeg's stdout, each paired with its showinfo line. Stops at the
 * end of the stream (a partial frame means ffmpeg died: its exit status says why). One frame is
 * read at a time, so a slow consumer blocks ffmpeg instead of filling memory.
 */
export async function* pipedFrames(
  proc: ToolProcess,
  frameBytes: number,
  infos: ShowinfoQueue,
  extras: readonly number[],
): AsyncGenerator<PipedFrame> {
  let extraAt = 0;
  let prevTime = -Infinity;
  for (let index = 0; ; index++) {
    const bytes = new Uint8Array(frameBytes);
    const got = await proc.readFull(bytes);
    if (got < frameBytes) return;
    const info = await infos.next();
    if (!info)
      throw new MediaError("TOOL_FAILED", "ffmpeg wrote a frame without its showinfo line", proc.stderrTail.join("\n"));
    const t = Number.isNaN(info.time) ? Math.max(0, prevTime) : Math.max(0, info.time);
    let forced = false;
    while (extraAt < extras.length && extras[extraAt] - 1e-4 <= t) {
      if (extras[extraAt] - 1e-4 > prevTime) forced = true;
      extraAt++;
    }
    prevTime = t;
    yield { index, timestamp: t, bytes, keyframe: info.keyframe, forced };
  }
}
