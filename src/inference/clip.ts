/**
 * CLIP image/text embeddings on transformers.js (onnxruntime-node), from a local model folder in
 * the transformers.js layout: `onnx/text_model{,_quantized}.onnx`, `onnx/vision_model{,_quantized}.onnx`.
 *
 * Images arrive as raw RGB frames already at the model's crop size (224×224, scaled by ffmpeg), so
 * `pixel_values` are built here from `preprocessor_config.json` — bit-identical to what the
 * transformers.js image processor produces for a frame of that size, without sharp.
 */
import { join } from "node:path";
import {
  AutoTokenizer,
  CLIPTextModelWithProjection,
  CLIPVisionModelWithProjection,
  Tensor,
  type PreTrainedModel,
  type PreTrainedTokenizer,
} from "@huggingface/transformers";
import { InferenceError, asInferenceError } from "./errors.ts";
import {
  type Dtype,
  type ExecDevice,
  type RuntimeOptions,
  dtypeFor,
  dtypeKey,
  fileExists,
  fingerprint,
  l2normalize,
  loadFailed,
  onnxFile,
  openModelDir,
  prepareModelLoad,
  readJson,
  requireFiles,
  sessionOptions,
} from "./model-files.ts";

export type ClipTower = "text" | "vision";

/** One frame of packed RGB24 (`rgb.length === width * height * 3`), e.g. from ffmpeg `-pix_fmt rgb24`. */
export interface RgbFrame {
  rgb: Uint8Array;
  width: number;
  height: number;
}

export interface ClipLoadOptions extends RuntimeOptions {
  /** `fp32` or `q8`, or per file: `{text_model: "q8", vision_model: "fp32"}`. Always explicit. */
  dtype: Dtype;
  /** Towers to load. Default: every tower whose ONNX file exists for the dtype (at least one). */
  towers?: ClipTower[];
  /** Images/texts per ONNX run. Default 8. (q8 outputs move slightly with batch mates.) */
  batchSize?: number;
}

export interface EmbedOptions {
  /** L2-normalise (default true). `false` gives the raw `text_embeds`/`image_embeds`. */
  normalize?: boolean;
  /** Override the model's batch size for this call. */
  batchSize?: number;
}

/** What the image tower expects; read from preprocessor_config.json. */
export interface ClipImageSpec {
  width: number;
  height: number;
  mean: [number, number, number];
  std: [number, number, number];
  rescaleFactor: number;
  doRescale: boolean;
  doNormalize: boolean;
}

const TOWER_FILE: Record<ClipTower, string> = { text: "text_model", vision: "vision_model" };

export function clipImageSpec(pre: Record<string, any>): ClipImageSpec {
  const crop = pre.crop_size ?? pre.size;
  const width = typeof crop === "number" ? crop : (crop?.width ?? crop?.shortest_edge);
  const height = typeof crop === "number" ? crop : (crop?.height ?? crop?.shortest_edge);
  const triple = (x: unknown, fallback: number): [number, number, number] =>
    Array.isArray(x) && x.length === 3
      ? [x[0], x[1], x[2]]
      : typeof x === "number"
        ? [x, x, x]
        : [fallback, fallback, fallback];
  if (!Number.isInteger(width) || !Number.isInteger(height)) {
    throw new InferenceError(
      "MODEL_LOAD_FAILED",
      `preprocessor_config.json has no usable crop_size: ${JSON.stringify(crop)}`,
    );
  }
  return {
    width,
    height,
    mean: triple(pre.image_mean, 0),
    std: triple(pre.image_std, 1),
    rescaleFactor: pre.rescale_factor ?? 1 / 255,
    doRescale: pre.do_rescale ?? true,
    doNormalize: pre.do_normalize ?? true,
  };
}

/**
 * RGB24 frames → `pixel_values` [N,3,H,W] float32. Same arithmetic, in the same float32 steps, as the
 * transformers.js ImageProcessor (rescale, then `(x - mean) / std`), through a 256-entry table per channel.
 */
export function pixelValuesFromFrames(frames: RgbFrame[], spec: ClipImageSpec): Float32Array {
  const { width: W, height: H } = spec;
  const plane = W * H;
  const lut = [0, 1, 2].map((c) => {
    const t = new Float32Array(256);
    for (let v = 0; v < 256; v++) {
      let x = spec.doRescale ? Math.fround(spec.rescaleFactor * v) : v;
      if (spec.doNormalize) x = Math.fround((x - spec.mean[c]) / spec.std[c]);
      t[v] = x;
    }
    return t;
  });
  const out = new Float32Array(frames.length * 3 * plane);
  frames.forEach((f, n) => {
    if (f.width !== W || f.height !== H) {
      throw new InferenceError(
        "INVALID_INPUT",
        `frame ${n} is ${f.width}x${f.height}; this CLIP model takes ${W}x${H} RGB frames (scale them with ffmpeg first)`,
      );
    }
    if (!(f.rgb instanceof Uint8Array) || f.rgb.length !== plane * 3) {
      const got = f.rgb instanceof Uint8Array ? `${f.rgb.length} bytes` : typeof f.rgb;
      throw new InferenceError("INVALID_INPUT", `frame ${n}: expected ${plane * 3} bytes of RGB24, got ${got}`);
    }
    const base = n * 3 * plane;
    const [l0, l1, l2] = lut;
    const src = f.rgb;
    for (let p = 0, s = 0; p < plane; p++, s += 3) {
      out[base + p] = l0[src[s]];
      out[base + plane + p] = l1[src[s + 1]];
      out[base + 2 * plane + p] = l2[src[s + 2]];
    }
  });
  return out;
}

