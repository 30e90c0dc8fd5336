import { streamAudio16kMono } from "../media/audio.ts";
import type { MediaInfo } from "../media/probe.ts";
import type { TranscriptInput } from "../indexing/store.ts";
import type { AudioWindow } from "../inference/whisper-decode.ts";
import type { ActiveModel } from "../models/roles.ts";
import type { PipelineDeps } from "./deps.ts";

/**
 * Consecutive windows decoded together: a decoder step for 4 rows costs ~2.4× one row (Whisper
 * tiny q8, 2 cores), so a minute of speech takes ~40 % less time than window by window, while
 * memory stays at a few windows of audio (2 MB each).
 */
export const WINDOWS_PER_BATCH = 4;

/** Whisper over 30 s windows of 16 kHz mono audio, streamed so long files use bounded memory. */
export async function transcribeAudio(
  d: PipelineDeps,
  source: string,
  info: MediaInfo,
  model: ActiveModel,
  signal: AbortSignal,
  onProgress: (fraction: number) => Promise<void>,
): Promise<TranscriptInput[]> {
  const pool = await d.pool();
  const out: TranscriptInput[] = [];
  let pending: AudioWindow[] = [];
  const flush = async () => {
    if (pending.length === 0) return;
    const windows = pending;
    pending = [];
    const t = await pool.transcribeWindows(
      { modelDir: model.dir, dtype: model.dtype, maxNewTokens: d.speechMaxTokens },
      windows,
      { maxBatch: WINDOWS_PER_BATCH },
    );
    for (const s of t.segments) {
      const text = s.text.trim();
      if (text) out.push({ start: s.start, end: Math.max(s.end, s.start), text });
    }
    const last = windows[windows.length - 1];
    if (info.durationSecs)
      await onProgress(Math.min(1, (last.offsetSecs + last.samples.length / 16000) / info.durationSecs));
  };
  for await (const w of streamAudio16kMono(d.bins, source, { windowSecs: 30, signal })) {
    if (signal.aborted) break;
    if (isSilent(w.samples)) continue;
    pending.push({ samples: w.samples, offsetSecs: w.offsetSecs });
    if (pending.length >= WINDOWS_PER_BATCH) await flush();
  }
  if (!signal.aborted) await flush();
  return out;
}

/** Whisper hallucinates text on silence; a window whose RMS is near zero is skipped. */
function isSilent(samples: Float32Array): boolean {
  let sum = 0;
  for (let i = 0; i < samples.length; i++) sum += samples[i] * samples[i];
  return Math.sqrt(sum / Math.max(1, samples.length)) < 1e-3;
}
