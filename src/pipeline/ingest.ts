import { isMediaError } from "../media/errors.ts";
import { probeMedia, type MediaInfo } from "../media/probe.ts";
import { partialWarning, readablePart } from "../media/readable.ts";
import { detectShotBoundaries, shotsFromBoundaries, type Shot } from "../media/shots.ts";
import { keyframesCloseEnough, readKeyframeTimes } from "../media/select.ts";
import { isInferenceError } from "../inference/errors.ts";
import { missingModel } from "../models/hints.ts";
import { JobFailure, type JobError, type JobHandler } from "../jobs/runner.ts";
import type { JobRow } from "../jobs/schema.ts";
import type { VideoRow } from "../videos/schema.ts";
import type { VideoScope } from "../indexing/store.ts";
import type { ActiveModel } from "../models/roles.ts";
import type { PipelineDeps } from "./deps.ts";
import {
  fullDecodeSkip,
  loopFilterFor,
  readX264Options,
  x264ClosedGops,
  type DecodeSkip,
  type LoopFilter,
} from "../media/decode.ts";
import { embedFrames, shotIndexAt, type EmbeddedFrame } from "./stage-frames.ts";
import { StageRun } from "./stage-run.ts";
import { buildScenes, LabelEmbeddings } from "./stage-scenes.ts";
import { transcribeAudio } from "./stage-transcript.ts";
import { writeVideoThumbnails } from "./stage-thumbnails.ts";
import { readOnScreenText } from "./stage-ocr.ts";
import { OcrError } from "../ocr/engine.ts";
import type { StageName, StageOutcome } from "../videos/schema.ts";

/**
 * The probe's answer as far as the file can be decoded: a truncated file (its index still claims
 * the whole length) is indexed up to where its video data ends, and says so; a file whose data
 * ends before its first frame fails as before (DECODE_FAILED). The probe's bounds still apply:
 * this only ever shortens the duration.
 */
async function decodableInfo(
  d: PipelineDeps,
  source: string,
  info: MediaInfo,
): Promise<{ info: MediaInfo; warning: string | null }> {
  const part = await readablePart(d.bins, source, info.durationSecs).catch(() => null);
  if (!part) return { info, warning: null };
  if (part.endSecs <= 0)
    throw new JobFailure(
      "DECODE_FAILED",
      "no video frame could be decoded: the file's data ends before its first frame",
    );
  return { info: { ...info, durationSecs: part.endSecs }, warning: partialWarning(part) };
}

/** Keyframe-only decoding is used when no keyframe gap (first 30 s) is longer than this. */
const MAX_KEYFRAME_GAP_SECS = 2.5;
const NO_IMAGE_MODEL = missingModel("image-text");

/**
 * A stage that runs after the video is searchable (progressive indexing, SPEC §12): the video is
 * `ready` once the first stages are written, and each of these enriches it afterwards. Listed on
 * the video as `pending` (and in the job's `stages_pending`) from the start of the run until it
 * has run. A failure is recorded as that stage's outcome and does not fail the job: the video
 * stays searchable by everything else. To add one (e.g. a web rendition), add its name to
 * STAGE_NAMES and WEIGHT (stage-run.ts) and an entry to `enrichments` below.
 */
interface Enrichment {
  name: StageName;
  /** Shown on the video while it waits. */
  pendingReason: string;
  run(r: Run, visual: Visual): Promise<StageOutcome>;
}

/**
 * How this video is decoded (`planDecode`): keyframes only, or a full decode that skips what it
 * exactly can. Decided once per run and used by every decode of it (the frame decode and the OCR
 * stage's), so a long-GOP file is never decoded in full by one and with shortcuts by the other.
 */
interface DecodePlan {
  keyframesOnly: boolean;
  /** Full decode only (media/decode.ts fullDecodeSkip). */
  skipFrames?: DecodeSkip;
  /**
   * Full decode only, and only the visual decode's (config frame_loop_filter, decode.ts
   * loopFilterFor): the OCR decode always filters, so the pictures it reads stay exact.
   */
  loopFilter?: LoopFilter;
}

