/**
 * Whisper parity against test/fixtures/models/tiny-random-whisper/reference.json (PyTorch greedy on
 * the same random weights), timestamp rules, segment parsing and the seek loop.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { Tensor } from "@huggingface/transformers";
import {
  WhisperModel,
  WhisperTimestampRules,
  isDegenerate,
  parseTimestampedTokens,
  seekTranscribe,
  seekTranscribeWindows,
  type WhisperTokenSpec,
} from "../../src/inference/whisper.ts";
import { TESTDATA, WHISPER_DIR, readWav16, reference, syntheticWhisperFeatures } from "./helpers.ts";

const ref = reference(WHISPER_DIR);
const FEATURES_MAX_ABS = 1e-3; // reference.json: "suggest < 1e-3" (observed 1.3e-5)
const fox = readWav16(`${TESTDATA}/fox.wav`);

let fp32: WhisperModel;
let q8: WhisperModel;

beforeAll(async () => {
  [fp32, q8] = await Promise.all([
    WhisperModel.load(WHISPER_DIR, { dtype: "fp32", intraOpThreads: 1 }),
    WhisperModel.load(WHISPER_DIR, { dtype: { encoder_model: "q8", decoder_model_merged: "q8" }, intraOpThreads: 1 }),
  ]);
});

afterAll(async () => {
  await Promise.all([fp32?.dispose(), q8?.dispose()]);
});

const SPEC: WhisperTokenSpec = {
  eos: 50256,
  decoderStart: 50257,
  noTimestamps: 50362,
  timestampBegin: 50363,
  timePrecision: 0.02,
};
const ts = (secs: number) => SPEC.timestampBegin + Math.round(secs / SPEC.timePrecision);

describe("Whisper parity", () => {
  it("reads the fixture audio and the model's token layout", () => {
    expect(fox.sampleRate).toBe(16000);
    expect(fox.samples.length).toBe(ref.audio.audio_samples);
    expect(fp32.tokenSpec).toEqual(SPEC);
    expect(fp32.isMultilingual).toBe(false);
    expect(fp32.id).toMatch(/^tiny-random-whisper@[0-9a-f]{12}$/);
    expect(q8.id).not.toBe(fp32.id);
  });

  it("log-mel features match the reference extractor", async () => {
    const f = await fp32.extractFeatures(fox.samples);
    const { dims, every_100th_frame: sample, mean, min, max } = ref.audio.features;
    expect(f.length).toBe(dims[1] * dims[2]);
    let worst = 0;
    for (let m = 0; m < 80; m++) {
      sample.frames.forEach((t: number, j: number) => {
        worst = Math.max(worst, Math.abs(f[m * 3000 + t] - sample.values_mel_major[m * sample.frames.length + j]));
      });
    }
    expect(worst).toBeLessThan(FEATURES_MAX_ABS);
    expect(f.reduce((a, b) => a + b, 0) / f.length).toBeCloseTo(mean, 3);
    expect(Math.min(...f)).toBeCloseTo(min, 3);
    expect(Math.max(...f)).toBeCloseTo(max, 3);
  });

  it("fp32 greedy tokens are identical to PyTorch (speech and synthetic features)", async () => {
    const n = ref.max_new_tokens;
    const speech = await fp32.generateTokens(await fp32.extractFeatures(fox.samples), {
      timestamps: false,
      maxNewTokens: n,
    });
    expect(speech).toEqual(ref.audio.tokens_fp32);
    expect(fp32.decode(speech)).toBe(ref.audio.text_fp32.trim());
    const synthetic = await fp32.generateTokens(syntheticWhisperFeatures(), { timestamps: false, maxNewTokens: n });
    expect(synthetic).toEqual(ref.synthetic_features.tokens_fp32);
  });

  /*
   * Greedy decoding on random weights is chaotic: near-ties between tokens are common, and q8's
   * per-tensor activation quantisation moves logits by up to ~0.15 between CPU kinds, so one flip
   * changes every later token. Measured (ONNX Runtime 1.30, 1 thread), q8 against
   * onnxruntime-python's q8 tokens (reference.json):
   *   AVX-512 + VNNI (EPYC): all 20 tokens equal, speech and synthetic;
   *   AVX2 only (qemu -cpu Haswell / EPYC-Rome): speech equal only at [0] (then 14472 for 42808),
   *   synthetic equal at [0..4] (35717 → 34509 at [5]).
   * What holds on both, and why it is stable rather than lucky: the first step's top token leads
   * the runner-up by 0.27–0.30 (speech) and ≥ 1.0 (synthetic, first three steps) in logits on both
   * kinds, far beyond the ~0.15 the kernels move them (0.27–0.30 and 0.99–1.89 measured). So: speech [0], synthetic [0..2] — equal to
   * the reference's q8 tokens and to this machine's own fp32 ones — and the count (no early
   * end-of-text on either kind).
   */
  it("q8 greedy tokens agree with onnxruntime-python's q8 and with fp32 where decoding is stable on every CPU", async () => {
    const n = ref.max_new_tokens;
    const features = await q8.extractFeatures(fox.samples);
    const speech = await q8.generateTokens(features, { timestamps: false, maxNewTokens: n });
    const synthetic = await q8.generateTokens(syntheticWhisperFeatures(), { timestamps: false, maxNewTokens: n });
    expect(speech.length).toBe(n);
    expect(synthetic.length).toBe(n);
    expect(speech.slice(0, 1)).toEqual(ref.audio.tokens_q8_ort.slice(0, 1));
    expect(synthetic.slice(0, 3)).toEqual(ref.synthetic_features.tokens_q8_ort.slice(0, 3));
    const fp32Speech = await fp32.generateTokens(features, { timestamps: false, maxNewTokens: 1 });
    const fp32Synthetic = await fp32.generateTokens(syntheticWhisperFeatures(), { timestamps: false, maxNewTokens: 3 });
    expect(speech.slice(0, 1)).toEqual(fp32Speech);
    expect(synthetic.slice(0, 3)).toEqual(fp32Synthetic);
  });

  it("timestamp decoding obeys the rules: first ≤ 0.02 s, never backwards, never past the audio", async () => {
    const audioSecs = fox.samples.length / 16000;
    const tokens = await fp32.generateTokens(await fp32.extractFeatures(fox.samples), {
      timestamps: true,
      audioSecs,
      maxNewTokens: 60,
    });
    expect(tokens.length).toBeGreaterThan(0);
    expect(tokens[0]).toBeGreaterThanOrEqual(SPEC.timestampBegin);
    expect(tokens[0]).toBeLessThanOrEqual(SPEC.timestampBegin + 1);
    const stamps = tokens.filter((t) => t >= SPEC.timestampBegin);
    for (let i = 1; i < stamps.length; i++) expect(stamps[i]).toBeGreaterThanOrEqual(stamps[i - 1]);
    for (const s of stamps)
      expect((s - SPEC.timestampBegin) * SPEC.timePrecision).toBeLessThanOrEqual(audioSecs + SPEC.timePrecision);
  });
});

