import type { ClipModel } from "../inference/clip.ts";
import { InferenceError } from "../inference/errors.ts";
import { missingModel } from "../models/hints.ts";
import type { InferencePool } from "../inference/pool.ts";
import type { ModelCatalog } from "../models/roles.ts";
import { LRUCache } from "lru-cache";

/** CLIP's input side: query images are decoded by ffmpeg straight to this many pixels square. */
export const QUERY_IMAGE_SIDE = 224;

/**
 * What search needs from the image-text model (CLIP family). Injected by the composition root:
 * backed by the worker pool + model registry in the server, by an in-process ClipModel in tests.
 * Vectors come back L2-normalised.
 */
export interface QueryEmbedder {
  /** A model of the `image-text` role is installed. */
  available(): boolean;
  /** Id of that model, as stored in `frames.model_id` / `shots.model_id`. */
  modelId(): string | null;
  embedText(texts: string[]): Promise<Float32Array[]>;
  /** One 224×224 RGB24 image (`rgb.length === 224 * 224 * 3`). */
  embedImageRgb(rgb: Uint8Array): Promise<Float32Array>;
}

/**
 * Optional semantic side of transcript search (SPEC §6: lexical fused with semantic matching
 * "where a text-embedding model is installed"). Nothing implements it yet: the `text` role has
 * no model and transcript segments have no vectors. When one lands, it returns the best
 * transcript segments for a query inside a scope, and search fuses them with the BM25 list.
 */
export interface TranscriptSemanticSearch {
  available(): boolean;
  search(
    scope: { accountId: string; collectionId?: string; videoId?: string },
    query: string,
    k: number,
  ): Promise<
    {
      segmentId: number;
      videoId: string;
      start: number;
      end: number;
      text: string;
      similarity: number;
      score: number;
    }[]
  >;
}

/** The server's embedder: the active `image-text` model of the registry, run in the worker pool. */
export class CatalogQueryEmbedder implements QueryEmbedder {
  constructor(
    private readonly models: ModelCatalog,
    private readonly pool: () => Promise<InferencePool>,
  ) {}

  private model() {
    const m = this.models.active("image-text");
    if (!m) throw new InferenceError("MODEL_NOT_INSTALLED", missingModel("image-text"));
    return m;
  }

  available(): boolean {
    return this.models.active("image-text") !== null;
  }

  modelId(): string | null {
    return this.models.active("image-text")?.modelId ?? null;
  }

  async embedText(texts: string[]): Promise<Float32Array[]> {
    const m = this.model();
    const out = await (await this.pool()).embedTexts({ modelDir: m.dir, dtype: m.dtype }, texts);
    return out.vectors.map((v) => new Float32Array(v));
  }

  async embedImageRgb(rgb: Uint8Array): Promise<Float32Array> {
    const m = this.model();
    const frame = { rgb: rgb.slice(), width: QUERY_IMAGE_SIDE, height: QUERY_IMAGE_SIDE };
    const out = await (await this.pool()).embedImages({ modelDir: m.dir, dtype: m.dtype }, [frame]);
    return new Float32Array(out.vectors[0]);
  }
}

/** An in-process ClipModel (tests, one-shot CLI runs without a pool). */
export class ClipQueryEmbedder implements QueryEmbedder {
  constructor(
    private readonly clip: ClipModel,
    private readonly id: string = clip.id,
  ) {}

  available(): boolean {
    return true;
  }

  modelId(): string {
    return this.id;
  }

  embedText(texts: string[]): Promise<Float32Array[]> {
    return this.clip.embedTexts(texts);
  }

  async embedImageRgb(rgb: Uint8Array): Promise<Float32Array> {
    const [v] = await this.clip.embedImages([{ rgb, width: QUERY_IMAGE_SIDE, height: QUERY_IMAGE_SIDE }]);
    return v;
  }
}

/** Short queries are embedded through these caption templates and averaged (CLIP prompt ensembling). */
export const QUERY_TEMPLATES: readonly string[] = ["{q}", "a photo of {q}.", "a video frame showing {q}."];
/** Queries of at most this many words are short. */
export const SHORT_QUERY_WORDS = 6;

export function normalizeQueryText(q: string): string {
  return q.normalize("NFC").trim().replace(/\s+/g, " ").toLowerCase();
}

export function normalize(v: Float32Array): Float32Array {
  let s = 0;
  for (let i = 0; i < v.length; i++) s += v[i] * v[i];
  const n = Math.sqrt(s);
  const out = new Float32Array(v.length);
  if (n > 0) for (let i = 0; i < v.length; i++) out[i] = v[i] / n;
  return out;
}

export function meanNormalized(vs: Float32Array[]): Float32Array {
  const out = new Float32Array(vs[0].length);
  for (const v of vs) {
    const u = normalize(v);
    for (let i = 0; i < u.length; i++) out[i] += u[i];
  }
  return normalize(out);
}

/**
 * Text queries → one vector: short queries through the templates (averaged), long ones as they
 * are. Cached in an LRU keyed by model id + normalised text; concurrent identical queries share
 * one model call.
 */
export class QueryEncoder {
  private readonly cache: LRUCache<string, Promise<Float32Array>>;

  constructor(
    readonly embedder: QueryEmbedder,
    capacity = 1024,
  ) {
    this.cache = new LRUCache({ max: capacity });
  }

  static prompts(text: string): string[] {
    const words = text.split(" ").filter(Boolean).length;
    return words <= SHORT_QUERY_WORDS ? QUERY_TEMPLATES.map((t) => t.replace("{q}", text)) : [text];
  }

  /** Whether a text is in the cache (for `meta` and the bench). */
  cached(text: string): boolean {
    return this.cache.get(`${this.embedder.modelId()}\u0000${normalizeQueryText(text)}`) !== undefined;
  }

  text(query: string): Promise<Float32Array> {
    const text = normalizeQueryText(query);
    const key = `${this.embedder.modelId()}\u0000${text}`;
    const hit = this.cache.get(key);
    if (hit) return hit;
    const p = this.embedder.embedText(QueryEncoder.prompts(text)).then(meanNormalized);
    this.cache.set(key, p);
    p.catch(() => this.cache.delete(key));
    return p;
  }

  async image(rgb: Uint8Array): Promise<Float32Array> {
    return normalize(await this.embedder.embedImageRgb(rgb));
  }
}
