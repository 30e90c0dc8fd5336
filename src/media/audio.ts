import { decodeLimits } from "./bounds.ts";
import { throwIfStreamRunFailed, ToolProcess, type MediaBins } from "./process.ts";

export const AUDIO_SAMPLE_RATE = 16_000;

export interface AudioWindow {
  index: number;
  /** Start of the window on the video's timeline, seconds (= index × windowSecs). */
  offsetSecs: number;
  /** Mono float samples in [-1, 1] at 16 kHz; windowSecs × 16000 long except the last window. */
  samples: Float32Array;
}

export interface AudioStreamOptions {
  /** Window length in seconds (Whisper's context is 30 s). Default 30. */
  windowSecs?: number;
  /** Kill ffmpeg when it produces nothing for this long while we wait on it. Default 60 s. */
  stallTimeoutMs?: number;
  /** Optional wall-clock limit for the whole run, consumer time included. */
  timeoutMs?: number;
  /** Kills ffmpeg at once when this aborts (process.ts SpawnOptions.signal). */
  signal?: AbortSignal;
}

/**
 * Decodes the first audio stream to 16 kHz mono float32 (`-ac 1 -ar 16000 -f f32le`) and yields
 * it in fixed windows. Only one window is buffered; a two-hour film streams through ~2 MB.
 *
 * `aresample=async=1:first_pts=0` pads with silence when the audio starts after the video (or has
 * gaps), so sample n is at n / 16000 s on the same timeline as frame timestamps and shot
 * boundaries, and a window's offset is simply index × windowSecs.
 *
 * The caller normally checks `hasAudio` first; a file without audio still fails fast with
 * MediaError NO_AUDIO_STREAM (ffmpeg refuses the `-map 0:a:0` at once), never a hang.
 */
export function streamAudio16kMono(
  bins: MediaBins,
  file: string,
  opts: AudioStreamOptions = {},
): AsyncIterable<AudioWindow> {
  const windowSecs = opts.windowSecs ?? 30;
  if (!(windowSecs > 0) || windowSecs * AUDIO_SAMPLE_RATE < 1) throw new RangeError("windowSecs must be > 0");
  const windowSamples = Math.round(windowSecs * AUDIO_SAMPLE_RATE);

  async function* run(): AsyncGenerator<AudioWindow> {
    const proc = new ToolProcess(
      bins.ffmpeg,
      [
        "-hide_banner",
        "-nostdin",
        "-nostats",
        "-loglevel",
        "repeat+level+error",
        ...decodeLimits(bins), // opening the input decodes a video frame too
        "-i",
        file,
        "-map",
        "0:a:0",
        "-vn",
        "-sn",
        "-dn",
        "-af",
        "aresample=async=1:first_pts=0",
        "-ac",
        "1",
        "-ar",
        String(AUDIO_SAMPLE_RATE),
        "-f",
        "f32le",
        "pipe:1",
      ],
      { timeoutMs: opts.timeoutMs, stallTimeoutMs: opts.stallTimeoutMs ?? 60_000, signal: opts.signal },
    );
    try {
      for (let index = 0; ; index++) {
        const bytes = new Uint8Array(windowSamples * 4);
        const got = await proc.readFull(bytes);
        const samples = Math.floor(got / 4);
        if (samples > 0) {
          // A short last window gets its own exact-size buffer rather than pinning a full one.
          const buf = samples === windowSamples ? bytes.buffer : bytes.slice(0, samples * 4).buffer;
          yield { index, offsetSecs: index * windowSecs, samples: new Float32Array(buf, 0, samples) };
        }
        if (got < bytes.length) break;
      }
      const exit = await proc.exited();
      throwIfStreamRunFailed("audio extraction failed", exit, "audio");
    } finally {
      proc.dispose();
    }
  }
  return { [Symbol.asyncIterator]: run };
}