/** What the first stages hand the enrichment stages. */
interface Visual extends DecodePlan {
  shots: Shot[];
}

/** What one video's run carries from stage to stage. */
interface Run {
  stages: StageRun;
  source: string;
  info: MediaInfo;
  scope: VideoScope;
  signal: AbortSignal;
}

/**
 * The ingest pipeline for one video. Every stage is idempotent: it replaces the rows it owns, so a
 * job resumed after a crash or restart simply runs again from the top. Each stage's outcome
 * (ran / skipped with the reason / failed) is recorded on the video as it happens.
 */
export class IngestPipeline implements JobHandler {
  private readonly labels: LabelEmbeddings;
  private readonly enrichments: Enrichment[];

  constructor(private readonly d: PipelineDeps) {
    this.labels = new LabelEmbeddings(d);
    this.enrichments = [
      {
        name: "ocr",
        pendingReason: "on-screen text is read after the video is searchable",
        run: (r, v) => this.ocr(r, v),
      },
    ];
  }

  async process(job: JobRow, progress: (stage: string, pct: number) => void, signal: AbortSignal): Promise<void> {
    const d = this.d;
    const video = d.videos.getById(job.video_id);
    if (!video) throw new JobFailure("VIDEO_NOT_FOUND", "The video was deleted before it was indexed");
    const source = d.files.abs(video.source_path);
    // Speech runs beside the visual stages (it has its own worker). One stop signal for both: when
    // either fails, the other stops too, and the job fails with the first real error.
    const stop = new AbortController();
    const onAbort = () => stop.abort();
    signal.addEventListener("abort", onAbort, { once: true });
    try {
      const first =
        (await this.resume(job, video, source, progress, stop)) ??
        (await this.index(job, video, source, progress, signal, stop));
      await this.enrich(job, first.run, first.visual, signal);
    } finally {
      signal.removeEventListener("abort", onAbort);
    }
  }

