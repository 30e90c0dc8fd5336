/**
 * Whisper speech-to-text on transformers.js (onnxruntime-node), from a local folder in the
 * transformers.js layout (`onnx/encoder_model{,_quantized}.onnx`, `onnx/decoder_model_merged{,_quantized}.onnx`).
 *
 * `transcribe()` takes 16 kHz mono samples. Audio longer than one 30 s window is walked the way
 * Whisper itself does it (a seek loop): each pass decodes up to 30 s with timestamps; when a pass
 * stops in the middle of a segment, the next pass starts at the last complete segment's end. Every
 * pass is capped at `maxNewTokens`, and segments that are one token repeated (random weights, or a
 * real model stuck in a loop) are dropped. Nothing beyond 30 s is ever silently cut off.
 */
import { join } from "node:path";
import { deflateSync } from "node:zlib";
import {
  AutoTokenizer,
  LogitsProcessor,
  LogitsProcessorList,
  Tensor,
  WhisperFeatureExtractor,
  WhisperForConditionalGeneration,
  type PreTrainedTokenizer,
} from "@huggingface/transformers";
import { InferenceError, asInferenceError } from "./errors.ts";
import {
  type Dtype,
  type ExecDevice,
  type RuntimeOptions,
  configureTransformersEnv,
  dtypeFor,
  dtypeKey,
  fingerprint,
  loadableModelDir,
  loadFailed,
  onnxFile,
  readJson,
  readModelConfig,
  requireFiles,
  resolveModelDir,
  sessionOptions,
} from "./model-files.ts";

export const WHISPER_SAMPLE_RATE = 16_000;

export interface TranscriptSegment {
  /** Seconds from the start of the media (offsetSecs already added). */
  start: number;
  end: number;
  text: string;
}

export interface WhisperLoadOptions extends RuntimeOptions {
  /** `fp32` or `q8`, or per file: `{encoder_model: "fp32", decoder_model_merged: "q8"}`. Always explicit. */
  dtype: Dtype;
  /**
   * Safety cap on generated tokens per decoding pass (≤ one 30 s window). Default 224 — half the
   * decoder context, as in OpenAI's `sample_len`; speech rarely needs more than ~150 per 30 s.
   */
  maxNewTokens?: number;
}

export interface TranscribeOptions {
  /** Multilingual models only (`en`, `english`, `de`…); English-only (`.en`) models accept nothing but English. */
  language?: string;
  /** Multilingual models only: `transcribe` (default) or `translate`. */
  task?: "transcribe" | "translate";
  /** Override the model's per-pass token cap. */
  maxNewTokens?: number;
}

/** Token layout facts read from generation_config.json. */
export interface WhisperTokenSpec {
  eos: number;
  decoderStart: number;
  noTimestamps: number;
  /** First timestamp token (`<|0.00|>`); text tokens are `< eos`. */
  timestampBegin: number;
  /** Seconds per timestamp step (chunk_length / max_source_positions = 0.02). */
  timePrecision: number;
}

/**
 * Timestamp rules transformers.js 4.3.1 leaves out (its WhisperTimeStampLogitsProcessor only pairs
 * timestamps): the first timestamp is at most `max_initial_timestamp_index` (its check sits after
 * an early `continue` and never runs), timestamps never go backwards (as in HF Python), and none
 * lies past the end of the real audio in a short window — once that point is reached, decoding ends.
 * Runs before the transformers.js processor.
 */
export class WhisperTimestampRules extends LogitsProcessor {
  constructor(
    private readonly spec: WhisperTokenSpec,
    /** Prompt length: generated tokens start at this index. */
    private readonly beginIndex: number,
    private readonly maxInitialIndex: number,
    /** Last allowed timestamp index (audio length / time precision, rounded up). */
    private readonly maxIndex: number,
  ) {
    super();
  }

