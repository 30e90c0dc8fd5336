import type { EventPublisher } from "../events/bus.ts";
import { createHash } from "node:crypto";
import { createReadStream, writeSync } from "node:fs";
import { copyFile, open, rm, stat } from "node:fs/promises";
import { AppError, ValidationError } from "../core/errors.ts";
import type { CollectionService } from "../collections/service.ts";
import type { VideoFiles } from "../videos/files.ts";
import type { VideoService } from "../videos/service.ts";
import type { VideoRow, VideoStatus } from "../videos/schema.ts";
import { boundaryOf, MultipartError, readMultipart } from "./multipart-stream.ts";

/** What the upload needs to know about a file: what container it is, and whether it has video. */
export interface ContainerSniffer {
  sniff(
    file: string,
  ): Promise<
    { ok: true; container: string; ext: string; mimeType: string } | { ok: false; code: string; message: string }
  >;
}

export interface UploadRequest {
  contentType: string | null;
  contentLength: number | null;
  body: ReadableStream<Uint8Array> | null;
}

const MAX_FIELD_BYTES = 64 * 1024;

const missing = (field: string) => ({ loc: ["body", field], msg: "Field required", type: "missing" });

/** The answer to an upload: a new video and its job, or the collection's video with the same bytes. */
export interface UploadAnswer {
  job_id: string | null;
  video_id: string;
  status: VideoStatus;
  /** The collection already held these bytes: this is that video (re-indexed with `force`). */
  duplicate: boolean;
}

const truthy = (v: string | undefined) => ["true", "1", "yes", "on"].includes((v ?? "").trim().toLowerCase());

/**
 * POST /v1/upload: streams the `file` part to a temp file (never the whole body in memory),
 * enforcing the size limit while streaming; sniffs the container with ffprobe; then hands the
 * file to the videos domain. Every failure path removes the temp file.
 */
export class UploadService {
  constructor(
    private readonly files: VideoFiles,
    private readonly collections: CollectionService,
    private readonly videos: VideoService,
    private readonly sniffer: ContainerSniffer,
    private readonly maxBytes: number,
    private readonly beforeAccept: (accountId: string) => Promise<void> = async () => {},
    /** `video.accepted` after the video and its job are committed (the task queue starts it now). */
    private readonly bus: EventPublisher,
    /** Throws 429 QUEUE_FULL when the account has its cap of uploads waiting (jobs/lease-queue.ts). */
    private readonly queueRoom: (accountId: string) => Promise<void> = async () => {},
    /** Skip byte-identical uploads (default); bench/upload-dedupe.ts turns it off to measure its cost. */
    private readonly opts: { duplicateCheck?: boolean } = {},
  ) {}