describe("Whisper transcribe", () => {
  it("drops the degenerate output of random weights instead of returning gibberish", async () => {
    const segments = await fp32.transcribe(fox.samples, 12.5);
    expect(segments).toEqual([]);
  });

  it("walks audio longer than 30 s in windows and keeps every segment inside the audio", async () => {
    const long = new Float32Array(16000 * 33);
    for (let at = 0; at + fox.samples.length <= long.length; at += fox.samples.length + 8000) long.set(fox.samples, at);
    const spy = vi.spyOn(fp32, "generateTokens");
    try {
      const segments = await fp32.transcribe(long, 100, { maxNewTokens: 60 });
      const windows = spy.mock.calls.map(([, o]) => o.audioSecs!);
      expect(windows.length).toBeGreaterThanOrEqual(2);
      expect(windows[0]).toBe(30);
      expect(windows.at(-1)!).toBeLessThan(30);
      expect(spy.mock.calls.every(([, o]) => o.timestamps && o.maxNewTokens === 60)).toBe(true);
      expect(segments.length).toBeGreaterThan(0);
      segments.forEach((s, i) => {
        expect(s.start).toBeGreaterThanOrEqual(i === 0 ? 100 : segments[i - 1].end);
        expect(s.end).toBeLessThanOrEqual(133);
        expect(s.end).toBeGreaterThanOrEqual(s.start);
        expect(s.text.length).toBeGreaterThan(0);
      });
    } finally {
      spy.mockRestore();
    }
  });

  it("decodes a batch of windows exactly as it decodes each alone (fp32)", async () => {
    const quieter = fox.samples.map((x) => x * 0.4);
    const shifted = new Float32Array(16000 * 5);
    shifted.set(fox.samples, 16000);
    const inputs = [fox.samples, quieter, shifted];
    const features = await Promise.all(inputs.map((x) => fp32.extractFeatures(x)));
    const audioSecs = inputs.map((x) => x.length / 16000);
    const batch = await fp32.generateTokensBatch(features, { timestamps: true, maxNewTokens: 40, audioSecs });
    const alone = [];
    for (let i = 0; i < inputs.length; i++)
      alone.push(
        await fp32.generateTokens(features[i], { timestamps: true, maxNewTokens: 40, audioSecs: audioSecs[i] }),
      );
    expect(batch).toEqual(alone);
    expect(batch.every((t) => t.length > 0 && t.length <= 40)).toBe(true);
  });

  it("transcribeWindows: maxBatch windows per pass, each window's segments in order at its offset", async () => {
    const windows = [0, 30, 60].map((offsetSecs, i) => ({
      samples: fox.samples.map((x) => x * (1 - i * 0.2)),
      offsetSecs,
    }));
    const spy = vi.spyOn(fp32, "generateTokensBatch");
    try {
      const got = await fp32.transcribeWindows(windows, { maxBatch: 2, maxNewTokens: 30 });
      expect(spy.mock.calls.map(([f]) => f.length)).toEqual([2, 1]);
      const want = [];
      for (const w of windows) want.push(...(await fp32.transcribe(w.samples, w.offsetSecs, { maxNewTokens: 30 })));
      expect(got).toEqual(want);
    } finally {
      spy.mockRestore();
    }
    await expect(
      fp32.transcribeWindows([{ samples: new Float32Array(16000 * 31), offsetSecs: 0 }]),
    ).rejects.toMatchObject({ code: "INVALID_INPUT" });
    await expect(
      fp32.generateTokensBatch([new Float32Array(80 * 3000), new Float32Array(80 * 3000)], { timestamps: false }),
    ).rejects.toMatchObject({ code: "INVALID_INPUT" });
  });

  it("English-only models take no language or task (and say so clearly)", async () => {
    await expect(fp32.transcribe(fox.samples, 0, { language: "de" })).rejects.toMatchObject({
      code: "INVALID_INPUT",
      message: expect.stringContaining("English-only"),
    });
    await expect(fp32.transcribe(fox.samples, 0, { task: "translate" })).rejects.toMatchObject({
      code: "INVALID_INPUT",
    });
    // "en" is what the model does anyway: accepted, and not passed on (transformers.js would throw).
    const tokens = await fp32.generateTokens(await fp32.extractFeatures(fox.samples), {
      timestamps: false,
      maxNewTokens: 3,
      language: "en",
    });
    expect(tokens).toEqual(ref.audio.tokens_fp32.slice(0, 3));
  });

  it("rejects bad input and gives [] for (almost) empty audio", async () => {
    await expect(fp32.transcribe(new Float32Array(1000), 0)).resolves.toEqual([]);
    await expect(fp32.transcribe(fox.samples, -1)).rejects.toMatchObject({ code: "INVALID_INPUT" });
    await expect(fp32.transcribe([1, 2, 3] as any, 0)).rejects.toMatchObject({ code: "INVALID_INPUT" });
  });

  it("a missing install is MODEL_NOT_INSTALLED", async () => {
    await expect(WhisperModel.load("/nonexistent/whisper", { dtype: "q8" })).rejects.toMatchObject({
      code: "MODEL_NOT_INSTALLED",
    });
  });
});

