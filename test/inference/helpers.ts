/** Shared helpers for the inference tests: fixture paths, reference.json, WAV/PNG decoding, vector maths. */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { RawImage } from "@huggingface/transformers";
import { concatBytes } from "../../src/core/bytes.ts";
import type { RgbFrame } from "../../src/inference/clip.ts";
import { ONNX_DTYPE, ONNX_FIELD, lengthDelimited, varintField } from "../../src/inference/onnx-proto.ts";

export const FIXTURES = fileURLToPath(new URL("../fixtures/", import.meta.url));
export const CLIP_DIR = `${FIXTURES}models/tiny-random-clip`;
export const WHISPER_DIR = `${FIXTURES}models/tiny-random-whisper`;
export const TESTDATA = `${FIXTURES}testdata`;
export const WORKER_FILE = fileURLToPath(new URL("../../src/inference/worker.ts", import.meta.url));

export function reference(modelDir: string): any {
  return JSON.parse(readFileSync(`${modelDir}/reference.json`, "utf8"));
}

/** 16-bit PCM mono WAV → float32 in [-1, 1) (what soundfile/librosa give the reference). */
export function readWav16(path: string): { samples: Float32Array; sampleRate: number } {
  const buf = readFileSync(path);
  if (buf.toString("ascii", 0, 4) !== "RIFF" || buf.toString("ascii", 8, 12) !== "WAVE")
    throw new Error(`${path}: not a WAV file`);
  let off = 12;
  let sampleRate = 0;
  let channels = 0;
  let bits = 0;
  while (off + 8 <= buf.length) {
    const id = buf.toString("ascii", off, off + 4);
    const size = buf.readUInt32LE(off + 4);
    const body = off + 8;
    if (id === "fmt ") {
      const format = buf.readUInt16LE(body);
      channels = buf.readUInt16LE(body + 2);
      sampleRate = buf.readUInt32LE(body + 4);
      bits = buf.readUInt16LE(body + 14);
      if (format !== 1 || bits !== 16 || channels !== 1) throw new Error(`${path}: want 16-bit PCM mono`);
    } else if (id === "data") {
      const n = Math.floor(Math.min(size, buf.length - body) / 2);
      const samples = new Float32Array(n);
      for (let i = 0; i < n; i++) samples[i] = buf.readInt16LE(body + 2 * i) / 32768;
      return { samples, sampleRate };
    }
    off = body + size + (size & 1);
  }
  throw new Error(`${path}: no data chunk`);
}

/**
 * A PNG scaled and centre-cropped to 224×224 RGB exactly as the transformers.js CLIP processor does
 * it (sharp bicubic, shortest edge 224, centre crop) — i.e. the frame its reference embeddings saw.
 */
export async function clipFrameLikeTransformersJs(path: string, size = 224): Promise<RgbFrame> {
  let img = (await RawImage.read(path)).rgb();
  const f = Math.max(size / img.width, size / img.height);
  const w = Math.floor(Number((img.width * f).toFixed(2)));
  const h = Math.floor(Number((img.height * f).toFixed(2)));
  img = await img.resize(w, h, { resample: 3 });
  img = await img.center_crop(size, size);
  return { rgb: new Uint8Array(img.data), width: img.width, height: img.height };
}

export function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let ab = 0;
  let aa = 0;
  let bb = 0;
  for (let i = 0; i < a.length; i++) {
    ab += a[i] * b[i];
    aa += a[i] * a[i];
    bb += b[i] * b[i];
  }
  return ab / Math.sqrt(aa * bb);
}

export function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) return Infinity;
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

export function norm(a: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * a[i];
  return Math.sqrt(s);
}

/** Formula-defined synthetic CLIP input from reference.json: already-normalised pixel_values [2,3,224,224]. */
export function syntheticPixelValues(): Float32Array {
  const out = new Float32Array(2 * 3 * 224 * 224);
  let i = 0;
  for (let b = 0; b < 2; b++)
    for (let c = 0; c < 3; c++)
      for (let y = 0; y < 224; y++)
        for (let x = 0; x < 224; x++) out[i++] = Math.sin(0.05 * (b + 1) * x + 0.03 * (2 * b + 1) * y + 1.7 * c) * 1.5;
  return out;
}

