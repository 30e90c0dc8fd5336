/**
 * uint8 → int8 MatMulInteger weights (src/inference/signed-weights.ts, derived-model.ts): the
 * rewrite at the byte level, the derived model folder, the CPU policy, and the outputs of the real
 * CLIP and Whisper loaders with and without it.
 */
import {
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  utimesSync,
} from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ClipModel } from "../../src/inference/clip.ts";
import { pruneDerivedModels, signedWeightsModelDir } from "../../src/inference/derived-model.ts";
import { concatBytes } from "../../src/core/bytes.ts";
import {
  ONNX_DTYPE,
  ONNX_FIELD as F,
  ProtoError,
  fieldString,
  fieldVarint,
  fieldVarints,
  fields,
} from "../../src/inference/onnx-proto.ts";
import { cpuHasVnni, signMatMulIntegerWeights, signedWeightsDecision } from "../../src/inference/signed-weights.ts";
import { WhisperModel } from "../../src/inference/whisper.ts";
import { CLIP_DIR, WHISPER_DIR, clipFrameLikeTransformersJs, cosine, TESTDATA, readWav16 } from "./helpers.ts";
import { tempDir } from "../helpers/temp.ts";

const tmp = tempDir("vsearch-signed-");

const HOST_VNNI = cpuHasVnni(existsSync("/proc/cpuinfo") ? readFileSync("/proc/cpuinfo", "utf8") : null);

interface Tensor {
  dataType: number;
  /** Element values as stored (raw bytes or int32_data). */
  values: number[];
  bytes: Uint8Array;
}

/** name → tensor, and the MatMulInteger (B, b_zero_point) pairs of the top-level graph. */
function readModel(buf: Uint8Array) {
  const tensors = new Map<string, Tensor>();
  const matmuls: [string, string][] = [];
  const graph = [...fields(buf)].find((f) => f.field === F.modelGraph)!;
  for (const f of fields(buf, graph.valueStart, graph.end)) {
    if (f.field === F.graphInitializer) {
      let name = "";
      let dataType = 0;
      let values: number[] = [];
      for (const t of fields(buf, f.valueStart, f.end)) {
        if (t.field === F.tensorName) name = fieldString(buf, t);
        if (t.field === F.tensorDataType) dataType = fieldVarint(buf, t);
        if (t.field === F.tensorRawData) values = [...buf.subarray(t.valueStart, t.end)];
        if (t.field === F.tensorInt32Data) values.push(...fieldVarints(buf, t));
      }
      tensors.set(name, { dataType, values, bytes: buf.subarray(f.start, f.end) });
    } else if (f.field === F.graphNode) {
      const inputs: string[] = [];
      let op = "";
      for (const n of fields(buf, f.valueStart, f.end)) {
        if (n.field === F.nodeInput) inputs.push(fieldString(buf, n));
        if (n.field === F.nodeOpType) op = fieldString(buf, n);
      }
      if (op === "MatMulInteger") matmuls.push([inputs[1], inputs[3]]);
    }
  }
  return { tensors, matmuls };
}

const asInt8 = (v: number) => (v > 127 ? v - 256 : v);

describe("signMatMulIntegerWeights", () => {
  const vision = new Uint8Array(readFileSync(join(CLIP_DIR, "onnx/vision_model_quantized.onnx")));

  it("rewrites every uint8 MatMulInteger weight and zero point as value − 128 in int8, and nothing else", () => {
    const before = readModel(vision);
    const r = signMatMulIntegerWeights(vision.slice()); // it rewrites its input in place
    const after = readModel(concatBytes(r.parts));
    const targets = new Set(before.matmuls.flat());
    expect(before.matmuls.length).toBeGreaterThan(0);
    expect(r.nodes).toBe(before.matmuls.length);
    expect(r.converted).toBe(targets.size);
    expect(after.tensors.size).toBe(before.tensors.size);
    for (const [name, t] of before.tensors) {
      const got = after.tensors.get(name)!;
      if (targets.has(name)) {
        expect(t.dataType).toBe(ONNX_DTYPE.uint8);
        expect(got.dataType).toBe(ONNX_DTYPE.int8);
        expect(got.values.map(asInt8)).toEqual(t.values.map((v) => v - 128));
      } else {
        expect(Buffer.from(got.bytes).equals(Buffer.from(t.bytes))).toBe(true);
      }
    }
  });

  it("leaves a model alone whose uint8 tensors feed other ops (Whisper's embedding Gather/Dequantize)", () => {
    const decoder = new Uint8Array(readFileSync(join(WHISPER_DIR, "onnx/decoder_model_merged_quantized.onnx")));
    const u8 = [...readModel(decoder).tensors.values()].filter((t) => t.dataType === ONNX_DTYPE.uint8);
    expect(u8.length).toBeGreaterThan(0);
    const copy = decoder.slice();
    const r = signMatMulIntegerWeights(copy);
    expect(r.converted).toBe(0);
    expect(r.parts).toEqual([copy]);
    expect(Buffer.from(copy).equals(Buffer.from(decoder))).toBe(true);
  });

  it("throws ProtoError on bytes that are not a model", () => {
    expect(() => signMatMulIntegerWeights(new Uint8Array([0x3a, 0xff, 0xff, 0xff]))).toThrow(ProtoError);
    expect(() => signMatMulIntegerWeights(new TextEncoder().encode("not an onnx model at all"))).toThrow(ProtoError);
  });
});