describe("timestamp parsing and degenerate output", () => {
  it("turns <|a|> text <|b|> pairs into segments and keeps an unfinished tail apart", () => {
    const r = parseTimestampedTokens([ts(0), 10, 11, ts(2.4), ts(2.4), 12, ts(5), ts(5), 13, 14], SPEC, 30);
    expect(r.segments).toEqual([
      { start: 0, end: 2.4, tokens: [10, 11] },
      { start: 2.4, end: 5, tokens: [12] },
    ]);
    expect(r.tail).toEqual({ start: 5, end: 30, tokens: [13, 14] });
    expect(r.lastEnd).toBe(5);
    expect(r.endedWithEos).toBe(false);
  });

  it("stops at end-of-text, drops segments after the audio and clamps ends to it", () => {
    const r = parseTimestampedTokens([ts(0), 10, ts(2), ts(2), 11, ts(4), ts(4), 12, ts(6), SPEC.eos, 99], SPEC, 3.5);
    expect(r.segments).toEqual([
      { start: 0, end: 2, tokens: [10] },
      { start: 2, end: 3.5, tokens: [11] },
    ]);
    expect(r.tail).toBeNull();
    expect(r.endedWithEos).toBe(true);
  });

  it("flags one token repeated (bench weights), loops that compress too well, not varied text", () => {
    expect(isDegenerate(Array(20).fill(32596), " influencing".repeat(20))).toBe(true);
    expect(isDegenerate(ref.synthetic_features.tokens_fp32, ref.synthetic_features.text_fp32)).toBe(true);
    expect(isDegenerate(ref.audio.tokens_fp32, ref.audio.text_fp32)).toBe(false);
    expect(isDegenerate([1, 2, 3, 4], "Thank you. Thank you. Thank you. Thank you. Thank you. Thank you.")).toBe(true);
    expect(
      isDegenerate([1, 2, 3, 4, 5, 6, 7, 8], "The quick brown fox jumps over the lazy dog near the river bank."),
    ).toBe(false);
  });
});