  _call(inputIds: bigint[][], logits: Tensor): Tensor {
    const tb = this.spec.timestampBegin;
    const vocab = logits.dims.at(-1)!;
    const all = logits.data as Float32Array;
    for (let i = 0; i < inputIds.length; i++) {
      const row = all.subarray(i * vocab, (i + 1) * vocab);
      const seq = inputIds[i].slice(this.beginIndex).map(Number);
      const lastAllowed = tb + (seq.length === 0 ? Math.min(this.maxInitialIndex, this.maxIndex) : this.maxIndex);
      let lowest = tb;
      let lastTs = -1;
      for (let k = seq.length - 1; k >= 0; k--) {
        if (seq[k] >= tb) {
          lastTs = seq[k];
          break;
        }
      }
      if (lastTs >= 0) {
        const closing = seq.at(-1)! >= tb && seq.length >= 2 && seq.at(-2)! < tb;
        lowest = closing ? lastTs : lastTs + 1;
      }
      if (lowest > lastAllowed) {
        // The audio is used up: nothing but end-of-text.
        const eos = row[this.spec.eos];
        row.fill(-Infinity);
        row[this.spec.eos] = Number.isFinite(eos) ? eos : 0;
        continue;
      }
      if (lowest > tb) row.subarray(tb, lowest).fill(-Infinity);
      if (lastAllowed + 1 < row.length) row.subarray(lastAllowed + 1).fill(-Infinity);
    }
    return logits;
  }
}

interface RawSegment {
  start: number;
  end: number;
  tokens: number[];
}

/**
 * Splits one pass's generated tokens (prompt removed) into timestamped segments.
 * `<|a|> text <|b|>` is a complete segment; text after the last closing timestamp is the `tail`
 * (it runs to the end of the window when nothing better is known). Segments that start after the
 * audio (`windowSecs`) are dropped, ends are clamped to it.
 */
export function parseTimestampedTokens(
  tokens: number[],
  spec: WhisperTokenSpec,
  windowSecs: number,
): { segments: RawSegment[]; tail: RawSegment | null; lastEnd: number; endedWithEos: boolean } {
  const segments: RawSegment[] = [];
  let start: number | null = null;
  let text: number[] = [];
  let lastEnd = 0;
  let endedWithEos = false;
  for (const tok of tokens) {
    if (tok === spec.eos) {
      endedWithEos = true;
      break;
    }
    if (tok >= spec.timestampBegin) {
      const t = (tok - spec.timestampBegin) * spec.timePrecision;
      if (text.length === 0) {
        start = t; // opening timestamp (or the second of an end/start pair)
      } else {
        segments.push({ start: start ?? lastEnd, end: Math.max(t, start ?? lastEnd), tokens: text });
        lastEnd = t;
        start = null;
        text = [];
      }
    } else if (tok < spec.eos) {
      text.push(tok);
    } // other special tokens carry no text
  }
  const tail = text.length > 0 ? { start: start ?? lastEnd, end: windowSecs, tokens: text } : null;
  // Nothing can be said after the audio ends; clamp ends to it.
  const inside = (s: RawSegment) => s.start < windowSecs;
  const clamp = (s: RawSegment): RawSegment => ({ ...s, end: Math.min(s.end, windowSecs) });
  return {
    segments: segments.filter(inside).map(clamp),
    tail: tail && inside(tail) ? clamp(tail) : null,
    lastEnd: Math.min(lastEnd, windowSecs),
    endedWithEos,
  };
}

/**
 * True for output that is not speech but a decoding loop: a segment made of very few distinct
 * tokens (random weights repeat one token until the cap), or text that compresses too well —
 * Whisper's own `compression_ratio > 2.4` rule.
 */
export function isDegenerate(tokens: number[], text: string): boolean {
  if (tokens.length >= 8 && new Set(tokens).size / tokens.length < 0.3) return true;
  const bytes = Buffer.from(text, "utf8");
  if (bytes.length >= 48) {
    const ratio = bytes.length / deflateSync(bytes).length;
    if (ratio > 2.4) return true;
  }
  return false;
}

function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}

export interface SeekDeps {
  /** Samples per window (30 s). */
  windowSamples: number;
  spec: WhisperTokenSpec;
  /** Decodes one window (≤ windowSamples) with timestamps; tokens without the prompt. */
  decodeWindow: (chunk: Float32Array, audioSecs: number) => Promise<number[]>;
  decodeText: (tokens: number[]) => string;
}

