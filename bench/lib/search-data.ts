/**
 * The end-to-end search benches' library: 100 k synthetic CLIP-like frames (bench/lib/synthetic.ts,
 * 512-d, ~200 frames per video at 1 fps, shots of ~10 frames with their mean vectors and labels)
 * and a 4-second transcript segment every 8 s (~12.5 k), words drawn from a Zipf vocabulary with
 * the query words said in ~1-2 % of them, written through the index store into one account of a
 * BenchApp (bench/search-bench.ts). And the query embedder the benches give the app: the tiny CLIP
 * text tower really runs on each query's prompts, the 512-d vector searched is the synthetic text
 * query assigned to that query.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { BenchApp } from "../../src/app.ts";
import { ClipModel } from "../../src/inference/clip.ts";
import { createInferencePool } from "../../src/inference/pool.ts";
import { IndexStore } from "../../src/indexing/store.ts";
import { SCENE_LABELS } from "../../src/pipeline/labels.ts";
import type { QueryEmbedder } from "../../src/search/embedder.ts";
import { VideoStore } from "../../src/videos/store.ts";
import { type Dataset, generateDataset, prng } from "./synthetic.ts";

export const DIM = 512;
export const MODEL = "bench-clip-b32@synthetic";

/** The search benches' account: `frames` clustered 512-d frames, ~200 a video, shots of 10, ten collections. */
export const searchDataset = (frames: number): Dataset =>
  generateDataset({
    n: frames,
    dim: DIM,
    kind: "clustered",
    framesPerVideo: 200,
    framesPerShot: 10,
    collections: 10,
    seed: 42,
  });

export const WORDS = [
  "harbor",
  "sunset",
  "budget",
  "engine",
  "garden",
  "meeting",
  "soccer",
  "bridge",
  "kitchen",
  "camera",
  "river",
  "concert",
  "airport",
  "winter",
  "market",
  "laptop",
  "forest",
  "traffic",
  "dinner",
  "robot",
];

/**
 * Transcript words: a Zipf(1) vocabulary of 4 000 words (rank 1 is the most frequent, like "the"),
 * with the query words at ranks 100-119, so each is said in about 1-2 % of the segments.
 */
const VOCAB = Array.from({ length: 4000 }, (_, i) =>
  i >= 100 && i < 100 + WORDS.length ? WORDS[i - 100] : `w${i.toString(36)}x`,
);
const ZIPF_CDF = (() => {
  const w = VOCAB.map((_, i) => 1 / (i + 1));
  const total = w.reduce((a, b) => a + b, 0);
  let acc = 0;
  return w.map((x) => (acc += x / total));
})();
function zipfWord(r: () => number): string {
  const u = r() / 4294967296;
  let lo = 0;
  let hi = ZIPF_CDF.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (ZIPF_CDF[mid] < u) lo = mid + 1;
    else hi = mid;
  }
  return VOCAB[lo];
}

/** The tiny random-weight CLIP the benches encode query text with (its vectors are not used). */
export const TINY_CLIP = join(import.meta.dir, "..", "..", "test", "fixtures", "models", "tiny-random-clip");

/**
 * The tiny text tower's encoding, for a BenchEmbedder: given the inference worker's file, on an
 * inference pool's thread (the product's plan on this machine: one thread, ONNX Runtime's threads
 * by the cores), as `vsearch serve` embeds a query; without it, in this thread (the tokenizer and
 * ONNX Runtime's binding on the event loop, which serve keeps off it).
 */
export async function tinyTextTower(
  inferenceWorkerFile?: string,
): Promise<{ encode: (texts: string[]) => Promise<unknown>; close: () => Promise<void> }> {
  if (inferenceWorkerFile) {
    const pool = createInferencePool({ workerFile: inferenceWorkerFile, threads: 1 });
    return {
      encode: (texts) => pool.embedTexts({ modelDir: TINY_CLIP, dtype: "fp32" }, texts),
      close: () => pool.close(),
    };
  }
  const tiny = await ClipModel.load(TINY_CLIP, { dtype: "fp32", towers: ["text"] });
  return { encode: (texts) => tiny.embedTexts(texts), close: () => tiny.dispose() };
}

/**
 * Tiny CLIP text tower for the encoding work (`encode`: in this thread, or through the inference
 * pool's worker thread as the product embeds a query); the 512-d synthetic query of `q<i>` for the
 * vector.
 */