describe("WhisperTimestampRules", () => {
  const V = 51864;
  const run = (generated: number[], maxIndex: number) => {
    const logits = new Tensor("float32", new Float32Array(V).fill(1), [1, V]);
    new WhisperTimestampRules(SPEC, 1, 1, maxIndex)._call([[50257n, ...generated.map(BigInt)]], logits);
    const d = logits.data as Float32Array;
    const allowedTs: number[] = [];
    for (let t = SPEC.timestampBegin; t < V; t++) if (d[t] > -Infinity) allowedTs.push(t - SPEC.timestampBegin);
    return { d, allowedTs };
  };

  it("holds a row that has ended at end-of-text, and applies each row's own audio limit", () => {
    const logits = new Tensor("float32", new Float32Array(2 * V).fill(1), [2, V]);
    new WhisperTimestampRules(SPEC, 1, 1, [1500, 140])._call(
      [
        [50257n, ...[ts(0), 10, SPEC.eos, 11].map(BigInt)],
        [50257n, ...[ts(0), 10].map(BigInt)],
      ],
      logits,
    );
    const d = logits.data as Float32Array;
    const finite = (row: number) =>
      [...d.subarray(row * V, (row + 1) * V).keys()].filter((i) => d[row * V + i] > -Infinity);
    expect(finite(0)).toEqual([SPEC.eos]);
    expect(
      finite(1)
        .filter((t) => t >= SPEC.timestampBegin)
        .at(-1),
    ).toBe(SPEC.timestampBegin + 140);
  });

  it("caps the first timestamp at max_initial_timestamp_index", () => {
    expect(run([], 1500).allowedTs).toEqual([0, 1]);
  });

  it("never lets timestamps go backwards (a closing one may repeat, otherwise strictly later)", () => {
    expect(run([ts(0), 10, ts(2)], 1500).allowedTs[0]).toBe(100); // after a closing <|2.00|>: the pair may repeat it
    expect(run([ts(0), 10, ts(2), ts(2)], 1500).allowedTs[0]).toBe(101);
    expect(run([ts(0), 10, ts(2), ts(2), 11], 1500).allowedTs[0]).toBe(101);
  });

  it("allows no timestamp past the audio, and ends decoding once the audio is used up", () => {
    expect(run([ts(0), 10], 140).allowedTs.at(-1)).toBe(140);
    const { d } = run([ts(0), 10, ts(2.8), ts(2.8)], 140);
    const finite = [...d.keys()].filter((i) => d[i] > -Infinity);
    expect(finite).toEqual([SPEC.eos]);
  });
});