  /** The first stages: when they are done the video is `ready` (searchable). */
  private async index(
    job: JobRow,
    video: VideoRow,
    source: string,
    progress: (stage: string, pct: number) => void,
    jobSignal: AbortSignal,
    stop: AbortController,
  ) {
    const d = this.d;
    const stages = new StageRun(d.videos, video.id, progress, stop.signal);
    d.videos.update(video.id, { status: "processing", stages: "{}", error_code: null, error_message: null });
    for (const e of this.enrichments) stages.pending(e.name, e.pendingReason);
    if (job.lease_owner)
      d.jobs.setPending(
        job.id,
        job.lease_owner,
        this.enrichments.map((e) => e.name),
      );

    // probe (the keyframe packet scan runs beside it: it decides the decode mode below)
    stages.report("probe", 0);
    const packets = readKeyframeTimes(d.bins, source, { method: "packets" }).catch(() => null);
    // No first-frame decode check here: the upload's sniff (both paths) already made it on these
    // bytes, and a file that stops decoding later fails in the frame decode with its own error.
    // On 60 s of 1080p the check is ~0.1 s of a ~1.3 s ingest with 2 s keyframes.
    const [probed, probeMs] = await stages.timed(() =>
      probeMedia(d.bins, source, { decodeCheck: false }).catch(toFailure),
    );
    // A truncated file is indexed as far as its data goes (issue 22), with a warning on the video.
    const { info, warning } = await decodableInfo(d, source, probed);
    d.videos.update(video.id, {
      warning,
      duration_secs: info.durationSecs,
      width: info.width,
      height: info.height,
      fps: info.fps,
      codec: info.videoCodec,
      audio_codec: info.audioCodec,
      has_audio: info.hasAudio ? 1 : 0,
    });
    stages.record("probe", { status: "ran", took_ms: probeMs, ...(warning ? { reason: warning } : {}) });
    stages.check();

    const scope = { videoId: video.id, accountId: video.account_id, collectionId: video.collection_id };
    const run: Run = { stages, source, info, signal: stop.signal, scope };
    const plan = await planDecode(d, source, info, await packets);
    const { keyframesOnly } = plan;
    const clip = d.models.active("image-text");
    // Thumbnails of the sampled frames, written by the same decode; the shots' are moved out.
    const jpegDir = clip ? d.files.freshPassJpegsDir(video.id) : null;
    try {
      const failFast = <T>(p: Promise<T>) =>
        p.catch((e) => {
          stop.abort();
          throw e;
        });
      const visual = failFast(
        (async () => {
          const { shots, frames } = await this.visual(run, clip, plan, jpegDir);
          return { scenes: await this.scenes(run, clip, shots, frames), frames };
        })(),
      );
      const speech = failFast(this.transcript(run));
      const [v, t] = await Promise.allSettled([visual, speech]);
      if (v.status === "rejected" || t.status === "rejected") {
        if (jobSignal.aborted) throw new JobFailure("ABORTED", "Indexing was interrupted");
        throw firstCause([v, t]);
      }
      const { scenes, frames } = v.value;
      const [thumbs, thumbsMs] = await stages.timed(() =>
        writeVideoThumbnails(
          d,
          { ...video, duration_secs: info.durationSecs },
          source,
          scenes,
          info.hdr,
          keyframesOnly && frames.length > 0,
          jpegDir ? { dir: jpegDir, frames } : null,
        ).catch(toFailure),
      );
      // The one write of the shots (with their thumbnails, after both exist), the video becoming
      // searchable and the stage's outcome, in one transaction; search hears of it on commit.
      d.content.commitStage(video.id, () => {
        d.content.replaceShots(
          run.scope,
          scenes.map((s, i) => ({ ...s, thumbnailPath: thumbs.shots[i] })),
          clip?.modelId ?? null,
        );
        d.videos.update(video.id, { poster_path: thumbs.poster, status: "ready" });
        stages.record("thumbnails", {
          status: "ran",
          took_ms: thumbsMs,
          count: thumbs.shots.filter(Boolean).length,
          ...(thumbs.shotsFromPass || thumbs.posterFromPass
            ? { reason: passNote(thumbs.shotsFromPass, thumbs.posterFromPass) }
            : {}),
        });
      });
      const shots: Shot[] = scenes.map((s, i) => ({ index: i, start: s.start, end: s.end }));
      return { run, visual: { shots, ...plan } };
    } finally {
      if (jpegDir) d.files.removePassJpegsDir(video.id);
    }
  }

  /**
   * A job interrupted (restart, crash) after its video became searchable picks up at the
   * enrichment stages still pending instead of redoing the first stages: same job (a later
   * attempt), video `ready`, thumbnails recorded, some enrichment `pending`. A new job for the
   * video (reindex) always starts from the top.
   */
  private async resume(
    job: JobRow,
    video: VideoRow,
    source: string,
    progress: (stage: string, pct: number) => void,
    stop: AbortController,
  ) {
    const d = this.d;
    const recorded = JSON.parse(video.stages || "{}") as Partial<Record<StageName, StageOutcome>>;
    const pending = this.enrichments.filter((e) => recorded[e.name]?.status === "pending");
    if (job.attempts < 2 || video.status !== "ready" || recorded.thumbnails?.status !== "ran" || pending.length === 0)
      return null;
    const stages = new StageRun(d.videos, video.id, progress, stop.signal, recorded);
    // A crash between the commit that made the video ready and the clean-up after it leaves the
    // first stages' scratch JPEGs behind; nothing after that commit reads them.
    d.files.removePassJpegsDir(video.id);
    if (job.lease_owner)
      d.jobs.setPending(
        job.id,
        job.lease_owner,
        pending.map((e) => e.name),
      );
    const { info } = await decodableInfo(
      d,
      source,
      await probeMedia(d.bins, source, { decodeCheck: false }).catch(toFailure),
    );
    const plan = await planDecode(d, source, info, null);
    const scope = { videoId: video.id, accountId: video.account_id, collectionId: video.collection_id };
    d.logger.info("resuming at the enrichment stages", {
      job_id: job.id,
      video_id: video.id,
      stages: pending.map((e) => e.name),
    });
    return {
      run: { stages, source, info, scope, signal: stop.signal } as Run,
      visual: { shots: d.content.shotSpans(video.id), ...plan },
    };
  }

