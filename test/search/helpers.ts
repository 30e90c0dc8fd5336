/** Search test helpers: an app with an injected query embedder, hand-made index rows, form requests. */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { EventBus } from "../../src/events/bus.ts";
import type { IndexStore, OcrLineInput, ShotInput, TranscriptInput } from "../../src/indexing/store.ts";
import type { SearchDomain } from "../../src/search/domain.ts";
import type { QueryEmbedder } from "../../src/search/embedder.ts";
import { type SearchRequest, searchFormSchema, toSearchRequest } from "../../src/search/schema.ts";
import { VideoFiles } from "../../src/videos/files.ts";
import { mediaPaths } from "../../src/media-serving/paths.ts";
import type { MemoryIndexOptions } from "../../src/search/memory-backend.ts";
import type { IndexWarmOptions } from "../../src/search/index-warmer.ts";
import { startTestApp, type TestApp } from "../helpers/app.ts";

export { rng } from "../helpers/rng.ts";

export { createKeyTenant as createTenant, type Tenant } from "../helpers/app.ts";

export interface SearchTestApp extends TestApp {
  index: IndexStore;
}

/** The test app (test/helpers/app.ts) with search limits lifted, an optional embedder and vector index tuning, and its index store. */
export async function startSearchApp(
  opts: {
    env?: Record<string, string>;
    embedder?: QueryEmbedder;
    vectorIndex?: MemoryIndexOptions;
    vectorBackend?: "memory" | "sqlite-vec";
    indexWarm?: IndexWarmOptions;
    /** An existing data dir (a restart); `close()` leaves it. */
    dataDir?: string;
  } = {},
): Promise<SearchTestApp> {
  const t = await startTestApp(
    { VSEARCH_RATE_LIMIT_SEARCH: "100000", VSEARCH_RATE_LIMIT_MOMENT: "100000", ...opts.env },
    {
      queryEmbedder: opts.embedder,
      vectorIndex: opts.vectorIndex,
      vectorBackend: opts.vectorBackend,
      indexWarm: opts.indexWarm,
      dataDir: opts.dataDir,
      prefix: "vsearch-search-",
    },
  );
  return Object.assign(t, { index: t.stores.index });
}

/**
 * The search domain over the test app's database file, apart from the app's (test/helpers/stores.ts
 * `searchDomain`): same stores, services and embedder, so its answers are the app's answers, and a
 * test can watch its index. Build it once the rows it should see are written.
 */
export function searchDomainOf(
  t: SearchTestApp,
  o: { embedder: QueryEmbedder; vectorIndex?: MemoryIndexOptions },
): SearchDomain {
  return t.stores.searchDomain({
    files: new VideoFiles(t.dir),
    videos: t.app.services.videos,
    collections: t.app.services.collections,
    links: {
      playbackUrl: async (videoId) => mediaPaths.source(videoId),
      playbackUrls: async (videoIds) => new Map(videoIds.map((id) => [id, mediaPaths.source(id)])),
      posterUrl: mediaPaths.poster,
      shotThumbnailUrl: mediaPaths.shot,
    },
    ffmpeg: t.app.runtime.ffmpeg,
    allowNetworks: [],
    embedder: o.embedder,
    vectorIndex: o.vectorIndex,
    credits: { assertCanSpend: async () => {}, chargeSearch: async () => {} },
  });
}

/** The service request POST /v1/search makes of these form fields (the route's own schema and conversion). */
export const searchRequest = (fields: Record<string, string | string[]>, image?: Uint8Array): SearchRequest =>
  toSearchRequest(searchFormSchema.parse(fields), image);

export async function createCollection(t: SearchTestApp, accountId: string, name: string): Promise<string> {
  return (await t.app.services.collections.create(accountId, { name })).id;
}

/** A ready video whose source file holds `bytes` (default: 1 KiB of a byte pattern). */
export async function addVideo(
  t: SearchTestApp,
  accountId: string,
  collectionId: string,
  o: { filename?: string; duration?: number; bytes?: Uint8Array; mime?: string; ext?: string } = {},
): Promise<string> {
  const bytes = o.bytes ?? Uint8Array.from({ length: 1024 }, (_, i) => i % 251);
  const tmp = join(t.dir, `upload-${Math.random().toString(36).slice(2)}.bin`);
  writeFileSync(tmp, bytes);
  const { video_id } = await t.app.services.videos.createFromUpload({
    accountId,
    collectionId,
    filename: o.filename ?? "clip.mp4",
    tempFile: tmp,
    ext: o.ext ?? "mp4",
    container: "mp4",
    mimeType: o.mime ?? "video/mp4",
    sizeBytes: bytes.byteLength,
  });
  await t.stores.videos.update(video_id, { status: "ready", progress_pct: 100, duration_secs: o.duration ?? 30 });
  return video_id;
}

export async function scopeOf(t: SearchTestApp, videoId: string) {
  const v = (await t.stores.videos.getById(videoId))!;
  return { videoId, accountId: v.account_id, collectionId: v.collection_id };
}

