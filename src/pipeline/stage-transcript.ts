import { streamAudio16kMono } from "../media/audio.ts";
import type { MediaInfo } from "../media/probe.ts";
import type { TranscriptInput } from "../indexing/store.ts";
import type { ActiveModel, PipelineDeps } from "./deps.ts";

/** Whisper over 30 s windows of 16 kHz mono audio, streamed so long files use bounded memory. */
export async function transcribeAudio(
  d: PipelineDeps,
  source: string,
  info: MediaInfo,
  model: ActiveModel,
  signal: AbortSignal,
  onProgress: (fraction: number) => void,
): Promise<TranscriptInput[]> {
  const pool = await d.pool();
  const out: TranscriptInput[] = [];
  for await (const w of streamAudio16kMono(d.bins, source, { windowSecs: 30 })) {
    if (signal.aborted) break;
    if (isSilent(w.samples)) continue;
    const t = await pool.transcribe({ modelDir: model.dir, dtype: model.dtype }, w.samples, w.offsetSecs);
    for (const s of t.segments) {
      const text = s.text.trim();
      if (text) out.push({ start: s.start, end: Math.max(s.end, s.start), text });
    }
    if (info.durationSecs) onProgress(Math.min(1, (w.offsetSecs + 30) / info.durationSecs));
  }
  return out;
}

/** Whisper hallucinates text on silence; a window whose RMS is near zero is skipped. */
function isSilent(samples: Float32Array): boolean {
  let sum = 0;
  for (let i = 0; i < samples.length; i++) sum += samples[i] * samples[i];
  return Math.sqrt(sum / Math.max(1, samples.length)) < 1e-3;
}