  /** The stages after the video is searchable, in order; each one's rows are searchable as soon as it ends. */
  private async enrich(job: JobRow, r: Run, visual: Visual, jobSignal: AbortSignal): Promise<void> {
    const todo = this.enrichments.filter((e) => r.stages.isPending(e.name));
    const left = todo.map((e) => e.name);
    for (const e of todo) {
      r.stages.report(e.name, 0);
      let outcome: StageOutcome;
      try {
        outcome = await e.run(r, visual);
      } catch (err) {
        if (jobSignal.aborted || r.signal.aborted) throw new JobFailure("ABORTED", "Indexing was interrupted");
        const known =
          err instanceof JobFailure || err instanceof OcrError || isMediaError(err) || isInferenceError(err);
        if (!known)
          this.d.logger.error("enrichment stage failed", {
            stage: e.name,
            video_id: r.scope.videoId,
            err: err instanceof Error ? err.stack : String(err),
          });
        const code = known ? (err as { code: string }).code : "INTERNAL_ERROR";
        outcome = {
          status: "failed",
          reason: known
            ? `${code}: ${(err as Error).message}`
            : `${code}: the stage failed unexpectedly (see the server log)`,
        };
      }
      left.shift();
      // Its outcome is recorded with the announcement: search reads the stage's rows from here on.
      this.d.content.commitStage(r.scope.videoId, () => {
        r.stages.record(e.name, outcome);
        if (job.lease_owner) this.d.jobs.setPending(job.id, job.lease_owner, left);
      });
    }
  }

  /** On-screen text (SPEC §12): needs no model, so every video gets it. */
  private async ocr(r: Run, visual: Visual): Promise<StageOutcome> {
    const d = this.d;
    if (!d.ocr) return { status: "skipped", reason: "on-screen text is turned off (ocr_threads = 0)" };
    if (!r.info.width || !r.info.height) return { status: "skipped", reason: "the video stream has no picture size" };
    const engine = d.ocr;
    const [res, ms] = await r.stages.timed(() =>
      readOnScreenText(d.bins, engine, r.source, r.info, visual.shots, visual, r.signal, (f) =>
        r.stages.report("ocr", f),
      ).catch(toFailure),
    );
    r.stages.check(); // stopped mid-way: write nothing
    d.content.replaceOcrLines(r.scope, res.lines);
    return {
      status: "ran",
      took_ms: ms,
      count: res.lines.length,
      reason: `${res.sampled} frames: ${res.read} read (${res.reread} twice), ${res.noText} without text, ${res.carried} unchanged`,
    };
  }

