import { sampleFrames, type SampledFrame } from "../media/frames.ts";
import { dropNearDuplicates } from "../media/dedupe.ts";
import type { MediaInfo } from "../media/probe.ts";
import type { Shot } from "../media/shots.ts";
import type { ActiveModel, PipelineDeps } from "./deps.ts";

export interface FrameEmbedding {
  timestamp: number;
  vector: Float32Array;
}

/** A frame embedding placed in its shot (shots may be known only after sampling). */
export interface EmbeddedFrame extends FrameEmbedding {
  shotIndex: number;
}

/** CLIP's input side; frames are decoded by ffmpeg straight to it. */
const CLIP_SIZE = 224;

export const shotIndexAt = (shots: Shot[], t: number): number => {
  for (let i = shots.length - 1; i >= 0; i--) if (t >= shots[i].start - 1e-3) return shots[i].index;
  return 0;
};

/**
 * About one frame a second plus every shot boundary, decoded to 224×224 RGB and piped (no temp
 * images), near-duplicates dropped (at least one kept every 4 s), embedded in batches in the
 * worker pool. While the pool embeds one batch, ffmpeg keeps decoding the next.
 */
export async function embedFrames(
  d: PipelineDeps,
  source: string,
  info: MediaInfo,
  /** Shot boundaries to sample in addition to the 1 fps grid. */
  boundaries: number[],
  model: ActiveModel,
  keyframesOnly: boolean,
  signal: AbortSignal,
  onProgress: (fraction: number) => void,
): Promise<{ frames: FrameEmbedding[]; sampled: number; note?: string }> {
  const stream = sampleFrames(d.bins, source, {
    size: CLIP_SIZE,
    everySecs: 1,
    extraTimestamps: boundaries,
    durationSecs: info.durationSecs,
    keyframesOnly,
    hdr: info.hdr,
  });
  const deduped = dropNearDuplicates(stream, { maxGapSecs: 4 });
  const pool = await d.pool();
  const out: FrameEmbedding[] = [];
  let batch: SampledFrame[] = [];
  let inFlight: Promise<void> = Promise.resolve();

  const flush = (frames: SampledFrame[]) => {
    const times = frames.map((f) => f.timestamp);
    const run = pool.embedImages(
      { modelDir: model.dir, dtype: model.dtype, batchSize: d.batchSize },
      frames.map((f) => ({ rgb: f.rgb, width: CLIP_SIZE, height: CLIP_SIZE })),
    );
    const prev = inFlight;
    inFlight = (async () => {
      const emb = await run;
      await prev;
      emb.vectors.forEach((v, i) => out.push({ timestamp: times[i], vector: v }));
      if (info.durationSecs) onProgress(Math.min(1, times[times.length - 1] / info.durationSecs));
    })();
    // At most one batch waits while another is embedded: memory stays bounded for any length.
    return prev;
  };

  for await (const f of deduped) {
    if (signal.aborted) break;
    batch.push(f);
    if (batch.length >= d.batchSize) {
      await flush(batch);
      batch = [];
    }
  }
  if (batch.length) await flush(batch);
  await inFlight;
  out.sort((a, b) => a.timestamp - b.timestamp);
  const st = stream.stats;
  const note =
    `${st.mode === "keyframes" ? "keyframe" : "full"} decode; ${deduped.stats.dropped} near-duplicates dropped` +
    (st.decodeErrors ? `; ${st.decodeErrors} corrupt frame(s) skipped` : "");
  return { frames: out, sampled: st.framesEmitted, note };
}