describe("seek loop", () => {
  const SR = 16000;
  const script = (replies: number[][]) => {
    const calls: { startSecs: number; secs: number }[] = [];
    let base: Float32Array;
    return {
      calls,
      run: async (samples: Float32Array, offset = 0) => {
        base = samples;
        let i = 0;
        return seekTranscribe(samples, offset, {
          windowSamples: 30 * SR,
          spec: SPEC,
          decodeText: (t) => t.map((x) => `w${x}`).join(" "),
          decodeWindow: async (chunk, secs) => {
            calls.push({ startSecs: chunk.byteOffset / 4 / SR, secs });
            expect(chunk.buffer).toBe(base.buffer);
            return replies[i++] ?? [SPEC.eos];
          },
        });
      },
    };
  };

  it("resumes at the last complete segment when a pass is cut off, and shifts by offsetSecs", async () => {
    const s = script([
      [ts(0), 1, 2, ts(5), ts(5), 3, ts(10), ts(10), 4, 5], // cut off (no eos) after 10 s
      [ts(0), 6, 7, ts(4), SPEC.eos], // from 10 s
      [ts(0), 8, ts(20), SPEC.eos], // from 40 s (25 s left)
    ]);
    const segments = await s.run(new Float32Array(65 * SR), 100);
    expect(s.calls).toEqual([
      { startSecs: 0, secs: 30 },
      { startSecs: 10, secs: 30 },
      { startSecs: 40, secs: 25 },
    ]);
    expect(segments).toEqual([
      { start: 100, end: 105, text: "w1 w2" },
      { start: 105, end: 110, text: "w3" },
      { start: 110, end: 114, text: "w6 w7" },
      { start: 140, end: 160, text: "w8" },
    ]);
  });

  it("keeps the tail and moves on when resuming would not make progress or leave real audio", async () => {
    const s = script([[ts(0), 1, ts(0.5), ts(0.5), 2, 3]]);
    const segments = await s.run(new Float32Array(12 * SR));
    expect(s.calls.length).toBe(1);
    expect(segments).toEqual([
      { start: 0, end: 0.5, text: "w1" },
      { start: 0.5, end: 12, text: "w2 w3" },
    ]);
    const late = script([[ts(0), 1, ts(29.5), ts(29.5), 2]]);
    expect(await late.run(new Float32Array(30 * SR))).toEqual([
      { start: 0, end: 29.5, text: "w1" },
      { start: 29.5, end: 30, text: "w2" },
    ]);
    expect(late.calls.length).toBe(1);
  });

  it("drops a pass whose segments together are one loop", async () => {
    const loop: number[] = [];
    for (let i = 0; i < 12; i++) loop.push(ts(i * 2), 5, 6, 7, ts(i * 2 + 1));
    const s = script([[...loop, SPEC.eos]]);
    const fine = script([[ts(0), 1, 2, ts(1), ts(1), 3, 4, ts(2), SPEC.eos]]);
    expect(await s.run(new Float32Array(30 * SR))).toEqual([]);
    expect(await fine.run(new Float32Array(30 * SR))).toEqual([
      { start: 0, end: 1, text: "w1 w2" },
      { start: 1, end: 2, text: "w3 w4" },
    ]);
  });

  it("advances independent windows in lockstep, at most maxBatch per pass", async () => {
    const calls: { startSecs: number; secs: number; offset: number }[][] = [];
    const lanes = [0, 30, 60].map((offsetSecs) => ({ samples: new Float32Array(30 * SR), offsetSecs }));
    const replies = new Map<string, number[]>([
      ["0@0", [ts(0), 1, ts(10), ts(10), 2, 3]], // cut off after a complete segment: resume at 10 s
      ["30@0", [ts(0), 4, ts(5), SPEC.eos]],
      ["0@10", [ts(0), 5, ts(20), SPEC.eos]],
      ["60@0", [ts(1), 6, ts(2), SPEC.eos]],
    ]);
    const out = await seekTranscribeWindows(lanes, {
      windowSamples: 30 * SR,
      spec: SPEC,
      maxBatch: 2,
      decodeText: (t) => t.map((x) => `w${x}`).join(" "),
      decodeWindows: async (chunks, secs) => {
        const round = chunks.map((c, i) => {
          const lane = lanes.find((l) => l.samples.buffer === c.buffer)!;
          return { startSecs: c.byteOffset / 4 / SR, secs: secs[i], offset: lane.offsetSecs };
        });
        calls.push(round);
        return round.map((r) => replies.get(`${r.offset}@${r.startSecs}`)!);
      },
    });
    expect(calls).toEqual([
      [
        { startSecs: 0, secs: 30, offset: 0 },
        { startSecs: 0, secs: 30, offset: 30 },
      ],
      [
        { startSecs: 10, secs: 20, offset: 0 },
        { startSecs: 0, secs: 30, offset: 60 },
      ],
    ]);
    expect(out).toEqual([
      [
        { start: 0, end: 10, text: "w1" },
        { start: 10, end: 30, text: "w5" },
      ],
      [{ start: 30, end: 35, text: "w4" }],
      [{ start: 61, end: 62, text: "w6" }],
    ]);
  });

  it("drops degenerate segments and ignores a sub-0.1 s remainder", async () => {
    const s = script([[ts(0), ...Array(30).fill(7), ts(29), SPEC.eos]]);
    expect(await s.run(new Float32Array(30 * SR + 800))).toEqual([]);
    expect(s.calls.length).toBe(1);
  });
});
