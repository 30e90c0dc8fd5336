import { probeMedia, type MediaInfo } from "../media/probe.ts";
import { partialWarning, readablePart } from "../media/readable.ts";
import { detectShotBoundaries, shotsFromBoundaries, type Shot } from "../media/shots.ts";
import { readKeyframeTimes } from "../media/select.ts";
import { missingModel } from "../models/hints.ts";
import { CRASHED_REPEATEDLY_HINT, JobFailure, type JobError } from "../jobs/failure.ts";
import type { TaskContext, TaskHandler } from "../jobs/lease-queue.ts";
import type { JobRow } from "../jobs/schema.ts";
import type { TaskRow } from "../jobs/task-store.ts";
import type { VideoRow } from "../videos/schema.ts";
import type { VideoScope } from "../indexing/store.ts";
import type { ActiveModel } from "../models/roles.ts";
import type { PipelineDeps } from "./deps.ts";
import { type DecodePlan, planDecode } from "./decode-plan.ts";
import { aborted, firstCause, jobProgress, toFailure } from "./failures.ts";
import { OCR_PENDING_REASON, OCR_OFF_REASON, type OcrHandOver } from "./ocr-task.ts";
import { embedFrames, shotIndexAt, type EmbeddedFrame } from "./stage-frames.ts";
import { StageRun } from "./stage-run.ts";
import { buildScenes, LabelEmbeddings } from "./stage-scenes.ts";
import { transcribeAudio } from "./stage-transcript.ts";
import { writeVideoThumbnails } from "./stage-thumbnails.ts";

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

const NO_IMAGE_MODEL = missingModel("image-text");

/** What one video's run carries from stage to stage. */
interface Run {
  stages: StageRun;
  source: string;
  info: MediaInfo;
  scope: VideoScope;
  signal: AbortSignal;
}

/**
 * The ingest task (kind `ingest`, jobs/lease-queue.ts) of one video: the first stages, until the
 * video is searchable. Every stage is idempotent: it replaces the rows it owns, so a task run
 * again after a crash or restart simply runs from the top. Each stage's outcome (ran / skipped
 * with the reason / failed) is recorded on the video as it happens. The transaction that makes
 * the video searchable also ends the task and queues what follows it: the OCR task (its own kind,
 * so it is scheduled fairly and can run on another worker, ocr-task.ts) and the web rendition;
 * the job ends with the OCR task, or here when OCR is turned off.
 */
export class IngestPipeline implements TaskHandler {
  private readonly labels: LabelEmbeddings;

  constructor(private readonly d: PipelineDeps) {
    this.labels = new LabelEmbeddings(d);
  }

  async claimed(task: TaskRow): Promise<void> {
    const job = task.job_id ? await this.d.jobs.row(task.job_id) : null;
    if (job) await this.d.jobs.started(job);
  }

  async released(task: TaskRow): Promise<void> {
    const job = task.job_id ? await this.d.jobs.row(task.job_id) : null;
    if (job) await this.d.jobs.requeued(job);
  }

  async run(task: TaskRow, ctx: TaskContext): Promise<() => Promise<void> | void> {
    const d = this.d;
    const job = task.job_id ? await d.jobs.row(task.job_id) : null;
    const video = await d.videos.getById(task.video_id);
    if (!job || !video) return () => {}; // deleted meanwhile (its tasks normally go with it)
    // With a bucket, the source is fetched into this node's cache first (ffmpeg reads local files),
    // and the video's folder is held against the cache's bound until the stages have settled (the
    // background ones too, after a stop): they read the source and write thumbnails beside it.
    const release = d.files.hold(video.source_path);
    let source: string;
    try {
      source = await d.files.local(video.source_path);
    } catch (e) {
      release();
      throw e;
    }
    // Speech runs beside the visual stages (it has its own worker). One stop signal for both: when
    // either fails, the other stops too, and the job fails with the first real error.
    const stop = new AbortController();
    // Told to stop (video deleted, lease lost, shutdown): ffmpeg is killed through `stop`, and the
    // task ends now rather than when the model calls in flight return (a worker thread cannot be
    // interrupted mid-batch); those finish in the background, and every stage checks the signal
    // before it writes, so they write nothing.
    let onAbort = () => {};
    const stopped = new Promise<never>((_, reject) => {
      onAbort = () => {
        stop.abort();
        reject(aborted());
      };
      if (ctx.signal.aborted) onAbort();
      else ctx.signal.addEventListener("abort", onAbort, { once: true });
    });
    const work = this.index(job, video, source, jobProgress(d.jobs, job.id), ctx.signal, stop);
    work.finally(release).catch(() => {}); // settled in the background if the stop wins (then the folder is let go)
    stopped.catch(() => {});
    try {
      return await Promise.race([work, stopped]);
    } finally {
      ctx.signal.removeEventListener("abort", onAbort);
    }
  }