  /**
   * The upload's answer, and whether it queued work (202) or found the bytes already there (200).
   * Like `vsearch ingest`, a file the collection already holds is not indexed twice: the answer is
   * that video with `duplicate: true`; the multipart field `force=true` re-indexes it instead.
   */
  async upload(accountId: string, req: UploadRequest): Promise<{ answer: UploadAnswer; queued: boolean }> {
    const boundary = boundaryOf(req.contentType);
    if (!boundary || !req.body) {
      throw new ValidationError([
        {
          loc: ["body"],
          msg: "Expected a multipart/form-data body with a `file` part and a `collection_id` field",
          type: "content_type",
          input: req.contentType,
        },
      ]);
    }
    await this.beforeAccept(accountId);
    // The per-account cap on waiting work, before a byte of the body is read (checked again, exactly, when the job is written).
    await this.queueRoom(accountId);
    // Content-Length covers the multipart framing too, so it can only prove "too large", never "fits".
    if (req.contentLength !== null && req.contentLength > this.maxBytes + 64 * 1024) throw this.tooLarge();

    const tmp = this.tempPath();
    const fields = new Map<string, string>();
    let filename: string | null = null;
    let fileSeen = false;
    let size = 0;
    try {
      const fh = await open(tmp, "w", 0o600);
      try {
        let current: { name: string; isFile: boolean; text: Buffer[]; textBytes: number } | null = null;
        await readMultipart(req.body, boundary, {
          onPartStart: (p) => {
            const isFile = p.name === "file" && !fileSeen;
            if (isFile) {
              fileSeen = true;
              filename = p.filename;
            }
            current = { name: p.name, isFile, text: [], textBytes: 0 };
          },
          onPartData: async (chunk) => {
            const c = current!;
            if (c.isFile) {
              size += chunk.byteLength;
              if (size > this.maxBytes) throw this.tooLarge();
              // Synchronous on purpose: a chunk goes to the page cache in microseconds, and the
              // promise-based write kept every chunk alive until its callback ran — 3× slower and
              // ~100 MB more RSS for a 2 GB upload (bench/upload-rss.ts).
              for (let off = 0; off < chunk.byteLength; ) off += writeSync(fh.fd, chunk, off);
            } else if (c.name === "collection_id" || c.name === "filename" || c.name === "force") {
              c.textBytes += chunk.byteLength;
              if (c.textBytes > MAX_FIELD_BYTES)
                throw new ValidationError([{ loc: ["body", c.name], msg: "Field too long", type: "string_too_long" }]);
              c.text.push(Buffer.from(chunk));
            }
            // Unknown parts are drained and ignored.
          },
          onPartEnd: () => {
            const c = current!;
            if (!c.isFile && c.text.length) fields.set(c.name, Buffer.concat(c.text).toString("utf8"));
            current = null;
          },
        });
      } finally {
        await fh.close();
      }

      const issues = [];
      if (!fileSeen) issues.push(missing("file"));
      const collectionId = fields.get("collection_id")?.trim();
      if (!collectionId) issues.push(missing("collection_id"));
      if (issues.length) throw new ValidationError(issues);
      if (size === 0)
        throw new ValidationError([
          { loc: ["body", "file"], msg: "The uploaded file is empty", type: "value_error", input: filename },
        ]);
      await this.collections.require(accountId, collectionId!);

      const bytes = (await stat(tmp)).size;
      const same =
        this.opts.duplicateCheck === false ? null : await this.sameBytes(accountId, collectionId!, tmp, bytes);
      if (same?.video) {
        await rm(tmp, { force: true });
        const v = same.video;
        if (truthy(fields.get("force"))) {
          await this.beforeAccept(accountId);
          await this.queueRoom(accountId); // an HTTP upload, re-indexed: held to the waiting cap like a new one
          const [q] = await this.videos.requeue([v.id]);
          this.bus.publish({ type: "video.accepted", accountId });
          return { answer: { job_id: q.job_id, video_id: v.id, status: "queued", duplicate: true }, queued: true };
        }
        const job_id = await this.videos.latestJobId(accountId, v.id);
        return { answer: { job_id, video_id: v.id, status: v.status, duplicate: true }, queued: false };
      }
      const name = fields.get("filename") ?? filename;
      const accepted = await this.accept(
        accountId,
        collectionId!,
        tmp,
        (ext) => name ?? `upload.${ext}`,
        bytes,
        same?.hash ?? null,
        true,
      );
      return { answer: { ...accepted, duplicate: false }, queued: true };
    } catch (e) {
      await rm(tmp, { force: true });
      if (e instanceof MultipartError)
        throw new ValidationError([
          { loc: ["body"], msg: `Malformed multipart body: ${e.message}`, type: "value_error" },
        ]);
      throw e;
    }
  }

  /**
   * Local ingest (`vsearch ingest`): the same checks and bookkeeping as an HTTP upload, with the
   * file copied in from a path instead of streamed from a request.
   */
  async ingestFile(
    accountId: string,
    collectionId: string,
    path: string,
    opts: { force?: boolean } = {},
  ): Promise<
    | { job_id: string; video_id: string; status: "queued" | "requeued" }
    | { job_id: null; video_id: string; status: "unchanged" }
  > {
    const st = await stat(path).catch(() => null);
    if (!st?.isFile()) throw new AppError("FILE_NOT_FOUND", `${path} is not a readable file`);
    if (st.size === 0) throw new AppError("UNSUPPORTED_FORMAT", "The file is empty");
    if (st.size > this.maxBytes) throw this.tooLarge();
    await this.collections.require(accountId, collectionId);
    // Hashed before copying: on a second run over the same folder a known file costs one read,
    // no copy, no probe.
    const hash = await sha256File(path);
    // An HTTP upload of the same bytes may not have its hash recorded yet: sameBytes finds it too.
    const existing =
      (await this.videos.findByContent(accountId, collectionId, hash)) ??
      (await this.sameBytes(accountId, collectionId, path, st.size, hash)).video;
    if (existing && !opts.force) return { job_id: null, video_id: existing.id, status: "unchanged" };
    await this.beforeAccept(accountId);
    if (existing) {
      const [q] = await this.videos.requeue([existing.id]);
      this.bus.publish({ type: "video.accepted", accountId });
      return { job_id: q.job_id, video_id: existing.id, status: "requeued" };
    }
    const tmp = this.tempPath();
    try {
      await copyFile(path, tmp);
      return await this.accept(accountId, collectionId, tmp, () => path, st.size, hash);
    } catch (e) {
      await rm(tmp, { force: true });
      throw e;
    }
  }