export class ClipModel {
  private constructor(
    readonly modelDir: string,
    /** `folder@sha12` over config.json and the installed tower files of this dtype. */
    readonly id: string,
    /** Embedding size (`projection_dim`). */
    readonly dim: number,
    readonly dtype: Dtype,
    readonly device: ExecDevice,
    readonly towers: ClipTower[],
    readonly batchSize: number,
    readonly imageSpec: ClipImageSpec | null,
    private readonly tokenizer: PreTrainedTokenizer | null,
    private readonly textModel: PreTrainedModel | null,
    private readonly visionModel: PreTrainedModel | null,
  ) {}

  static async load(modelDir: string, opts: ClipLoadOptions): Promise<ClipModel> {
    const { dir, device, config } = await openModelDir(modelDir, opts, "clip", "CLIP");
    const dim = Number(config.projection_dim);
    if (!Number.isInteger(dim) || dim <= 0) {
      throw new InferenceError("MODEL_LOAD_FAILED", `${dir}/config.json has no projection_dim`);
    }

    let towers = opts.towers;
    if (!towers) {
      towers = [];
      for (const t of ["text", "vision"] as const) {
        // A per-file dtype map without an entry for a tower means "not this tower".
        if (typeof opts.dtype !== "string" && !(TOWER_FILE[t] in opts.dtype)) continue;
        if (await fileExists(join(dir, onnxFile(TOWER_FILE[t], opts.dtype)))) towers.push(t);
      }
      if (towers.length === 0) {
        throw new InferenceError(
          "MODEL_NOT_INSTALLED",
          `CLIP ${dir}: neither ${onnxFile("text_model", opts.dtype)} nor ${onnxFile("vision_model", opts.dtype)} is present`,
        );
      }
    }
    const need = ["config.json"];
    if (towers.includes("text"))
      need.push("tokenizer.json", "tokenizer_config.json", onnxFile("text_model", opts.dtype));
    if (towers.includes("vision")) need.push("preprocessor_config.json", onnxFile("vision_model", opts.dtype));
    await requireFiles(dir, need, `CLIP (${dtypeKey(opts.dtype)})`);

    // The vision tower's weights are uint8 (transformers.js picks u8 when a Conv is present): on
    // VNNI CPUs it loads from a derived folder with signed weights, ~2× faster, same outputs.
    const onnxFiles = towers.map((t) => onnxFile(TOWER_FILE[t], opts.dtype));
    const loadDir = await prepareModelLoad(dir, onnxFiles, opts);
    const common = {
      device,
      local_files_only: true,
      session_options: sessionOptions(opts),
    };
    const what = `loading CLIP ${dir} (${dtypeKey(opts.dtype)}, ${device})`;
    let tokenizer: PreTrainedTokenizer | null = null;
    let textModel: PreTrainedModel | null = null;
    let visionModel: PreTrainedModel | null = null;
    try {
      if (towers.includes("text")) {
        tokenizer = await AutoTokenizer.from_pretrained(dir, { local_files_only: true });
        textModel = await CLIPTextModelWithProjection.from_pretrained(loadDir, {
          ...common,
          dtype: dtypeFor(opts.dtype, "text_model"),
        });
      }
      if (towers.includes("vision")) {
        visionModel = await CLIPVisionModelWithProjection.from_pretrained(loadDir, {
          ...common,
          dtype: dtypeFor(opts.dtype, "vision_model"),
        });
      }
    } catch (e) {
      await Promise.allSettled([textModel?.dispose(), visionModel?.dispose()]);
      throw loadFailed(e, what, device);
    }
    const imageSpec = towers.includes("vision")
      ? clipImageSpec(await readJson(join(dir, "preprocessor_config.json")))
      : null;
    // The id names the installed weights (both towers when present), not what this instance loaded,
    // so text and image vectors of one install always carry the same id.
    const idFiles = ["config.json"];
    for (const t of ["text", "vision"] as const) {
      if (typeof opts.dtype !== "string" && !(TOWER_FILE[t] in opts.dtype)) continue;
      const f = onnxFile(TOWER_FILE[t], opts.dtype);
      if (await fileExists(join(dir, f))) idFiles.push(f);
    }
    const id = await fingerprint(dir, idFiles);
    const batchSize = Math.max(1, Math.floor(opts.batchSize ?? 8));
    return new ClipModel(
      dir,
      id,
      dim,
      opts.dtype,
      device,
      towers,
      batchSize,
      imageSpec,
      tokenizer,
      textModel,
      visionModel,
    );
  }