describe("policy", () => {
  it("needs VNNI in /proc/cpuinfo flags, and is off when configured off", () => {
    expect(cpuHasVnni("processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f avx512_vnni\n")).toBe(true);
    expect(cpuHasVnni("flags\t\t: fpu sse2 avx2 avx_vnni\n")).toBe(true);
    expect(cpuHasVnni("flags\t\t: fpu sse2 avx2 avx512f avx512bw\n")).toBe(false);
    expect(cpuHasVnni("Features\t: fp asimd asimddp\n")).toBe(false);
    expect(cpuHasVnni(null)).toBe(false);
    expect(signedWeightsDecision("auto", "flags : avx512_vnni").enabled).toBe(true);
    expect(signedWeightsDecision("off", "flags : avx512_vnni")).toMatchObject({
      enabled: false,
      reason: expect.stringContaining("off"),
    });
    expect(signedWeightsDecision("auto", "flags : avx2")).toMatchObject({
      enabled: false,
      reason: expect.stringContaining("no VNNI"),
    });
  });
});

describe("derived model folder", () => {
  it("mirrors the installed folder with the converted file, reuses it, and rebuilds when the source changes", async () => {
    const src = join(tmp, "clip-src");
    cpSync(CLIP_DIR, src, { recursive: true });
    const root = join(tmp, "derived");
    const files = ["onnx/vision_model_quantized.onnx", "onnx/text_model_quantized.onnx"];
    const first = await signedWeightsModelDir(src, files, root);
    expect(first.dir).not.toBe(src);
    expect(first.reused).toBe(false);
    expect(first.converted).toBeGreaterThan(0);
    expect(lstatSync(join(first.dir, "onnx/vision_model_quantized.onnx")).isSymbolicLink()).toBe(false);
    expect(lstatSync(join(first.dir, "config.json")).isSymbolicLink()).toBe(true);
    // The text tower has no uint8 MatMulInteger weights here: linked, not copied.
    expect(lstatSync(join(first.dir, "onnx/text_model_quantized.onnx")).isSymbolicLink()).toBe(true);
    const mtime = statSync(join(first.dir, "onnx/vision_model_quantized.onnx")).mtimeMs;

    const again = await signedWeightsModelDir(src, files, root);
    expect(again).toMatchObject({ dir: first.dir, reused: true, converted: first.converted });
    expect(statSync(join(again.dir, "onnx/vision_model_quantized.onnx")).mtimeMs).toBe(mtime);

    // Reinstalled weights (new mtime): a new folder, and the old one is gone.
    utimesSync(join(src, "onnx/vision_model_quantized.onnx"), new Date(), new Date(Date.now() + 5000));
    const rebuilt = await signedWeightsModelDir(src, files, root);
    expect(rebuilt.dir).not.toBe(first.dir);
    expect(existsSync(first.dir)).toBe(false);
    expect(readdirSync(root).filter((n) => !n.startsWith("."))).toEqual([rebuilt.dir.split("/").pop()]);
  });

  it("returns the installed folder when nothing converts, and remembers that", async () => {
    const root = join(tmp, "derived-none");
    const files = ["onnx/decoder_model_merged_quantized.onnx"];
    const first = await signedWeightsModelDir(WHISPER_DIR, files, root);
    expect(first).toMatchObject({ dir: WHISPER_DIR, converted: 0, reused: false });
    expect(await signedWeightsModelDir(WHISPER_DIR, files, root)).toMatchObject({
      dir: WHISPER_DIR,
      converted: 0,
      reused: true,
    });
  });

  it("prune removes derived folders of models no longer installed, and crash leftovers", async () => {
    const src = join(tmp, "clip-gone");
    cpSync(CLIP_DIR, src, { recursive: true });
    const root = join(tmp, "derived-prune");
    const kept = await signedWeightsModelDir(CLIP_DIR, ["onnx/vision_model_quantized.onnx"], root);
    const gone = await signedWeightsModelDir(src, ["onnx/vision_model_quantized.onnx"], root);
    mkdirSync(join(root, ".tmp-123-1-abc"));
    rmSync(src, { recursive: true, force: true });
    expect(await pruneDerivedModels(root)).toBe(2);
    expect(existsSync(kept.dir)).toBe(true);
    expect(existsSync(gone.dir)).toBe(false);
    expect(readdirSync(root)).toEqual([kept.dir.split("/").pop()]);
    expect(await pruneDerivedModels(join(tmp, "no-such-root"))).toBe(0);
  });

  it("concurrent first uses agree on one folder", async () => {
    const root = join(tmp, "derived-race");
    const files = ["onnx/vision_model_quantized.onnx"];
    const all = await Promise.all([1, 2, 3].map(() => signedWeightsModelDir(CLIP_DIR, files, root)));
    expect(new Set(all.map((r) => r.dir)).size).toBe(1);
    expect(readdirSync(root).filter((n) => n.startsWith(".tmp-"))).toEqual([]);
  });
});

