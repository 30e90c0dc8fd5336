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
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/config.ts";
import { createLogger } from "../../src/core/logger.ts";
import { ClipModel } from "../../src/inference/clip.ts";
import { InferenceHost } from "../../src/inference/host.ts";
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
import {
  CLIP_DIR,
  WHISPER_DIR,
  WORKER_FILE,
  clipFrameLikeTransformersJs,
  TESTDATA,
  int8KernelIsExact,
  readWav16,
} from "./helpers.ts";
import { fixedCatalog, tinyClip } from "../helpers/models.ts";
import { tempDir } from "../helpers/temp.ts";

const tmp = tempDir("vsearch-signed-");

/**
 * Whether signed weights give the same outputs here: only where ORT's u8 × s8 kernel is exact
 * (VNNI). Without VNNI it saturates — the product never converts there (see "policy"), and forced
 * anyway (as these loader tests force it) CLIP's image embeddings move to cosine 0.99804 of the
 * plain q8 ones and Whisper's greedy tokens part from the second token on (measured under
 * `qemu-x86_64 -cpu Haswell`, AVX2 only). So the comparison of outputs runs only on VNNI CPUs.
 */
const KERNEL_EXACT = await int8KernelIsExact();
const NO_VNNI = "skipped: ONNX Runtime's u8×s8 kernel saturates on this CPU (no VNNI), where vsearch never converts";

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
    // The input itself, not a copy (identity: a deep toEqual of 1.8 MB took 74 s under load).
    expect(r.parts).toHaveLength(1);
    expect(r.parts[0]).toBe(copy);
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