  /** Token ids as the text tower sees them (right-padded to the longest, truncated to 77). */
  tokenize(texts: string[]): number[][] {
    const tok = this.requireTokenizer();
    if (texts.length === 0) return [];
    const enc = tok(texts, { padding: true, truncation: true }) as { input_ids: Tensor };
    return (enc.input_ids.tolist() as bigint[][]).map((row) => row.map(Number));
  }

  async embedTexts(texts: string[], opts: EmbedOptions = {}): Promise<Float32Array[]> {
    const tok = this.requireTokenizer();
    if (!Array.isArray(texts) || texts.some((t) => typeof t !== "string")) {
      throw new InferenceError("INVALID_INPUT", "embedTexts takes an array of strings");
    }
    const out: Float32Array[] = [];
    const bs = Math.max(1, opts.batchSize ?? this.batchSize);
    for (let i = 0; i < texts.length; i += bs) {
      const batch = texts.slice(i, i + bs);
      const { input_ids } = tok(batch, { padding: true, truncation: true }) as { input_ids: Tensor };
      let embeds: Tensor;
      try {
        ({ text_embeds: embeds } = await this.textModel!({ input_ids }));
      } catch (e) {
        throw asInferenceError(e, "INFERENCE_FAILED", `CLIP text tower (${this.id})`);
      }
      out.push(...this.split(embeds, batch.length, opts.normalize ?? true));
    }
    return out;
  }

  async embedImages(frames: RgbFrame[], opts: EmbedOptions = {}): Promise<Float32Array[]> {
    const spec = this.requireVision();
    if (!Array.isArray(frames)) throw new InferenceError("INVALID_INPUT", "embedImages takes an array of RGB frames");
    const out: Float32Array[] = [];
    const bs = Math.max(1, opts.batchSize ?? this.batchSize);
    for (let i = 0; i < frames.length; i += bs) {
      const batch = frames.slice(i, i + bs);
      out.push(...(await this.embedPixelValues(pixelValuesFromFrames(batch, spec), batch.length, opts)));
    }
    return out;
  }

  /** Runs the image tower on already-preprocessed `pixel_values` [count,3,H,W] (one ONNX run). */
  async embedPixelValues(pixelValues: Float32Array, count: number, opts: EmbedOptions = {}): Promise<Float32Array[]> {
    const spec = this.requireVision();
    if (count === 0) return [];
    if (pixelValues.length !== count * 3 * spec.width * spec.height) {
      throw new InferenceError(
        "INVALID_INPUT",
        `pixel_values length ${pixelValues.length} != ${count}x3x${spec.height}x${spec.width}`,
      );
    }
    const pixel_values = new Tensor("float32", pixelValues, [count, 3, spec.height, spec.width]);
    let embeds: Tensor;
    try {
      ({ image_embeds: embeds } = await this.visionModel!({ pixel_values }));
    } catch (e) {
      throw asInferenceError(e, "INFERENCE_FAILED", `CLIP vision tower (${this.id})`);
    }
    return this.split(embeds, count, opts.normalize ?? true);
  }

  async dispose(): Promise<void> {
    await Promise.allSettled([this.textModel?.dispose(), this.visionModel?.dispose()]);
  }

  private split(t: Tensor, n: number, normalize: boolean): Float32Array[] {
    const data = t.data as Float32Array;
    if (t.dims.length !== 2 || t.dims[0] !== n || t.dims[1] !== this.dim) {
      throw new InferenceError("INFERENCE_FAILED", `CLIP output dims [${t.dims}] != [${n}, ${this.dim}]`);
    }
    const out: Float32Array[] = [];
    for (let i = 0; i < n; i++) {
      const v = data.slice(i * this.dim, (i + 1) * this.dim);
      out.push(normalize ? l2normalize(v) : v);
    }
    return out;
  }

  private requireTokenizer(): PreTrainedTokenizer {
    if (!this.tokenizer || !this.textModel) {
      throw new InferenceError(
        "MODEL_NOT_INSTALLED",
        `CLIP ${this.id}: text tower not installed/loaded (${onnxFile("text_model", this.dtype)})`,
      );
    }
    return this.tokenizer;
  }

  private requireVision(): ClipImageSpec {
    if (!this.visionModel || !this.imageSpec) {
      throw new InferenceError(
        "MODEL_NOT_INSTALLED",
        `CLIP ${this.id}: vision tower not installed/loaded (${onnxFile("vision_model", this.dtype)})`,
      );
    }
    return this.imageSpec;
  }
}