/** Formula-defined synthetic Whisper input: input_features [1,80,3000]. */
export function syntheticWhisperFeatures(): Float32Array {
  const out = new Float32Array(80 * 3000);
  for (let m = 0; m < 80; m++) for (let t = 0; t < 3000; t++) out[m * 3000 + t] = Math.sin(0.01 * t + 0.3 * m) * 0.8;
  return out;
}

/**
 * What ONNX Runtime's u8 × s8 MatMulInteger kernel does on this CPU, asked of ORT itself: a 1×64
 * by 64×16 product of 255s and 127s, whose exact sum (64·255·127 = 2 072 640) only a VNNI kernel
 * (`vpdpbusd`, AVX512-VNNI or AVX-VNNI) reaches; the AVX2/AVX-512 kernels add products in int16
 * pairs (`vpmaddubsw`), which saturate at 32 767 each (32 pairs → 1 048 544).
 *
 * Why not /proc/cpuinfo: it describes the host, not necessarily the CPU ORT runs on — under
 * qemu-user (`qemu-x86_64 -cpu Haswell`, how the AVX2-only figures beside the thresholds were
 * measured) it still lists the host's avx512_vnni while CPUID, which ORT reads, has none.
 */
export async function int8KernelIsExact(): Promise<boolean> {
  const { InferenceSession, Tensor: OrtTensor } = await import("onnxruntime-node");
  const K = 64;
  const N = 16;
  const utf8 = (field: number, s: string) => lengthDelimited(field, new TextEncoder().encode(s));
  const valueInfo = (name: string, elemType: number, dims: number[]) =>
    concatBytes([
      utf8(1, name),
      lengthDelimited(
        2, // ValueInfoProto.type → TypeProto.tensor_type { elem_type, shape { dim { dim_value } } }
        lengthDelimited(
          1,
          concatBytes([
            varintField(1, elemType),
            lengthDelimited(2, concatBytes(dims.map((d) => lengthDelimited(1, varintField(1, d))))),
          ]),
        ),
      ),
    ]);
  const weights = concatBytes([
    varintField(1, K),
    varintField(1, N),
    varintField(ONNX_FIELD.tensorDataType, ONNX_DTYPE.int8),
    utf8(ONNX_FIELD.tensorName, "B"),
    lengthDelimited(ONNX_FIELD.tensorRawData, new Uint8Array(K * N).fill(127)),
  ]);
  const node = concatBytes([utf8(1, "A"), utf8(1, "B"), utf8(2, "Y"), utf8(4, "MatMulInteger")]);
  const INT32 = 6;
  const graph = concatBytes([
    lengthDelimited(ONNX_FIELD.graphNode, node),
    utf8(2, "int8-kernel-probe"),
    lengthDelimited(ONNX_FIELD.graphInitializer, weights),
    lengthDelimited(ONNX_FIELD.graphInput, valueInfo("A", ONNX_DTYPE.uint8, [1, K])),
    lengthDelimited(ONNX_FIELD.graphOutput, valueInfo("Y", INT32, [1, N])),
  ]);
  // ModelProto: ir_version 8, opset_import { domain "", version 13 }, graph.
  const model = concatBytes([
    varintField(1, 8),
    lengthDelimited(8, concatBytes([utf8(1, ""), varintField(2, 13)])),
    lengthDelimited(ONNX_FIELD.modelGraph, graph),
  ]);
  const session = await InferenceSession.create(model, { intraOpNumThreads: 1 });
  try {
    const out = await session.run({ A: new OrtTensor("uint8", new Uint8Array(K).fill(255), [1, K]) });
    const got = (out.Y.data as Int32Array)[0];
    if (got === K * 255 * 127) return true;
    if (got === (K / 2) * 32767) return false;
    throw new Error(`int8 kernel probe: unexpected ${got} (exact ${K * 255 * 127}, saturated ${(K / 2) * 32767})`);
  } finally {
    await session.release();
  }
}