/**
 * Whisper's seek loop over audio of any length. Each pass decodes the next ≤ 30 s; if the pass was
 * cut off (no end-of-text) in the middle of a segment after complete ones, the next pass resumes at
 * the last complete segment's end so the unfinished words get decoded again with the audio that
 * follows — provided that moves at least 1 s and leaves at least 1 s; otherwise the tail is kept and
 * the whole window consumed. Degenerate and empty segments are dropped, and so is a whole pass
 * whose text is one loop; times are shifted by `offsetSecs`.
 */
export async function seekTranscribe(samples: Float32Array, offsetSecs: number, deps: SeekDeps): Promise<TranscriptSegment[]> {
  if (!Number.isFinite(offsetSecs) || offsetSecs < 0) throw new InferenceError("INVALID_INPUT", `offsetSecs must be ≥ 0, got ${offsetSecs}`);
  const minSamples = WHISPER_SAMPLE_RATE / 10;
  const out: TranscriptSegment[] = [];
  let seek = 0;
  while (samples.length - seek >= minSamples) {
    const chunk = samples.subarray(seek, seek + deps.windowSamples);
    const chunkSecs = chunk.length / WHISPER_SAMPLE_RATE;
    const tokens = await deps.decodeWindow(chunk, chunkSecs);
    const { segments, tail, lastEnd, endedWithEos } = parseTimestampedTokens(tokens, deps.spec, chunkSecs);

    let advanceSecs = chunkSecs;
    const keep = [...segments];
    if (tail && !endedWithEos && segments.length > 0 && lastEnd >= 1 && chunkSecs - lastEnd >= 1) {
      advanceSecs = lastEnd;
    } else if (tail) {
      keep.push(tail);
    }
    const base = offsetSecs + seek / WHISPER_SAMPLE_RATE;
    const pass: TranscriptSegment[] = [];
    for (const s of keep) {
      const text = deps.decodeText(s.tokens);
      if (text.length === 0 || isDegenerate(s.tokens, text)) continue;
      pass.push({ start: round3(base + s.start), end: round3(base + Math.max(s.end, s.start)), text });
    }
    // A loop can also be spread over many short segments ("Thank you." × 20): judge the pass as a whole.
    if (!isDegenerate(keep.flatMap((s) => s.tokens), pass.map((s) => s.text).join(" "))) out.push(...pass);
    seek += Math.max(1, Math.round(advanceSecs * WHISPER_SAMPLE_RATE));
  }
  return out;
}

export class WhisperModel {
  private constructor(
    readonly modelDir: string,
    /** `folder@sha12` over config.json and the two ONNX files of this dtype. */
    readonly id: string,
    readonly dtype: Dtype,
    readonly device: ExecDevice,
    readonly isMultilingual: boolean,
    readonly maxNewTokens: number,
    readonly tokenSpec: WhisperTokenSpec,
    /** Samples per window (30 s at 16 kHz). */
    readonly windowSamples: number,
    private readonly maxInitialTimestampIndex: number,
    private readonly model: WhisperForConditionalGeneration,
    private readonly tokenizer: PreTrainedTokenizer,
    private readonly featureExtractor: WhisperFeatureExtractor,
  ) {}