describe("policy through the inference host (CPU facts injected)", () => {
  const AVX2_ONLY = "processor\t: 0\nmodel name\t: AMD EPYC 7B12\nflags\t\t: fpu sse2 avx avx2 fma\n";
  const AVX512_VNNI = "processor\t: 0\nflags\t\t: fpu sse2 avx avx2 avx512f avx512bw avx512_vnni\n";
  const hosts: InferenceHost[] = [];
  afterEach(async () => {
    await Promise.all(hosts.splice(0).map((h) => h.close()));
  });

  /** A host on a fresh data dir, told it runs on `cpuinfo`, after one q8 image embedding through its pool. */
  async function embedOn(cpuinfo: string, setting: "auto" | "off") {
    const dataDir = join(tmp, `host-${hosts.length}-${setting}`);
    const config = loadConfig(
      { dataDir, logLevel: "silent" },
      { VSEARCH_DEVICE: "cpu", VSEARCH_SIGNED_INT8_WEIGHTS: setting },
    );
    const host = new InferenceHost(
      config,
      WORKER_FILE,
      fixedCatalog({ "image-text": tinyClip }),
      createLogger("silent"),
      null,
      null,
      () => cpuinfo,
    );
    hosts.push(host);
    const frame = await clipFrameLikeTransformersJs(`${TESTDATA}/chelsea.png`);
    const out = await (await host.get()).embedImages({ modelDir: CLIP_DIR, dtype: "q8" }, [frame]);
    expect(out.vectors.length).toBe(1);
    return { decision: host.signedWeights(), derivedRoot: join(dataDir, "runtime/signed-models") };
  }
  const derivedFolders = (root: string) =>
    existsSync(root) ? readdirSync(root).filter((n) => !n.startsWith(".")) : [];

  it("auto on a CPU without VNNI loads int8 models as installed: nothing is converted", async () => {
    const r = await embedOn(AVX2_ONLY, "auto");
    expect(r.decision).toMatchObject({ enabled: false, reason: expect.stringContaining("no VNNI") });
    expect(derivedFolders(r.derivedRoot)).toEqual([]);
  });

  it("auto on a CPU with VNNI loads them from a derived folder with signed weights", async () => {
    const r = await embedOn(AVX512_VNNI, "auto");
    expect(r.decision.enabled).toBe(true);
    expect(derivedFolders(r.derivedRoot).length).toBe(1);
  });

  it("off converts nothing, VNNI or not", async () => {
    const r = await embedOn(AVX512_VNNI, "off");
    expect(r.decision).toMatchObject({ enabled: false, reason: expect.stringContaining("off") });
    expect(derivedFolders(r.derivedRoot)).toEqual([]);
  });

  it("there is no `on`: the setting is refused with the reason", () => {
    expect(() => loadConfig({ dataDir: tmp }, { VSEARCH_SIGNED_INT8_WEIGHTS: "on" })).toThrow(
      /auto or off.*no "on".*VNNI/s,
    );
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
  const frames = () =>
    Promise.all(["astronaut.png", "chelsea.png"].map((f) => clipFrameLikeTransformersJs(`${TESTDATA}/${f}`)));
  const copies = (fs: Awaited<ReturnType<typeof frames>>) => fs.map((f) => ({ ...f, rgb: f.rgb.slice() }));

  /** The one derived folder under `root`, with `file` really converted (a failed conversion falls back silently). */
  function expectDerived(root: string, file: string) {
    const derived = readdirSync(root).filter((n) => !n.startsWith("."));
    expect(derived.length).toBe(1);
    expect(lstatSync(join(root, derived[0], file)).isSymbolicLink()).toBe(false);
  }

  // Structure holds on every CPU: the folder is derived, the model id is the installed one's, and it runs.
  it("CLIP: loads from a derived folder under the same model id", async () => {
    const plain = await ClipModel.load(CLIP_DIR, { dtype: "q8", intraOpThreads: 1 });
    const root = join(tmp, "loader-structure");
    const signed = await ClipModel.load(CLIP_DIR, { dtype: "q8", intraOpThreads: 1, signedWeightsDir: root });
    try {
      expect(signed.id).toBe(plain.id);
      expectDerived(root, "onnx/vision_model_quantized.onnx");
      const [v] = await signed.embedImages(copies((await frames()).slice(0, 1)));
      expect(v.length).toBe(plain.dim);
    } finally {
      await Promise.all([plain.dispose(), signed.dispose()]);
    }
  });

  it("CLIP: the same image embeddings bit for bit (VNNI CPUs)", async (ctx) => {
    ctx.skip(!KERNEL_EXACT, NO_VNNI);
    const fs = await frames();
    const plain = await ClipModel.load(CLIP_DIR, { dtype: "q8", intraOpThreads: 1 });
    const root = join(tmp, "loader");
    const signed = await ClipModel.load(CLIP_DIR, { dtype: "q8", intraOpThreads: 1, signedWeightsDir: root });
    try {
      const a = await plain.embedImages(copies(fs));
      const b = await signed.embedImages(copies(fs));
      a.forEach((v, i) => expect([...b[i]]).toEqual([...v]));
      expectDerived(root, "onnx/vision_model_quantized.onnx");
    } finally {
      await Promise.all([plain.dispose(), signed.dispose()]);
    }
  });

  it("Whisper: the encoder converts, under the same model id", async () => {
    const root = join(tmp, "loader-w-structure");
    const plain = await WhisperModel.load(WHISPER_DIR, { dtype: "q8", intraOpThreads: 1 });
    const signed = await WhisperModel.load(WHISPER_DIR, { dtype: "q8", intraOpThreads: 1, signedWeightsDir: root });
    try {
      expect(signed.id).toBe(plain.id);
      expectDerived(root, "onnx/encoder_model_quantized.onnx");
      const { samples } = readWav16(`${TESTDATA}/fox.wav`);
      const tokens = await signed.generateTokens(await signed.extractFeatures(samples), {
        timestamps: false,
        maxNewTokens: 3,
      });
      expect(tokens.length).toBe(3);
    } finally {
      await Promise.all([plain.dispose(), signed.dispose()]);
    }
  });

  it("Whisper: greedy tokens stay the same (VNNI CPUs)", async (ctx) => {
    ctx.skip(!KERNEL_EXACT, NO_VNNI);
    const { samples } = readWav16(`${TESTDATA}/fox.wav`);
    const plain = await WhisperModel.load(WHISPER_DIR, { dtype: "q8", intraOpThreads: 1 });
    const root = join(tmp, "loader-w");
    const signed = await WhisperModel.load(WHISPER_DIR, { dtype: "q8", intraOpThreads: 1, signedWeightsDir: root });
    try {
      const opts = { timestamps: false, maxNewTokens: 20 };
      const a = await plain.generateTokens(await plain.extractFeatures(samples), opts);
      const b = await signed.generateTokens(await signed.extractFeatures(samples), opts);
      expect(b).toEqual(a);
      expectDerived(root, "onnx/encoder_model_quantized.onnx");
    } finally {
      await Promise.all([plain.dispose(), signed.dispose()]);
    }
  });
});
