import { isMediaError } from "../media/errors.ts";
import { probeMedia, type MediaInfo } from "../media/probe.ts";
import { detectShotBoundaries, shotsFromBoundaries, type Shot } from "../media/shots.ts";
import { measureKeyframeSpacing } from "../media/select.ts";
import { isInferenceError } from "../inference/errors.ts";
import { JobFailure, type JobError, type JobHandler } from "../jobs/runner.ts";
import type { JobRow } from "../jobs/schema.ts";
import type { StageName, StageOutcome, VideoRow } from "../videos/schema.ts";
import type { VideoScope } from "../indexing/store.ts";
import type { PipelineDeps } from "./deps.ts";
import { embedFrames, shotIndexAt, type EmbeddedFrame } from "./stage-frames.ts";
import { buildScenes, LabelEmbeddings } from "./stage-scenes.ts";
import { transcribeAudio } from "./stage-transcript.ts";
import { writeVideoThumbnails } from "./stage-thumbnails.ts";

/** Share of progress_pct each stage accounts for (they add up to 100). */
const WEIGHT: Record<StageName, number> = { probe: 2, shots: 8, frames: 5, embeddings: 45, scenes: 5, audio: 2, transcript: 28, thumbnails: 5 };

/**
 * The ingest pipeline for one video. Every stage is idempotent: it replaces the rows it owns, so a
 * job resumed after a crash or restart simply runs again from the top. Each stage's outcome
 * (ran / skipped with the reason / failed) is recorded on the video as it happens.
 */
export class IngestPipeline implements JobHandler {
  private readonly labels: LabelEmbeddings;

  constructor(private readonly d: PipelineDeps) {
    this.labels = new LabelEmbeddings(d);
  }

  async process(job: JobRow, progress: (stage: string, pct: number) => void, signal: AbortSignal): Promise<void> {
    const d = this.d;
    const video = d.videos.getById(job.video_id);
    if (!video) throw new JobFailure("VIDEO_NOT_FOUND", "The video was deleted before it was indexed");
    const source = d.files.abs(video.source_path);
    const scope: VideoScope = { videoId: video.id, accountId: video.account_id, collectionId: video.collection_id };
    const stages: Partial<Record<StageName, StageOutcome>> = {};
    let done = 0;
    const report = (stage: StageName, within = 1) => {
      const pct = Math.min(99, done + WEIGHT[stage] * within);
      progress(stage, pct);
      d.videos.update(video.id, { progress_pct: pct });
    };
    const record = (stage: StageName, outcome: StageOutcome) => {
      stages[stage] = outcome;
      done += WEIGHT[stage];
      d.videos.update(video.id, { stages: JSON.stringify(stages), progress_pct: Math.min(99, done) });
      progress(stage, Math.min(99, done));
    };
    const timed = async <T>(fn: () => Promise<T>): Promise<[T, number]> => {
      const t0 = performance.now();
      const v = await fn();
      return [v, Math.round(performance.now() - t0)];
    };
    const check = () => {
      if (signal.aborted) throw new JobFailure("ABORTED", "Indexing was interrupted");
    };
    d.videos.update(video.id, { status: "processing", stages: "{}", error_code: null, error_message: null });

    // probe
    report("probe", 0);
    const [info, probeMs] = await timed(() => probeMedia(d.bins, source).catch(toFailure));
    d.videos.update(video.id, {
      duration_secs: info.durationSecs,
      width: info.width,
      height: info.height,
      fps: info.fps,
      codec: info.videoCodec,
      audio_codec: info.audioCodec,
      has_audio: info.hasAudio ? 1 : 0,
    });
    record("probe", { status: "ran", took_ms: probeMs });
    check();

    // shot boundaries + frames + image embeddings
    report("shots", 0);
    // Keyframe-only decoding is an order of magnitude cheaper than decoding every frame; it is used
    // when keyframes are at most ~2 s apart (encoders also put one at most hard cuts). Then every
    // boundary is a keyframe the sampler emits anyway, so the two decodes need not wait for each
    // other and run side by side; with full decoding the sampler needs the boundaries first.
    const keyframesOnly = await useKeyframes(d, source, info);
    const detectShots = () =>
      timed(async () => {
        const boundaries = await detectShotBoundaries(d.bins, source, { durationSecs: info.durationSecs ?? undefined, keyframesOnly }).catch(toFailure);
        return shotsFromBoundaries(boundaries, info.durationSecs ?? 0);
      });
    const shotsRun = detectShots();
    if (!keyframesOnly) await shotsRun;
    const clip = d.models.active("image-text");
    const framesRun = clip
      ? timed(async () =>
          embedFrames(d, source, info, keyframesOnly ? [] : (await shotsRun)[0].slice(1).map((s) => s.start), clip, keyframesOnly, signal, (f) => report("embeddings", f)).catch(toFailure),
        )
      : null;
    const [[shots, shotsMs], framesResult] = await Promise.all([shotsRun, framesRun]);
    record("shots", { status: "ran", took_ms: shotsMs, count: shots.length, reason: keyframesOnly ? "keyframe decode" : "full decode" });
    let frames: EmbeddedFrame[] = [];
    if (!clip || !framesResult) {
      const reason = "no image-text model installed (vsearch models import … --role image-text)";
      record("frames", { status: "skipped", reason });
      record("embeddings", { status: "skipped", reason });
    } else {
      const [result, ms] = framesResult;
      frames = result.frames.map((f) => ({ ...f, shotIndex: shotIndexAt(shots, f.timestamp) }));
      d.index.replaceFrames(scope, frames.map((f) => ({ shotIndex: f.shotIndex, timestamp: f.timestamp, embedding: f.vector })), clip.modelId);
      record("frames", { status: "ran", count: result.sampled, reason: result.note });
      record("embeddings", { status: "ran", took_ms: ms, count: frames.length, model_id: clip.modelId });
    }
    check();

    // scenes
    const finalShots: Shot[] = shots.length ? shots : syntheticShot(info, frames);
    let labelNote: string | undefined = clip ? undefined : "no image-text model: shots stored without labels";
    const [scenes, scenesMs] = await timed(async () => {
      // A model without a text tower still indexes frames; only zero-shot labels need text.
      const labelVectors = clip
        ? await this.labels.get(clip).catch((e) => {
            labelNote = `no zero-shot labels: ${e instanceof Error ? e.message : e}`;
            return null;
          })
        : null;
      return buildScenes(labelVectors, finalShots, frames);
    });
    d.index.replaceShots(scope, scenes, clip?.modelId ?? null);
    record("scenes", { status: "ran", took_ms: scenesMs, count: scenes.length, ...(clip ? { model_id: clip.modelId } : {}), ...(labelNote ? { reason: labelNote } : {}) });
    check();

    // audio + transcript
    const whisper = d.models.active("speech");
    if (!info.hasAudio) {
      record("audio", { status: "skipped", reason: "no audio stream" });
      record("transcript", { status: "skipped", reason: "no audio stream" });
      d.index.replaceTranscript(scope, [], "none");
    } else if (!whisper) {
      record("audio", { status: "skipped", reason: "no speech model installed (vsearch models import … --role speech)" });
      record("transcript", { status: "skipped", reason: "no speech model installed" });
    } else {
      const [segments, ms] = await timed(() =>
        transcribeAudio(d, source, info, whisper, signal, (f) => report("transcript", f)).catch(toFailure),
      );
      d.index.replaceTranscript(scope, segments, whisper.modelId);
      record("audio", { status: "ran" });
      record("transcript", { status: "ran", took_ms: ms, count: segments.length, model_id: whisper.modelId });
    }
    check();

    // thumbnails
    const [thumbs, thumbsMs] = await timed(() =>
      writeVideoThumbnails(d, { ...video, duration_secs: info.durationSecs }, source, scenes, info.hdr, keyframesOnly && frames.length > 0).catch(toFailure),
    );
    d.index.replaceShots(scope, scenes.map((s, i) => ({ ...s, thumbnailPath: thumbs.shots[i] })), clip?.modelId ?? null);
    d.videos.update(video.id, { poster_path: thumbs.poster });
    record("thumbnails", { status: "ran", took_ms: thumbsMs, count: thumbs.shots.filter(Boolean).length });
    d.onIndexed?.(video.id);
  }