  static async load(modelDir: string, opts: WhisperLoadOptions): Promise<WhisperModel> {
    const dir = resolveModelDir(modelDir);
    if (opts.dtype === undefined) throw new InferenceError("INVALID_INPUT", "Whisper load: dtype is required (fp32 or q8)");
    const device = opts.device ?? "cpu";
    const config = await readModelConfig(dir);
    if (config.model_type !== "whisper") {
      throw new InferenceError("MODEL_LOAD_FAILED", `${dir} is a "${config.model_type}" model, not Whisper`);
    }
    const onnx = [onnxFile("encoder_model", opts.dtype), onnxFile("decoder_model_merged", opts.dtype)];
    const need = ["config.json", "generation_config.json", "preprocessor_config.json", "tokenizer.json", "tokenizer_config.json", ...onnx];
    await requireFiles(dir, need, `Whisper (${dtypeKey(opts.dtype)})`);

    const gen = await readJson(join(dir, "generation_config.json"));
    const pre = await readJson(join(dir, "preprocessor_config.json"));
    if (pre.sampling_rate !== WHISPER_SAMPLE_RATE) {
      throw new InferenceError("MODEL_LOAD_FAILED", `${dir}: sampling_rate ${pre.sampling_rate}, expected ${WHISPER_SAMPLE_RATE}`);
    }
    const eos = Array.isArray(gen.eos_token_id) ? gen.eos_token_id[0] : gen.eos_token_id;
    const tokenSpec: WhisperTokenSpec = {
      eos,
      decoderStart: gen.decoder_start_token_id ?? config.decoder_start_token_id,
      noTimestamps: gen.no_timestamps_token_id,
      timestampBegin: gen.no_timestamps_token_id + 1,
      timePrecision: (pre.chunk_length ?? 30) / (config.max_source_positions ?? 1500),
    };
    if (![tokenSpec.eos, tokenSpec.decoderStart, tokenSpec.noTimestamps].every(Number.isInteger)) {
      throw new InferenceError("MODEL_LOAD_FAILED", `${dir}/generation_config.json lacks eos/decoder_start/no_timestamps token ids`);
    }
    const maxTarget = config.max_target_positions ?? 448;
    const maxNewTokens = Math.max(1, Math.min(Math.floor(opts.maxNewTokens ?? 224), maxTarget - 4));

    // The encoder's weights are uint8 (it has Conv layers): see loadableModelDir.
    const loadDir = await loadableModelDir(dir, onnx, opts);
    configureTransformersEnv(loadDir, opts.cacheDir);
    const what = `loading Whisper ${dir} (${dtypeKey(opts.dtype)}, ${device})`;
    let model: WhisperForConditionalGeneration;
    let tokenizer: PreTrainedTokenizer;
    let featureExtractor: WhisperFeatureExtractor;
    try {
      tokenizer = await AutoTokenizer.from_pretrained(dir, { local_files_only: true });
      featureExtractor = (await WhisperFeatureExtractor.from_pretrained(dir, { local_files_only: true })) as WhisperFeatureExtractor;
      model = (await WhisperForConditionalGeneration.from_pretrained(loadDir, {
        device,
        local_files_only: true,
        session_options: sessionOptions(opts),
        dtype: {
          encoder_model: dtypeFor(opts.dtype, "encoder_model"),
          decoder_model_merged: dtypeFor(opts.dtype, "decoder_model_merged"),
        },
      })) as WhisperForConditionalGeneration;
    } catch (e) {
      throw loadFailed(e, what, device);
    }
    const id = await fingerprint(dir, ["config.json", ...onnx]);
    return new WhisperModel(
      dir,
      id,
      opts.dtype,
      device,
      gen.is_multilingual === true,
      maxNewTokens,
      tokenSpec,
      (pre.n_samples as number) ?? 30 * WHISPER_SAMPLE_RATE,
      Number.isInteger(gen.max_initial_timestamp_index) ? gen.max_initial_timestamp_index : 50,
      model,
      tokenizer,
      featureExtractor,
    );
  }

  /** Log-mel features [80 × 3000] (row-major, mel-major) of up to 30 s of audio, zero-padded. */
  async extractFeatures(samples: Float32Array): Promise<Float32Array> {
    if (samples.length > this.windowSamples) {
      throw new InferenceError("INVALID_INPUT", `extractFeatures takes at most ${this.windowSamples} samples (30 s)`);
    }
    const { input_features } = (await this.featureExtractor(samples)) as { input_features: Tensor };
    return input_features.data as Float32Array;
  }