  /** The job fails with the task (its error, or CRASHED_REPEATEDLY with what to do). */
  async fail(task: TaskRow, error: JobError): Promise<void> {
    const job = task.job_id ? await this.d.jobs.row(task.job_id) : null;
    if (!job) return;
    const shown =
      error.code === "CRASHED_REPEATEDLY"
        ? { code: error.code, message: `Indexing ${error.message}. ${CRASHED_REPEATEDLY_HINT}` }
        : error.code === "INTERNAL_ERROR"
          ? { code: error.code, message: "Indexing failed unexpectedly" }
          : error;
    await this.d.jobs.fail(job, shown);
  }

  /** The first stages; returns the write that makes the video searchable (run in the task's outcome transaction). */
  private async index(
    job: JobRow,
    video: VideoRow,
    source: string,
    progress: (stage: string, pct: number) => void,
    taskSignal: AbortSignal,
    stop: AbortController,
  ): Promise<() => Promise<void> | void> {
    const d = this.d;
    const stages = new StageRun(d.videos, video.id, progress, stop.signal);
    await d.videos.update(video.id, { status: "processing", stages: "{}", error_code: null, error_message: null });
    // On-screen text follows as its own task once the video is searchable (SPEC §12).
    if (d.ocr) {
      await stages.pending("ocr", OCR_PENDING_REASON);
      await d.jobs.setPending(job.id, ["ocr"]);
      // The OCR task most likely runs here next: its models load while this task decodes and embeds
      // (~0.3 s idle, seconds under load, otherwise at the start of the OCR stage).
      if (d.ocrRunsHere) d.ocr.warm();
    }

    // probe (the keyframe packet scan runs beside it: it decides the decode mode below)
    await stages.report("probe", 0);
    const packets = readKeyframeTimes(d.bins, source, { method: "packets" }).catch(() => null);
    // No first-frame decode check here: the upload's sniff (both paths) already made it on these
    // bytes, and a file that stops decoding later fails in the frame decode with its own error.
    // On 60 s of 1080p the check is ~0.1 s of a ~1.3 s ingest with 2 s keyframes.
    const [probed, probeMs] = await stages.timed(() =>
      probeMedia(d.bins, source, { decodeCheck: false }).catch(toFailure),
    );
    // A truncated file is indexed as far as its data goes (issue 22), with a warning on the video.
    const { info, warning } = await decodableInfo(d, source, probed);
    await d.videos.update(video.id, {
      warning,
      duration_secs: info.durationSecs,
      width: info.width,
      height: info.height,
      fps: info.fps,
      codec: info.videoCodec,
      audio_codec: info.audioCodec,
      has_audio: info.hasAudio ? 1 : 0,
    });
    await stages.record("probe", { status: "ran", took_ms: probeMs, ...(warning ? { reason: warning } : {}) });
    stages.check();

    const scope = { videoId: video.id, accountId: video.account_id, collectionId: video.collection_id };
    const run: Run = { stages, source, info, signal: stop.signal, scope };
    const plan = await planDecode(d, source, info, await packets);
    const { keyframesOnly } = plan;
    const clip = d.models.active("image-text");
    // Thumbnails of the sampled frames, written by the same decode; the shots' are moved out.
    const jpegDir = clip ? d.files.freshPassJpegsDir(video.id) : null;
    // …and gray frames for the OCR stage, from the same decode (stage-ocr.ts; kept until it reads them).
    const textDir = jpegDir && d.ocr ? d.files.freshTextFramesDir(video.id) : null;
    try {
      const failFast = <T>(p: Promise<T>) =>
        p.catch((e) => {
          stop.abort();
          throw e;
        });
      const visual = failFast(
        (async () => {
          const { shots, frames } = await this.visual(run, clip, plan, jpegDir, textDir);
          return { scenes: await this.scenes(run, clip, shots, frames), frames };
        })(),
      );
      const speech = failFast(this.transcript(run));
      const [v, t] = await Promise.allSettled([visual, speech]);
      if (v.status === "rejected" || t.status === "rejected") {
        if (taskSignal.aborted) throw aborted();
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
      stages.check();
      // The one write of the shots (with their thumbnails, after both exist), the video becoming
      // searchable, the stage's outcome and what follows the video, in one transaction (with the
      // task's end); search hears of it on commit.
      return async () =>
        await d.content.commitStage(video.id, async () => {
          await d.content.replaceShots(
            run.scope,
            scenes.map((s, i) => ({ ...s, thumbnailPath: thumbs.shots[i] })),
            clip?.modelId ?? null,
          );
          await d.videos.update(video.id, { poster_path: thumbs.poster, status: "ready" });
          await stages.record("thumbnails", {
            status: "ran",
            took_ms: thumbsMs,
            count: thumbs.shots.filter(Boolean).length,
            ...(thumbs.shotsFromPass || thumbs.posterFromPass
              ? { reason: passNote(thumbs.shotsFromPass, thumbs.posterFromPass) }
              : {}),
          });
          await d.jobs.searchable(job);
          if (d.ocr) {
            const handOver: OcrHandOver = { info, plan };
            await d.tasks.enqueue({
              kind: "ocr",
              accountId: job.account_id,
              videoId: video.id,
              jobId: job.id,
              payload: handOver,
            });
            await stages.report("ocr", 0); // the job's stage from here on: its OCR task, waiting or running
          } else {
            await stages.record("ocr", { status: "skipped", reason: OCR_OFF_REASON });
            await d.jobs.complete(job);
          }
        });
    } catch (e) {
      if (textDir) d.files.removeTextFramesDir(video.id);
      throw e;
    } finally {
      if (jpegDir) d.files.removePassJpegsDir(video.id);
    }
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
    textDir: string | null,
  ): Promise<{ shots: Shot[]; frames: EmbeddedFrame[] }> {
    const { stages, info } = r;
    const d = this.d;
    await stages.report("shots", 0);
    const { keyframesOnly, skipFrames, loopFilter } = plan;
    const detectShots = async (): Promise<Shot[]> => {
      const boundaries = await detectShotBoundaries(d.bins, r.source, {
        signal: r.signal,
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
      await stages.record("shots", { status: "ran", took_ms: ms, count: shots.length, reason: decodeNote });
      await stages.record("frames", { status: "skipped", reason: NO_IMAGE_MODEL });
      await stages.record("embeddings", { status: "skipped", reason: NO_IMAGE_MODEL });
      stages.check();
      return { shots, frames: [] };
    }
    const [result, ms] = await stages.timed(() =>
      embedFrames(
        d,
        r.source,
        info,
        clip,
        { keyframesOnly, skipFrames, loopFilter, jpegDir: jpegDir ?? undefined, textDir: textDir ?? undefined },
        r.signal,
        async (f) => await stages.report("embeddings", f),
      ).catch(toFailure),
    );
    stages.check(); // stopped mid-way: write nothing
    const shots = shotsFromBoundaries(result.boundaries ?? [], info.durationSecs ?? 0);
    // The cuts come out of the frame decode: its time is the embeddings stage's.
    await stages.record("shots", {
      status: "ran",
      took_ms: 0,
      count: shots.length,
      reason: keyframesOnly
        ? `${decodeNote}, scored on the sampled frames`
        : `${decodeNote}, cuts found in the same pass as the frames`,
    });
    const frames = result.frames.map((f) => ({ ...f, shotIndex: shotIndexAt(shots, f.timestamp) }));
    await d.content.replaceFrames(
      r.scope,
      frames.map((f) => ({ shotIndex: f.shotIndex, timestamp: f.timestamp, embedding: f.vector })),
      clip.modelId,
    );
    await stages.record("frames", { status: "ran", count: result.sampled, reason: result.note });
    await stages.record("embeddings", { status: "ran", took_ms: ms, count: frames.length, model_id: clip.modelId });
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
    r.stages.check(); // stopped while the labels were computed: write nothing
    await r.stages.record("scenes", {
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
      await r.stages.record("audio", { status: "skipped", reason: "no audio stream" });
      await r.stages.record("transcript", { status: "skipped", reason: "no audio stream" });
      await d.content.replaceTranscript(r.scope, [], "none");
    } else if (!whisper) {
      await r.stages.record("audio", { status: "skipped", reason: missingModel("speech") });
      await r.stages.record("transcript", { status: "skipped", reason: missingModel("speech") });
    } else {
      const [segments, ms] = await r.stages.timed(() =>
        transcribeAudio(
          d,
          r.source,
          r.info,
          whisper,
          r.signal,
          async (f) => await r.stages.report("transcript", f),
        ).catch(toFailure),
      );
      r.stages.check(); // stopped mid-way: write nothing
      await d.content.replaceTranscript(r.scope, segments, whisper.modelId);
      await r.stages.record("audio", { status: "ran" });
      await r.stages.record("transcript", {
        status: "ran",
        took_ms: ms,
        count: segments.length,
        model_id: whisper.modelId,
      });
    }
    r.stages.check();
  }
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
