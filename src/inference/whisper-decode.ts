/**
 * Whisper decoding logic that does not need the model: the timestamp rules applied to logits,
 * turning generated tokens into timestamped segments, recognising decoding loops, and the seek
 * loop that walks audio in ≤ 30 s passes — for one stream, or for several independent 30 s
 * windows advanced in lockstep so each pass decodes them as one batch.
 */
import { deflateSync } from "node:zlib";
import { LogitsProcessor, type Tensor } from "@huggingface/transformers";
import { InferenceError } from "./errors.ts";

export const WHISPER_SAMPLE_RATE = 16_000;

export interface TranscriptSegment {
  /** Seconds from the start of the media (offsetSecs already added). */
  start: number;
  end: number;
  text: string;
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
 * A row that has ended keeps producing end-of-text: transformers.js stops a batch only when every
 * row's *last* token is end-of-text, so without this a finished window would decode on, to the
 * cap, beside a longer one. Runs before the transformers.js processor.
 */
export class WhisperTimestampRules extends LogitsProcessor {
  constructor(
    private readonly spec: WhisperTokenSpec,
    /** Prompt length: generated tokens start at this index. */
    private readonly beginIndex: number,
    private readonly maxInitialIndex: number,
    /** Last allowed timestamp index (audio length / time precision, rounded up), per row or for all. */
    private readonly maxIndex: number | readonly number[],
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
      if (seq.includes(this.spec.eos)) {
        forceEos(row, this.spec.eos);
        continue;
      }
      const maxIndex = typeof this.maxIndex === "number" ? this.maxIndex : (this.maxIndex[i] ?? Infinity);
      const lastAllowed = tb + (seq.length === 0 ? Math.min(this.maxInitialIndex, maxIndex) : maxIndex);
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
        forceEos(row, this.spec.eos);
        continue;
      }
      if (lowest > tb) row.subarray(tb, lowest).fill(-Infinity);
      if (lastAllowed + 1 < row.length) row.subarray(lastAllowed + 1).fill(-Infinity);
    }
    return logits;
  }
}

function forceEos(row: Float32Array, eos: number): void {
  const v = row[eos];
  row.fill(-Infinity);
  row[eos] = Number.isFinite(v) ? v : 0;
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

export interface BatchSeekDeps extends Omit<SeekDeps, "decodeWindow"> {
  /** Decodes several chunks (each ≤ windowSamples) as one batch; tokens per chunk, prompt removed. */
  decodeWindows: (chunks: Float32Array[], audioSecs: number[]) => Promise<number[][]>;
  /** Most chunks per decodeWindows call. */
  maxBatch: number;
}

export interface AudioWindow {
  samples: Float32Array;
  /** Where these samples start in the media, seconds. */
  offsetSecs: number;
}

/**
 * Whisper's seek loop over audio of any length. Each pass decodes the next ≤ 30 s; if the pass was
 * cut off (no end-of-text) in the middle of a segment after complete ones, the next pass resumes at
 * the last complete segment's end so the unfinished words get decoded again with the audio that
 * follows — provided that moves at least 1 s and leaves at least 1 s; otherwise the tail is kept and
 * the whole window consumed. Degenerate and empty segments are dropped, and so is a whole pass
 * whose text is one loop; times are shifted by `offsetSecs`.
 */
export async function seekTranscribe(
  samples: Float32Array,
  offsetSecs: number,
  deps: SeekDeps,
): Promise<TranscriptSegment[]> {
  const [segments] = await seekTranscribeWindows([{ samples, offsetSecs }], {
    ...deps,
    maxBatch: 1,
    decodeWindows: async (chunks, secs) => [await deps.decodeWindow(chunks[0], secs[0])],
  });
  return segments;
}

/**
 * The seek loop for several independent streams (typically consecutive 30 s windows of one
 * soundtrack), advanced in lockstep: each round decodes the next pass of up to `maxBatch` streams
 * that still have audio, as one batch. A decoder step costs little more for a few rows than for
 * one (4.5 ms for 1 row, 6.4 ms for 2 with Whisper tiny q8 on 2 cores), so this is where batching
 * pays. Returns each stream's segments, in input order.
 */
export async function seekTranscribeWindows(
  windows: AudioWindow[],
  deps: BatchSeekDeps,
): Promise<TranscriptSegment[][]> {
  for (const w of windows) {
    if (!Number.isFinite(w.offsetSecs) || w.offsetSecs < 0)
      throw new InferenceError("INVALID_INPUT", `offsetSecs must be ≥ 0, got ${w.offsetSecs}`);
  }
  const minSamples = WHISPER_SAMPLE_RATE / 10;
  const lanes = windows.map((w) => ({ ...w, seek: 0, out: [] as TranscriptSegment[] }));
  const maxBatch = Math.max(1, Math.floor(deps.maxBatch));
  for (;;) {
    const round = lanes.filter((l) => l.samples.length - l.seek >= minSamples).slice(0, maxBatch);
    if (round.length === 0) break;
    const chunks = round.map((l) => l.samples.subarray(l.seek, l.seek + deps.windowSamples));
    const secs = chunks.map((c) => c.length / WHISPER_SAMPLE_RATE);
    const tokens = await deps.decodeWindows(chunks, secs);
    if (tokens.length !== round.length)
      throw new InferenceError(
        "INFERENCE_FAILED",
        `decoder returned ${tokens.length} results for ${round.length} windows`,
      );
    round.forEach((lane, i) => {
      const { segments, advanceSecs } = readPass(
        tokens[i],
        secs[i],
        lane.offsetSecs + lane.seek / WHISPER_SAMPLE_RATE,
        deps,
      );
      lane.out.push(...segments);
      lane.seek += Math.max(1, Math.round(advanceSecs * WHISPER_SAMPLE_RATE));
    });
  }
  return lanes.map((l) => l.out);
}

/** One pass's segments (shifted to `baseSecs`) and how far the stream advances. */
function readPass(tokens: number[], chunkSecs: number, baseSecs: number, deps: Pick<SeekDeps, "spec" | "decodeText">) {
  const { segments, tail, lastEnd, endedWithEos } = parseTimestampedTokens(tokens, deps.spec, chunkSecs);
  let advanceSecs = chunkSecs;
  const keep = [...segments];
  if (tail && !endedWithEos && segments.length > 0 && lastEnd >= 1 && chunkSecs - lastEnd >= 1) {
    advanceSecs = lastEnd;
  } else if (tail) {
    keep.push(tail);
  }
  const pass: TranscriptSegment[] = [];
  for (const s of keep) {
    const text = deps.decodeText(s.tokens);
    if (text.length === 0 || isDegenerate(s.tokens, text)) continue;
    pass.push({ start: round3(baseSecs + s.start), end: round3(baseSecs + Math.max(s.end, s.start)), text });
  }
  // A loop can also be spread over many short segments ("Thank you." × 20): judge the pass as a whole.
  const loop = isDegenerate(
    keep.flatMap((s) => s.tokens),
    pass.map((s) => s.text).join(" "),
  );
  return { segments: loop ? [] : pass, advanceSecs };
}