  /**
   * Greedy decoding of one window's features. Returns the generated tokens without the prompt
   * (`<|startoftranscript|>` [lang task] [`<|notimestamps|>`]), eos included when reached.
   */
  async generateTokens(
    features: Float32Array,
    opts: {
      timestamps: boolean;
      maxNewTokens?: number;
      language?: string;
      task?: "transcribe" | "translate";
      /** Seconds of real audio in the window (timestamps stop there). Default: the whole window. */
      audioSecs?: number;
    },
  ): Promise<number[]> {
    const nMels = features.length / 3000;
    if (!Number.isInteger(nMels)) throw new InferenceError("INVALID_INPUT", `features length ${features.length} is not n_mels × 3000`);
    const lang = this.languageArgs(opts.language, opts.task);
    // Prompt, as transformers.js builds it (_retrieve_init_tokens): sot, [lang, task], [notimestamps].
    const promptLen = 1 + (this.isMultilingual ? 2 : 0) + (opts.timestamps ? 0 : 1);
    let logits_processor: LogitsProcessorList | undefined;
    if (opts.timestamps) {
      const windowSecs = this.windowSamples / WHISPER_SAMPLE_RATE;
      const audioSecs = Math.min(opts.audioSecs ?? windowSecs, windowSecs);
      logits_processor = new LogitsProcessorList();
      logits_processor.push(
        new WhisperTimestampRules(
          this.tokenSpec,
          promptLen,
          this.maxInitialTimestampIndex,
          Math.ceil(audioSecs / this.tokenSpec.timePrecision - 1e-6),
        ),
      );
    }
    let out: Tensor;
    try {
      out = (await this.model.generate({
        inputs: new Tensor("float32", features, [1, nMels, 3000]),
        max_new_tokens: Math.max(1, Math.floor(opts.maxNewTokens ?? this.maxNewTokens)),
        return_timestamps: opts.timestamps,
        logits_processor,
        ...lang,
      } as any)) as Tensor;
    } catch (e) {
      throw asInferenceError(e, "INFERENCE_FAILED", `Whisper generate (${this.id})`);
    }
    const seq = (out.tolist() as bigint[][])[0].map(Number);
    const prompt = seq.slice(0, promptLen);
    if (prompt[0] !== this.tokenSpec.decoderStart || prompt.some((t) => t <= this.tokenSpec.eos || t >= this.tokenSpec.timestampBegin)) {
      throw new InferenceError("INFERENCE_FAILED", `Whisper (${this.id}): unexpected decoder prompt [${prompt}]`);
    }
    return seq.slice(promptLen);
  }

  /** Text of text tokens (special tokens skipped), trimmed. */
  decode(tokens: number[]): string {
    return this.tokenizer.decode(tokens, { skip_special_tokens: true }).trim();
  }

  /**
   * Timestamped transcript of `samples` (16 kHz mono float32). Segment times are shifted by
   * `offsetSecs` (where this audio starts in the media). Empty or sub-0.1 s audio gives [].
   */
  async transcribe(samples: Float32Array, offsetSecs = 0, opts: TranscribeOptions = {}): Promise<TranscriptSegment[]> {
    if (!(samples instanceof Float32Array)) throw new InferenceError("INVALID_INPUT", "transcribe takes a Float32Array of 16 kHz mono samples");
    this.languageArgs(opts.language, opts.task); // validate before spending time
    return seekTranscribe(samples, offsetSecs, {
      windowSamples: this.windowSamples,
      spec: this.tokenSpec,
      decodeText: (tokens) => this.decode(tokens),
      decodeWindow: async (chunk, audioSecs) =>
        this.generateTokens(await this.extractFeatures(chunk), { ...opts, timestamps: true, audioSecs }),
    });
  }

  async dispose(): Promise<void> {
    await this.model.dispose();
  }

  /** English-only models must get neither language nor task (transformers.js throws). */
  private languageArgs(language?: string, task?: string): { language?: string; task?: string } {
    if (task !== undefined && task !== "transcribe" && task !== "translate") {
      throw new InferenceError("INVALID_INPUT", `task must be "transcribe" or "translate", got "${task}"`);
    }
    if (!this.isMultilingual) {
      if (language !== undefined && !/^(en|english)$/i.test(language)) {
        throw new InferenceError("INVALID_INPUT", `Whisper model ${this.id} is English-only; language "${language}" is not available`);
      }
      if (task === "translate") {
        throw new InferenceError("INVALID_INPUT", `Whisper model ${this.id} is English-only and cannot translate`);
      }
      return {};
    }
    // transformers.js 4.3.1 has no language detection: without a language it logs a warning and uses English.
    return { language: language ?? "en", task: task ?? "transcribe" };
  }
}