describe("loaders with signed weights", () => {
  it("CLIP: same model id, and the same image embeddings (bit for bit on VNNI CPUs)", async () => {
    const frames = await Promise.all(
      ["astronaut.png", "chelsea.png"].map((f) => clipFrameLikeTransformersJs(`${TESTDATA}/${f}`)),
    );
    const plain = await ClipModel.load(CLIP_DIR, { dtype: "q8", intraOpThreads: 1 });
    const signed = await ClipModel.load(CLIP_DIR, {
      dtype: "q8",
      intraOpThreads: 1,
      signedWeightsDir: join(tmp, "loader"),
    });
    try {
      expect(signed.id).toBe(plain.id);
      const a = await plain.embedImages(frames.map((f) => ({ ...f, rgb: f.rgb.slice() })));
      const b = await signed.embedImages(frames.map((f) => ({ ...f, rgb: f.rgb.slice() })));
      a.forEach((v, i) => {
        if (HOST_VNNI) expect([...b[i]]).toEqual([...v]);
        else expect(cosine(v, b[i])).toBeGreaterThan(0.999);
      });
      // It really loaded from a derived folder (a failed conversion would fall back silently).
      const derived = readdirSync(join(tmp, "loader")).filter((n) => !n.startsWith("."));
      expect(derived.length).toBe(1);
      expect(lstatSync(join(tmp, "loader", derived[0], "onnx/vision_model_quantized.onnx")).isSymbolicLink()).toBe(
        false,
      );
    } finally {
      await Promise.all([plain.dispose(), signed.dispose()]);
    }
  });

  it("Whisper: the encoder converts and greedy tokens stay the same", async () => {
    const { samples } = readWav16(`${TESTDATA}/fox.wav`);
    const plain = await WhisperModel.load(WHISPER_DIR, { dtype: "q8", intraOpThreads: 1 });
    const signed = await WhisperModel.load(WHISPER_DIR, {
      dtype: "q8",
      intraOpThreads: 1,
      signedWeightsDir: join(tmp, "loader-w"),
    });
    try {
      expect(signed.id).toBe(plain.id);
      const a = await plain.generateTokens(await plain.extractFeatures(samples), {
        timestamps: false,
        maxNewTokens: 20,
      });
      const b = await signed.generateTokens(await signed.extractFeatures(samples), {
        timestamps: false,
        maxNewTokens: 20,
      });
      if (HOST_VNNI) expect(b).toEqual(a);
      else expect(b.slice(0, 5)).toEqual(a.slice(0, 5));
      const derived = readdirSync(join(tmp, "loader-w")).filter((n) => !n.startsWith("."));
      expect(derived.length).toBe(1);
      expect(lstatSync(join(tmp, "loader-w", derived[0], "onnx/encoder_model_quantized.onnx")).isSymbolicLink()).toBe(
        false,
      );
    } finally {
      await Promise.all([plain.dispose(), signed.dispose()]);
    }
  });
});
