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
import {
  AutoTokenizer,
  LogitsProcessorList,
  PreTrainedModel,
  SuppressTokensAtBeginLogitsProcessor,
  Tensor,
  WhisperTimeStampLogitsProcessor,
  WhisperFeatureExtractor,
  WhisperForConditionalGeneration,
  type PreTrainedTokenizer,
} from "@huggingface/transformers";
import { InferenceError, asInferenceError } from "./errors.ts";
import {
  type Dtype,
  type ExecDevice,
  type RuntimeOptions,
  dtypeFor,
  dtypeKey,
  fingerprint,
  loadFailed,
  onnxFile,
  openModelDir,
  prepareModelLoad,
  readJson,
  requireFiles,
  sessionOptions,
} from "./model-files.ts";
import {
  WHISPER_SAMPLE_RATE,
  WhisperTimestampRules,
  seekTranscribe,
  seekTranscribeWindows,
  type AudioWindow,
  type TranscriptSegment,
  type WhisperTokenSpec,
} from "./whisper-decode.ts";

export * from "./whisper-decode.ts";

export interface WhisperLoadOptions extends RuntimeOptions {
  /** `fp32` or `q8`, or per file: `{encoder_model: "fp32", decoder_model_merged: "q8"}`. Always explicit. */
  dtype: Dtype;
  /**
   * Safety cap on generated tokens per decoding pass (≤ one 30 s window). Default 224 — half the
   * decoder context, as in OpenAI's `sample_len`; speech rarely needs more than ~150 per 30 s.
   */
  maxNewTokens?: number;
}

/** What a decoding pass takes besides the features. */
export interface GenerateOptions {
  timestamps: boolean;
  maxNewTokens?: number;
  language?: string;
  task?: "transcribe" | "translate";
}

export interface TranscribeOptions {
  /** Multilingual models only (`en`, `english`, `de`…); English-only (`.en`) models accept nothing but English. */
  language?: string;
  /** Multilingual models only: `transcribe` (default) or `translate`. */
  task?: "transcribe" | "translate";
  /** Override the model's per-pass token cap. */
  maxNewTokens?: number;
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
    const { dir, device, config } = await openModelDir(modelDir, opts, "whisper", "Whisper");
    const onnx = [onnxFile("encoder_model", opts.dtype), onnxFile("decoder_model_merged", opts.dtype)];
    const need = [
      "config.json",
      "generation_config.json",
      "preprocessor_config.json",
      "tokenizer.json",
      "tokenizer_config.json",
      ...onnx,
    ];
    await requireFiles(dir, need, `Whisper (${dtypeKey(opts.dtype)})`);

    const gen = await readJson(join(dir, "generation_config.json"));
    const pre = await readJson(join(dir, "preprocessor_config.json"));
    if (pre.sampling_rate !== WHISPER_SAMPLE_RATE) {
      throw new InferenceError(
        "MODEL_LOAD_FAILED",
        `${dir}: sampling_rate ${pre.sampling_rate}, expected ${WHISPER_SAMPLE_RATE}`,
      );
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
      throw new InferenceError(
        "MODEL_LOAD_FAILED",
        `${dir}/generation_config.json lacks eos/decoder_start/no_timestamps token ids`,
      );
    }
    const maxTarget = config.max_target_positions ?? 448;
    const maxNewTokens = Math.max(1, Math.min(Math.floor(opts.maxNewTokens ?? 224), maxTarget - 4));