  /**
   * Shot boundaries, frames and image embeddings. With keyframes close enough (and an image
   * model), the sampled keyframes are embedded, scored for shot changes in JS and written as
   * thumbnails. Otherwise a full decode that skips what it exactly can (media/decode.ts) feeds both
   * the sampler and ffmpeg's scene analysis in one filtergraph (frames.ts `cuts`). Without an image
   * model only shots are found. Every mode decodes the video once.
   */
  private async visual(
    r: Run,
    clip: ActiveModel | null,
    plan: DecodePlan,
    jpegDir: string | null,
  ): Promise<{ shots: Shot[]; frames: EmbeddedFrame[] }> {
    const { stages, info } = r;
    const d = this.d;
    stages.report("shots", 0);
    const { keyframesOnly, skipFrames, loopFilter } = plan;
    const detectShots = async (): Promise<Shot[]> => {
      const boundaries = await detectShotBoundaries(d.bins, r.source, {
        durationSecs: info.durationSecs ?? undefined,
        keyframesOnly,
        skipFrames,
        loopFilter,
      }).catch(toFailure);
      return shotsFromBoundaries(boundaries, info.durationSecs ?? 0);
    };
    const decodeNote = keyframesOnly
      ? "keyframe decode"
      : `full decode (${skipFrames} pictures skipped${loopFilter === "skip" ? ", no loop filter" : ""})`;
    if (!clip) {
      const [shots, ms] = await stages.timed(detectShots);
      stages.record("shots", { status: "ran", took_ms: ms, count: shots.length, reason: decodeNote });
      stages.record("frames", { status: "skipped", reason: NO_IMAGE_MODEL });
      stages.record("embeddings", { status: "skipped", reason: NO_IMAGE_MODEL });
      stages.check();
      return { shots, frames: [] };
    }
    const [result, ms] = await stages.timed(() =>
      embedFrames(
        d,
        r.source,
        info,
        clip,
        { keyframesOnly, skipFrames, loopFilter, jpegDir: jpegDir ?? undefined },
        r.signal,
        (f) => stages.report("embeddings", f),
      ).catch(toFailure),
    );
    stages.check(); // stopped mid-way: write nothing
    const shots = shotsFromBoundaries(result.boundaries ?? [], info.durationSecs ?? 0);
    // The cuts come out of the frame decode: its time is the embeddings stage's.
    stages.record("shots", {
      status: "ran",
      took_ms: 0,
      count: shots.length,
      reason: keyframesOnly
        ? `${decodeNote}, scored on the sampled frames`
        : `${decodeNote}, cuts found in the same pass as the frames`,
    });
    const frames = result.frames.map((f) => ({ ...f, shotIndex: shotIndexAt(shots, f.timestamp) }));
    d.content.replaceFrames(
      r.scope,
      frames.map((f) => ({ shotIndex: f.shotIndex, timestamp: f.timestamp, embedding: f.vector })),
      clip.modelId,
    );
    stages.record("frames", { status: "ran", count: result.sampled, reason: result.note });
    stages.record("embeddings", { status: "ran", took_ms: ms, count: frames.length, model_id: clip.modelId });
    stages.check();
    return { shots, frames };
  }

  /**
   * One row per shot: keyframe, mean embedding, zero-shot labels. Built here, written once by
   * `index` together with their thumbnails (the thumbnails need the keyframes chosen here).
   */
  private async scenes(r: Run, clip: ActiveModel | null, shots: Shot[], frames: EmbeddedFrame[]) {
    const finalShots: Shot[] = shots.length ? shots : syntheticShot(r.info, frames);
    let labelNote: string | undefined = clip ? undefined : "no image-text model: shots stored without labels";
    const [scenes, ms] = await r.stages.timed(async () => {
      // A model without a text tower still indexes frames; only zero-shot labels need text.
      const labelVectors = clip
        ? await this.labels.get(clip).catch((e) => {
            labelNote = `no zero-shot labels: ${e instanceof Error ? e.message : e}`;
            return null;
          })
        : null;
      return buildScenes(labelVectors, finalShots, frames);
    });
    r.stages.record("scenes", {
      status: "ran",
      took_ms: ms,
      count: scenes.length,
      ...(clip ? { model_id: clip.modelId } : {}),
      ...(labelNote ? { reason: labelNote } : {}),
    });
    r.stages.check();
    return scenes;
  }

  /** Audio to 16 kHz mono and Whisper segments, or the reason there are none. */
  private async transcript(r: Run): Promise<void> {
    const d = this.d;
    const whisper = d.models.active("speech");
    if (!r.info.hasAudio) {
      r.stages.record("audio", { status: "skipped", reason: "no audio stream" });
      r.stages.record("transcript", { status: "skipped", reason: "no audio stream" });
      d.content.replaceTranscript(r.scope, [], "none");
    } else if (!whisper) {
      r.stages.record("audio", { status: "skipped", reason: missingModel("speech") });
      r.stages.record("transcript", { status: "skipped", reason: missingModel("speech") });
    } else {
      const [segments, ms] = await r.stages.timed(() =>
        transcribeAudio(d, r.source, r.info, whisper, r.signal, (f) => r.stages.report("transcript", f)).catch(
          toFailure,
        ),
      );
      r.stages.check(); // stopped mid-way: write nothing
      d.content.replaceTranscript(r.scope, segments, whisper.modelId);
      r.stages.record("audio", { status: "ran" });
      r.stages.record("transcript", { status: "ran", took_ms: ms, count: segments.length, model_id: whisper.modelId });
    }
    r.stages.check();
  }