export class BenchEmbedder implements QueryEmbedder {
  encodeMs: number[] = [];
  private readonly assigned = new Map<string, number>();
  constructor(
    private readonly encode: (texts: string[]) => Promise<unknown>,
    private readonly queries: Float32Array,
  ) {}
  available = () => true;
  modelId = () => MODEL;
  async embedText(texts: string[]): Promise<Float32Array[]> {
    const t0 = performance.now();
    await this.encode(texts);
    this.encodeMs.push(performance.now() - t0);
    // Every prompt of a query (the caption templates around it) maps to that query's vector; each
    // new query gets a vector no earlier query had, so a "new query" row starts cold.
    return texts.map((t) => {
      const words = (t.match(/[a-z]+/g) ?? []).filter((w) => WORDS.includes(w)).join(" ");
      let q = this.assigned.get(words);
      if (q === undefined) this.assigned.set(words, (q = this.assigned.size % (this.queries.length / DIM)));
      return this.queries.slice(q * DIM, (q + 1) * DIM);
    });
  }
  async embedImageRgb(): Promise<Float32Array> {
    throw new Error("not used");
  }
}

export interface SearchData {
  accountId: string;
  /** A read_only API key of the account. */
  key: string;
  videos: number;
  shots: number;
  transcriptSegments: number;
  insertMs: number;
}

/**
 * A video row as the pipeline leaves it once indexed (`ready`, its duration), for a bench that
 * writes its vectors itself: a 64-byte placeholder stands in for the source file.
 */
export async function readyVideo(
  app: BenchApp,
  videos: VideoStore,
  dir: string,
  at: { accountId: string; collectionId: string; filename: string; durationSecs: number },
): Promise<string> {
  const tmp = join(dir, "src.bin");
  writeFileSync(tmp, new Uint8Array(64));
  const { video_id } = await app.services.videos.createFromUpload({
    accountId: at.accountId,
    collectionId: at.collectionId,
    filename: at.filename,
    tempFile: tmp,
    ext: "mp4",
    container: "mp4",
    mimeType: "video/mp4",
    sizeBytes: 64,
  });
  await videos.update(video_id, { status: "ready", progress_pct: 100, duration_secs: at.durationSecs });
  return video_id;
}

/** Writes `ds` (frames, shot means, transcripts) into a new account of `app`, through the index store as the pipeline does. */
export async function writeSearchData(app: BenchApp, ds: Dataset, dir: string): Promise<SearchData> {
  const FRAMES = ds.n;
  const s = app.services;
  const account = await s.accounts.createAccount({ name: "Bench", plan: "enterprise" });
  const key = (await s.apiKeys.create(account.id, { name: "bench", permissions: "read_only" })).key;
  const collections: string[] = [];
  for (let i = 0; i < 10; i++) collections.push((await s.collections.create(account.id, { name: `c${i}` })).id);
  const t0 = performance.now();
  const index = new IndexStore(app.internals.db, app.internals.db.backend === "sqlite");
  const videoStore = new VideoStore(app.internals.db);
  const r = prng(5);
  const nVideos = ds.video[FRAMES - 1] + 1;
  let transcriptSegments = 0;
  let shotsTotal = 0;
  for (let v = 0, row = 0; v < nVideos; v++) {
    const first = row;
    while (row < FRAMES && ds.video[row] === v) row++;
    const n = row - first;
    const video_id = await readyVideo(app, videoStore, dir, {
      accountId: account.id,
      collectionId: collections[v % 10],
      filename: `video-${v}.mp4`,
      durationSecs: n,
    });
    const scope = { videoId: video_id, accountId: account.id, collectionId: collections[v % 10] };
    const shotOf = (i: number) => ds.shot[i] - ds.shot[first];
    await index.replaceFrames(
      scope,
      Array.from({ length: n }, (_, k) => ({
        timestamp: k,
        shotIndex: shotOf(first + k),
        embedding: ds.vectors.subarray((first + k) * DIM, (first + k + 1) * DIM),
      })),
      MODEL,
    );
    const shots = [];
    for (let k = 0; k < n; ) {
      const sh = shotOf(first + k);
      let e = k;
      while (e < n && shotOf(first + e) === sh) e++;
      const mean = new Float32Array(DIM);
      for (let i = k; i < e; i++) for (let j = 0; j < DIM; j++) mean[j] += ds.vectors[(first + i) * DIM + j];
      const labels = [0, 1, 2].map((x) => ({
        label: SCENE_LABELS[(r() + x) % SCENE_LABELS.length],
        score: Math.round(((3 - x) / 6) * 100) / 100,
      }));
      shots.push({
        shotIndex: sh,
        start: k,
        end: e,
        keyframe: (k + e) / 2,
        thumbnailPath: null,
        labels,
        caption: null,
        embedding: mean,
      });
      k = e;
    }
    shotsTotal += shots.length;
    await index.replaceShots(scope, shots, MODEL);
    const segs = [];
    for (let t = 0; t + 4 <= n; t += 8)
      segs.push({ start: t, end: t + 4, text: Array.from({ length: 14 }, () => zipfWord(r)).join(" ") });
    transcriptSegments += segs.length;
    await index.replaceTranscript(scope, segs, "whisper@bench");
  }
  const insertMs = performance.now() - t0;

  return {
    accountId: account.id,
    key,
    videos: nVideos,
    shots: shotsTotal,
    transcriptSegments,
    insertMs,
  };
}