    // The encoder's weights are uint8 (it has Conv layers): see loadableModelDir.
    const loadDir = await prepareModelLoad(dir, onnx, opts);
    const what = `loading Whisper ${dir} (${dtypeKey(opts.dtype)}, ${device})`;
    let model: WhisperForConditionalGeneration;
    let tokenizer: PreTrainedTokenizer;
    let featureExtractor: WhisperFeatureExtractor;
    try {
      tokenizer = await AutoTokenizer.from_pretrained(dir, { local_files_only: true });
      featureExtractor = (await WhisperFeatureExtractor.from_pretrained(dir, {
        local_files_only: true,
      })) as WhisperFeatureExtractor;
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
  async generateTokens(features: Float32Array, opts: GenerateOptions & { audioSecs?: number }): Promise<number[]> {
    const { audioSecs, ...rest } = opts;
    return (
      await this.generateTokensBatch([features], {
        ...rest,
        audioSecs: audioSecs === undefined ? undefined : [audioSecs],
      })
    )[0];
  }

  /**
   * Greedy decoding of several windows as one batch (one encoder run, one decoder run per token
   * for all rows); tokens per window, as generateTokens returns them. A row that reaches
   * end-of-text keeps emitting it while the others go on (with timestamps on; see
   * WhisperTimestampRules), and is cut at its first end-of-text here.
   */
  async generateTokensBatch(
    features: Float32Array[],
    opts: GenerateOptions & {
      /** Seconds of real audio in each window (timestamps stop there). Default: the whole window. */
      audioSecs?: number[];
    },
  ): Promise<number[][]> {
    if (features.length === 0) return [];
    const nMels = features[0].length / 3000;
    if (!Number.isInteger(nMels) || features.some((f) => f.length !== features[0].length)) {
      throw new InferenceError(
        "INVALID_INPUT",
        `features must all be n_mels × 3000 (got lengths ${features.map((f) => f.length).join(", ")})`,
      );
    }
    if (features.length > 1 && !opts.timestamps) {
      throw new InferenceError(
        "INVALID_INPUT",
        "batched decoding needs timestamps on (finished rows are held at end-of-text by the timestamp rules)",
      );
    }
    const lang = this.languageArgs(opts.language, opts.task);
    // Prompt, as transformers.js builds it (_retrieve_init_tokens): sot, [lang, task], [notimestamps].
    const promptLen = 1 + (this.isMultilingual ? 2 : 0) + (opts.timestamps ? 0 : 1);
    const logits_processor = new LogitsProcessorList();
    if (opts.timestamps) {
      const windowSecs = this.windowSamples / WHISPER_SAMPLE_RATE;
      const maxIndex = features.map((_, i) => {
        const secs = Math.min(opts.audioSecs?.[i] ?? windowSecs, windowSecs);
        return Math.ceil(secs / this.tokenSpec.timePrecision - 1e-6);
      });
      logits_processor.push(
        new WhisperTimestampRules(this.tokenSpec, promptLen, this.maxInitialTimestampIndex, maxIndex),
      );
    }
    const input = new Float32Array(features.length * features[0].length);
    features.forEach((f, i) => input.set(f, i * f.length));
    let out: Tensor;
    try {
      out = await this.generateBatch(
        new Tensor("float32", input, [features.length, nMels, 3000]),
        {
          max_new_tokens: Math.max(1, Math.floor(opts.maxNewTokens ?? this.maxNewTokens)),
          return_timestamps: opts.timestamps,
          ...lang,
        },
        logits_processor,
      );
    } catch (e) {
      throw asInferenceError(e, "INFERENCE_FAILED", `Whisper generate (${this.id})`);
    }
    return (out.tolist() as bigint[][]).map((row) => {
      const seq = row.map(Number);
      const prompt = seq.slice(0, promptLen);
      if (
        prompt[0] !== this.tokenSpec.decoderStart ||
        prompt.some((t) => t <= this.tokenSpec.eos || t >= this.tokenSpec.timestampBegin)
      ) {
        throw new InferenceError("INFERENCE_FAILED", `Whisper (${this.id}): unexpected decoder prompt [${prompt}]`);
      }
      const gen = seq.slice(promptLen);
      const end = gen.indexOf(this.tokenSpec.eos);
      return end >= 0 ? gen.slice(0, end + 1) : gen;
    });
  }

  /**
   * What WhisperForConditionalGeneration.generate does in transformers.js 4.3.1 (the version is
   * pinned), for any batch size: its own generate builds the decoder prompt as one flat token list,
   * which the encoder-output check then refuses for a batch of more than one. So: the same
   * generation config and prompt tokens, the same two processors it adds (timestamp pairing,
   * suppression at the first step) after ours, and the prompt given once per row to the base
   * generate. Batch 1 takes this path too, so the parity tests cover it.
   */
  private async generateBatch(
    inputs: Tensor,
    kwargs: Record<string, unknown>,
    processors: LogitsProcessorList,
  ): Promise<Tensor> {
    const whisper = this.model as unknown as {
      _prepare_generation_config(config: unknown, kwargs: Record<string, unknown>): Record<string, any>;
      _retrieve_init_tokens(config: unknown): number[];
    };
    const generation_config = whisper._prepare_generation_config(null, kwargs);
    const init = whisper._retrieve_init_tokens(generation_config);
    if (generation_config.return_timestamps)
      processors.push(new WhisperTimeStampLogitsProcessor(generation_config as any, init));
    if (generation_config.begin_suppress_tokens) {
      processors.push(new SuppressTokensAtBeginLogitsProcessor(generation_config.begin_suppress_tokens, init.length));
    }
    const decoder_input_ids = Array.from({ length: inputs.dims[0] }, () => init);
    return (await PreTrainedModel.prototype.generate.call(this.model, {
      inputs,
      generation_config,
      logits_processor: processors,
      decoder_input_ids,
      ...kwargs,
    } as any)) as Tensor;
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
    if (!(samples instanceof Float32Array))
      throw new InferenceError("INVALID_INPUT", "transcribe takes a Float32Array of 16 kHz mono samples");
    this.languageArgs(opts.language, opts.task); // validate before spending time
    return seekTranscribe(samples, offsetSecs, {
      windowSamples: this.windowSamples,
      spec: this.tokenSpec,
      decodeText: (tokens) => this.decode(tokens),
      decodeWindow: async (chunk, audioSecs) =>
        this.generateTokens(await this.extractFeatures(chunk), { ...opts, timestamps: true, audioSecs }),
    });
  }

  /**
   * Timestamped transcripts of independent windows (consecutive ≤ 30 s pieces of one soundtrack),
   * decoded `maxBatch` at a time (default 4); segments of all windows, in window order.
   */
  async transcribeWindows(
    windows: AudioWindow[],
    opts: TranscribeOptions & { maxBatch?: number } = {},
  ): Promise<TranscriptSegment[]> {
    if (!Array.isArray(windows) || windows.some((w) => !(w?.samples instanceof Float32Array))) {
      throw new InferenceError("INVALID_INPUT", "transcribeWindows takes [{samples: Float32Array, offsetSecs}]");
    }
    const tooLong = windows.find((w) => w.samples.length > this.windowSamples);
    if (tooLong)
      throw new InferenceError(
        "INVALID_INPUT",
        `a window holds at most ${this.windowSamples} samples (30 s), got ${tooLong.samples.length}`,
      );
    this.languageArgs(opts.language, opts.task); // validate before spending time
    const perWindow = await seekTranscribeWindows(windows, {
      windowSamples: this.windowSamples,
      spec: this.tokenSpec,
      maxBatch: opts.maxBatch ?? 4,
      decodeText: (tokens) => this.decode(tokens),
      decodeWindows: async (chunks, audioSecs) =>
        this.generateTokensBatch(await Promise.all(chunks.map((c) => this.extractFeatures(c))), {
          ...opts,
          timestamps: true,
          audioSecs,
        }),
    });
    return perWindow.flat();
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
        throw new InferenceError(
          "INVALID_INPUT",
          `Whisper model ${this.id} is English-only; language "${language}" is not available`,
        );
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