  /** The job's end is the jobs domain's: one transaction there (jobs/service.ts). */
  complete(job: JobRow, owner: string): void {
    this.d.completion.complete(job, owner);
  }

  fail(job: JobRow, owner: string, error: JobError): void {
    this.d.completion.fail(job, owner, error);
  }
}

/** Media and model errors become the job's `{code, message}`; anything else stays unexpected. */
function toFailure(e: unknown): never {
  if (e instanceof JobFailure) throw e;
  if (isMediaError(e)) throw new JobFailure(e.code, e.message);
  if (isInferenceError(e)) throw new JobFailure(e.code, e.message);
  throw e;
}

/**
 * Keyframes only or a full decode, and what a full decode may skip without changing a decoded
 * picture (x264 ref=1: every B picture; else non-reference pictures). The one decision for every
 * decode of the video: the frame decode, shot detection without a model, and OCR.
 */
async function planDecode(
  d: PipelineDeps,
  source: string,
  info: MediaInfo,
  packetTimes: number[] | null,
): Promise<DecodePlan> {
  // x264's settings (one packet read, ~50 ms), read at most once and only where a full decode is
  // likely: they say what it may skip, and whether the packets' keyframes can be trusted.
  let x264: Promise<Record<string, string> | null> | null = null;
  const x264Options = () =>
    (x264 ??= info.videoCodec === "h264" ? readX264Options(d.bins, source) : Promise.resolve(null));
  const keyframesOnly = await useKeyframes(d, source, info, packetTimes, x264Options);
  if (keyframesOnly) return { keyframesOnly };
  const loopFilter = loopFilterFor(d.frameLoopFilter ?? "auto", info.width, info.height);
  return {
    keyframesOnly,
    skipFrames: await fullDecodeSkip(d.bins, source, info.videoCodec, await x264Options()),
    loopFilter,
  };
}

/** Short clips always decode every frame; longer ones use keyframes when they are close enough. */
async function useKeyframes(
  d: PipelineDeps,
  source: string,
  info: MediaInfo,
  packetTimes: number[] | null,
  x264Options: () => Promise<Record<string, string> | null>,
): Promise<boolean> {
  if (!info.durationSecs || info.durationSecs <= 15 || !info.width) return false;
  const r = await keyframesCloseEnough(d.bins, source, {
    durationSecs: info.durationSecs,
    maxGapSecs: MAX_KEYFRAME_GAP_SECS,
    packetTimes,
    // x264 with closed GOPs: a long gap between flagged packets is a long GOP (no decode to confirm it).
    packetsFlagEveryKeyframe: async () => x264ClosedGops(await x264Options()),
  }).catch(() => null);
  return r?.ok ?? false;
}

/** The error that made a run fail: a stage's own, not the ABORTED of the stage stopped because of it. */
function firstCause(results: PromiseSettledResult<unknown>[]): unknown {
  const errors = results.filter((r): r is PromiseRejectedResult => r.status === "rejected").map((r) => r.reason);
  return errors.find((e) => !(e instanceof JobFailure && e.code === "ABORTED")) ?? errors[0];
}

function passNote(shots: number, poster: boolean): string {
  const what = [shots ? `${shots} shot${shots === 1 ? "" : "s"}` : "", poster ? "the poster" : ""]
    .filter(Boolean)
    .join(" and ");
  return `${what} from the frame decode`;
}

/** A container without a duration still gets one shot spanning what was decoded. */
function syntheticShot(info: MediaInfo, frames: EmbeddedFrame[]): Shot[] {
  const end = Math.max(info.durationSecs ?? 0, frames.length ? frames[frames.length - 1].timestamp + 1 : 0);
  return end > 0 ? [{ index: 0, start: 0, end }] : [];
}

export type { VideoRow };