  complete(job: JobRow, owner: string): void {
    const d = this.d;
    d.db.transaction(() => {
      if (!d.jobs.finish(job.id, owner, "done")) return;
      const v = d.videos.getById(job.video_id);
      if (!v) return;
      d.videos.update(v.id, { status: "ready", progress_pct: 100, storage_bytes: d.files.bytesOf(v.id) });
      d.events.record(job.account_id, "job.completed", { job_id: job.id, video_id: job.video_id });
      d.onCompleted?.(job.account_id, v.duration_secs ?? 0);
    })();
  }

  fail(job: JobRow, owner: string, error: JobError): void {
    const d = this.d;
    d.db.transaction(() => {
      if (!d.jobs.finish(job.id, owner, "failed", error)) return; // deleted meanwhile: nothing to announce
      d.videos.update(job.video_id, { status: "failed", error_code: error.code, error_message: error.message });
      d.events.record(job.account_id, "job.failed", { job_id: job.id, video_id: job.video_id, error });
    })();
  }
}

/** Media and model errors become the job's `{code, message}`; anything else stays unexpected. */
function toFailure(e: unknown): never {
  if (e instanceof JobFailure) throw e;
  if (isMediaError(e)) throw new JobFailure(e.code, e.message);
  if (isInferenceError(e)) throw new JobFailure(e.code, e.message);
  throw e;
}

/** Short clips always decode every frame; longer ones use keyframes when they are close enough. */
async function useKeyframes(d: PipelineDeps, source: string, info: MediaInfo): Promise<boolean> {
  if (!info.durationSecs || info.durationSecs <= 15) return false;
  const spacing = await measureKeyframeSpacing(d.bins, source, { durationSecs: info.durationSecs }).catch(() => null);
  return spacing !== null && spacing.maxGapSecs <= 2.5;
}

/** A container without a duration still gets one shot spanning what was decoded. */
function syntheticShot(info: MediaInfo, frames: EmbeddedFrame[]): Shot[] {
  const end = Math.max(info.durationSecs ?? 0, frames.length ? frames[frames.length - 1].timestamp + 1 : 0);
  return end > 0 ? [{ index: 0, start: 0, end }] : [];
}

export type { VideoRow };