/** Writes a video's frames / shots / transcript the way the pipeline does, then publishes the pipeline's event (search's caches listen). */
export async function indexVideo(
  t: SearchTestApp,
  videoId: string,
  data: {
    modelId?: string;
    frames?: { timestamp: number; shotIndex?: number; embedding: Float32Array }[];
    shots?: Partial<ShotInput>[];
    transcript?: TranscriptInput[];
    ocr?: OcrLineInput[];
  },
): Promise<void> {
  const scope = await scopeOf(t, videoId);
  const modelId = data.modelId ?? HAND_MODEL;
  if (data.frames)
    await t.index.replaceFrames(
      scope,
      data.frames.map((f) => ({ shotIndex: f.shotIndex ?? 0, timestamp: f.timestamp, embedding: f.embedding })),
      modelId,
    );
  if (data.shots) {
    await t.index.replaceShots(
      scope,
      data.shots.map((s, i) => ({
        shotIndex: s.shotIndex ?? i,
        start: s.start ?? 0,
        end: s.end ?? 0,
        keyframe: s.keyframe ?? s.start ?? 0,
        thumbnailPath: s.thumbnailPath ?? null,
        labels: s.labels ?? [],
        caption: s.caption ?? null,
        embedding: s.embedding ?? null,
      })),
      modelId,
    );
  }
  if (data.transcript) await t.index.replaceTranscript(scope, data.transcript, "whisper@test");
  if (data.ocr) await t.index.replaceOcrLines(scope, data.ocr);
  await contentChanged(t, videoId);
}

/** Per bus: the callers waiting for a video's `video.content_changed` to reach every subscriber. */
const waitingOn = new WeakMap<EventBus, Map<string, (() => void)[]>>();

/**
 * Publishes `video.content_changed` as the pipeline does and resolves once every subscriber has
 * taken it. Outside a unit of work the bus delivers without the publisher awaiting it, and the
 * search reaction reads the store before it drops its caches; the bus awaits its subscribers one
 * by one in subscription order, so a subscriber added after the app's hears it last.
 */
async function contentChanged(t: SearchTestApp, videoId: string): Promise<void> {
  let waiting = waitingOn.get(t.bus);
  if (!waiting) {
    const map = new Map<string, (() => void)[]>();
    waitingOn.set(t.bus, map);
    // One delivery frees one waiter (first come, first served): each publish is waited for by its own.
    t.bus.subscribe("video.content_changed", (e) => map.get(e.videoId)?.shift()?.());
    waiting = map;
  }
  const list = waiting;
  const delivered = new Promise<void>((resolve) => list.set(videoId, [...(list.get(videoId) ?? []), resolve]));
  t.bus.publish({ type: "video.content_changed", videoId });
  await delivered;
}

// ---- hand-made vectors ---------------------------------------------------------------------------

export const DIM = 64;
export const HAND_MODEL = "hand-clip@test";

export function unit(v: Float32Array): Float32Array {
  let s = 0;
  for (const x of v) s += x * x;
  const n = Math.sqrt(s);
  return v.map((x) => x / n);
}

/** Concept directions live in the first 16 dimensions; backgrounds in the other 48. */
export const concept = (i: number) => {
  const v = new Float32Array(DIM);
  v[i] = 1;
  return v;
};

/** A background vector: random in dims 16..63, small noise on the concept dims. */
export function background(r: () => number): Float32Array {
  const v = new Float32Array(DIM);
  for (let i = 0; i < DIM; i++) v[i] = i < 16 ? (r() - 0.5) * 0.1 : r() - 0.5;
  return unit(v);
}

/** Close to concept `i`: cos ≈ strength. */
export function near(i: number, strength: number, r: () => number): Float32Array {
  const b = background(r);
  const c = concept(i);
  const w = Math.sqrt(1 - strength * strength);
  return unit(c.map((x, k) => x * strength + b[k] * w));
}

/**
 * A QueryEmbedder over hand-made vectors: a text maps to the vector of the longest known word it
 * contains (so the caption templates all land on the same vector); unknown text → an unused direction.
 */
export class HandEmbedder implements QueryEmbedder {
  textCalls = 0;
  imageCalls = 0;

  constructor(
    private readonly words: Record<string, Float32Array>,
    private readonly installed = true,
  ) {}

  available(): boolean {
    return this.installed;
  }

  modelId(): string | null {
    return this.installed ? HAND_MODEL : null;
  }

  async embedText(texts: string[]): Promise<Float32Array[]> {
    this.textCalls++;
    return texts.map((t) => {
      const key = Object.keys(this.words)
        .filter((w) => t.includes(w))
        .sort((a, b) => b.length - a.length)[0];
      return key ? this.words[key] : concept(15);
    });
  }

  async embedImageRgb(): Promise<Float32Array> {
    this.imageCalls++;
    return concept(14);
  }
}

// ---- requests ---------------------------------------------------------------------------------------

export type FormFields = Record<string, string | string[] | Blob | undefined>;

export function urlencoded(fields: FormFields): { body: string; headers: Record<string, string> } {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(fields)) {
    if (v === undefined) continue;
    for (const x of Array.isArray(v) ? v : [v]) p.append(k, x as string);
  }
  return { body: p.toString(), headers: { "content-type": "application/x-www-form-urlencoded" } };
}

export function multipart(fields: FormFields): { body: FormData; headers: Record<string, string> } {
  const f = new FormData();
  for (const [k, v] of Object.entries(fields)) {
    if (v === undefined) continue;
    for (const x of Array.isArray(v) ? v : [v]) f.append(k, x as string | Blob);
  }
  return { body: f, headers: {} };
}

export async function search(
  t: SearchTestApp,
  token: string,
  fields: FormFields,
  encoding: "urlencoded" | "multipart" = "urlencoded",
) {
  const b = encoding === "urlencoded" ? urlencoded(fields) : multipart(fields);
  const res = await t.request("POST", "/v1/search", { token, body: b.body, headers: b.headers });
  return { res, body: (await res.json()) as any };
}

/** Every segment of a search response, flattened, with its video id. */
export const segmentsOf = (body: any): any[] =>
  (body.data ?? []).flatMap((v: any) => v.segments.map((s: any) => ({ ...s, video_id: v.video_id })));