  /**
   * The collection's video with exactly the bytes of `file`, if any. Only videos of the same size
   * can be one, so the common upload (no such video) costs one indexed query and no hashing; with
   * candidates the file is hashed once (from the page cache) and compared with their SHA-256,
   * computed from their source now if an earlier upload left it unknown. The hash is returned
   * either way, so a new video keeps it.
   */
  private async sameBytes(
    accountId: string,
    collectionId: string,
    file: string,
    sizeBytes: number,
    knownHash: string | null = null,
  ): Promise<{ video: VideoRow | null; hash: string | null }> {
    const candidates = await this.videos.sameSize(accountId, collectionId, sizeBytes);
    if (candidates.length === 0) return { video: null, hash: knownHash };
    const hash = knownHash ?? (await sha256File(file));
    // Candidates of the same size, usually none or one: hashing each file is the cost, not the store call.
    for (const v of candidates) {
      let theirs = v.content_hash ?? null;
      if (!theirs) {
        // (With a bucket: fetched into this node's cache first; unreadable, it is no duplicate.)
        // (Held against the node's media cache bound while it is hashed.)
        theirs = await this.files.withLocal(v.source_path, (source) => sha256File(source)).catch(() => null);
        if (theirs) await this.videos.rememberContentHash(v.id, theirs);
      }
      if (theirs === hash) return { video: v, hash };
    }
    return { video: null, hash };
  }

  /** The common end of both paths: sniff the finished temp file, then hand it to the videos domain. */
  private async accept(
    accountId: string,
    collectionId: string,
    tmp: string,
    name: (ext: string) => string,
    sizeBytes: number,
    // HTTP uploads are hashed only when the collection holds a video of the same size (sameBytes):
    // SHA-256 of every upload halved loopback upload throughput (553 → 301 MiB/s for 1 GiB,
    // bench/upload-rss.ts, load ~26 on 2 cores). `vsearch ingest` hashes every file.
    contentHash: string | null,
    /** An HTTP upload: held to the per-account cap on waiting work. */
    capped = false,
  ) {
    const sniffed = await this.sniffer.sniff(tmp);
    // A picture over max_video_pixels is its own code (media/bounds.ts): the file is a video, one we will not decode.
    if (!sniffed.ok)
      throw new AppError(
        sniffed.code === "VIDEO_TOO_LARGE" ? "VIDEO_TOO_LARGE" : "UNSUPPORTED_FORMAT",
        sniffed.message,
      );
    const accepted = await this.videos.createFromUpload({
      accountId,
      collectionId,
      filename: cleanFilename(name(sniffed.ext)),
      tempFile: tmp,
      ext: sniffed.ext,
      container: sniffed.container,
      mimeType: sniffed.mimeType,
      sizeBytes,
      contentHash,
      capped,
    });
    this.bus.publish({ type: "video.accepted", accountId });
    return accepted;
  }

  private tempPath(): string {
    return this.files.tempPath("part");
  }

  private tooLarge() {
    return new AppError("UPLOAD_TOO_LARGE", `The file exceeds the upload limit of ${this.maxBytes} bytes`);
  }
}

async function sha256File(path: string): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(path, { highWaterMark: 1024 * 1024 })) hash.update(chunk as Buffer);
  return hash.digest("hex");
}

/** Keeps the client's name for display, minus any path and control characters. */
export function cleanFilename(name: string): string {
  const base = name.split(/[\\/]/).pop() ?? "";
  const cleaned = base
    .replace(/[\u0000-\u001f\u007f]/g, "")
    .trim()
    .slice(0, 255);
  return cleaned || "upload";
}
