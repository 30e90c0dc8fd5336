/**
 * uint8 → int8 weights for dynamically quantised ONNX models (MatMulInteger + DynamicQuantizeLinear).
 *
 * Why: transformers.js quantises a model's weights as *uint8* whenever the graph has a Conv (CLIP's
 * patch embedding, Whisper's encoder stem), so every MatMulInteger multiplies u8 activations by u8
 * weights. ONNX Runtime's fast int8 kernels on x86 (AVX512-VNNI / AVX-VNNI `vpdpbusd`) take
 * u8 × s8; u8 × u8 falls back to a slower path. Measured on a 2-core EPYC with AVX512-VNNI
 * (bench/inference-bench.ts): CLIP ViT-B/32 vision q8 went from 29 to 63 images/s at batch 8.
 *
 * The rewrite is exact: a weight w with zero point z becomes w − 128 with zero point z − 128, so
 * every (w − z) the kernel multiplies by is unchanged, and the int32 accumulations are identical
 * (outputs compare bit for bit, test/inference/signed-weights.test.ts). It is only done on CPUs
 * with VNNI: without it, ORT's u8 × s8 kernel sums pairs of products in int16 (`vpmaddubsw`), which
 * can saturate — that is why transformers.js chose u8 in the first place.
 *
 * What is converted, conservatively: a top-level uint8 initializer whose every consumer, in the
 * graph and in every subgraph, is a MatMulInteger reading it as B (input 1) or b_zero_point
 * (input 3), where that MatMulInteger's B and b_zero_point are both such initializers. Anything
 * else (Gather + DequantizeLinear embeddings, a missing zero point, external data, a name that is
 * also a graph input or has a declared type) is left as it is.
 */
import { concatBytes } from "../core/bytes.ts";
import {
  ONNX_DTYPE,
  ONNX_FIELD as F,
  type ProtoField,
  ProtoError,
  encodeVarint,
  fieldString,
  fieldVarint,
  fieldVarints,
  fields,
  lengthDelimited,
  varintField,
} from "./onnx-proto.ts";

export interface SignedWeightsResult {
  /**
   * The rewritten model as consecutive pieces (write them in order), mostly views into the input
   * buffer; `[model]` when nothing was converted. No model-sized copy is made.
   */
  parts: Uint8Array[];
  /** Initializers rewritten (weights and zero points). */
  converted: number;
  /** MatMulInteger nodes now reading int8 weights. */
  nodes: number;
}

interface Initializer {
  field: ProtoField;
  name: string;
  dataType: number;
  external: boolean;
}

interface Use {
  opType: string;
  domain: string;
  slot: number;
  /** The node's B and b_zero_point input names ("" when absent). */
  b: string;
  bZeroPoint: string;
}

/**
 * Converts a whole ONNX model (ModelProto bytes). **Rewrites `model` in place** where weights are
 * stored as raw bytes (same length either way), so pass a buffer you own (e.g. just read from
 * disk). Throws ProtoError on a malformed file.
 */
export function signMatMulIntegerWeights(model: Uint8Array): SignedWeightsResult {
  let graph: ProtoField | null = null;
  for (const f of fields(model)) if (f.field === F.modelGraph && f.wire === 2) graph = f;
  if (!graph) throw new ProtoError("no graph in the model");

  const inits = new Map<string, Initializer>();
  const declared = new Set<string>(); // graph inputs/outputs/value_info: they pin a type
  for (const f of fields(model, graph.valueStart, graph.end)) {
    if (f.field === F.graphInitializer && f.wire === 2) {
      const t = readTensorHeader(model, f);
      inits.set(t.name, t);
    } else if (
      (f.field === F.graphInput || f.field === F.graphOutput || f.field === F.graphValueInfo) &&
      f.wire === 2
    ) {
      for (const g of fields(model, f.valueStart, f.end))
        if (g.field === F.valueInfoName) declared.add(fieldString(model, g));
    }
  }

  const uses = new Map<string, Use[]>();
  const shadowed = new Set<string>();
  walkNodes(model, graph, 0, uses, shadowed);

  // Candidates, then drop any whose node cannot be converted as a whole, until nothing changes.
  const candidate = new Set<string>();
  for (const [name, t] of inits) {
    const u = uses.get(name);
    if (t.dataType !== ONNX_DTYPE.uint8 || t.external || declared.has(name) || shadowed.has(name) || !u?.length)
      continue;
    if (
      u.every(
        (x) =>
          x.opType === "MatMulInteger" && (x.domain === "" || x.domain === "ai.onnx") && (x.slot === 1 || x.slot === 3),
      )
    )
      candidate.add(name);
  }
  for (let changed = true; changed; ) {
    changed = false;
    for (const name of [...candidate]) {
      const ok = uses
        .get(name)!
        .every((x) => x.b !== "" && x.bZeroPoint !== "" && candidate.has(x.b) && candidate.has(x.bZeroPoint));
      if (!ok) {
        candidate.delete(name);
        changed = true;
      }
    }
  }
  if (candidate.size === 0) return { parts: [model], converted: 0, nodes: 0 };

  const nodes = new Set<string>();
  for (const name of candidate) for (const u of uses.get(name)!) nodes.add(`${u.b}\0${u.bZeroPoint}`);

  const rewrite = new Set([...candidate].map((name) => inits.get(name)!.field.start));
  const graphParts: Uint8Array[] = [];
  let run = graph.valueStart; // unchanged bytes are passed on as runs of the input
  for (const f of fields(model, graph.valueStart, graph.end)) {
    if (!rewrite.has(f.start)) continue;
    if (signRawTensorInPlace(model, f)) continue; // same length: stays inside the current run
    graphParts.push(model.subarray(run, f.start), lengthDelimited(F.graphInitializer, toInt8Tensor(model, f)));
    run = f.end;
  }
  graphParts.push(model.subarray(run, graph.end));
  const graphLength = graphParts.reduce((n, p) => n + p.length, 0);
  const header = concatBytes([encodeVarint(F.modelGraph * 8 + 2), encodeVarint(graphLength)]);
  const parts = [model.subarray(0, graph.start), header, ...graphParts, model.subarray(graph.end)].filter(
    (p) => p.length > 0,
  );
  return { parts, converted: candidate.size, nodes: nodes.size };
}

/**
 * A tensor whose data is raw bytes and whose data_type is one byte: flip both where they lie
 * (uint8 → int8 and every value v → v − 128). False when the tensor needs re-encoding instead.
 */
function signRawTensorInPlace(buf: Uint8Array, t: ProtoField): boolean {
  let dataType: ProtoField | null = null;
  let raw: ProtoField | null = null;
  for (const f of fields(buf, t.valueStart, t.end)) {
    if (f.field === F.tensorDataType && f.wire === 0) dataType = f;
    else if (f.field === F.tensorRawData && f.wire === 2) raw = f;
    else if (f.field === F.tensorInt32Data) return false;
  }
  if (!dataType || !raw || dataType.end - dataType.valueStart !== 1) return false;
  buf[dataType.valueStart] = ONNX_DTYPE.int8;
  for (let i = raw.valueStart; i < raw.end; i++) buf[i] ^= 0x80;
  return true;
}

function readTensorHeader(buf: Uint8Array, t: ProtoField): Initializer {
  let name = "";
  let dataType = 0;
  let external = false;
  for (const f of fields(buf, t.valueStart, t.end)) {
    if (f.field === F.tensorName && f.wire === 2) name = fieldString(buf, f);
    else if (f.field === F.tensorDataType && f.wire === 0) dataType = fieldVarint(buf, f);
    else if (f.field === F.tensorDataLocation && f.wire === 0) external = fieldVarint(buf, f) === 1;
  }
  return { field: t, name, dataType, external };
}

/** Records every node input's consumer, in the graph and (recursively) in subgraph attributes. */
function walkNodes(
  buf: Uint8Array,
  graph: ProtoField,
  depth: number,
  uses: Map<string, Use[]>,
  shadowed: Set<string>,
): void {
  if (depth > 16) throw new ProtoError("subgraphs nested too deeply");
  for (const f of fields(buf, graph.valueStart, graph.end)) {
    // A subgraph that defines a name of its own hides the outer initializer of that name.
    if (depth > 0 && f.field === F.graphInitializer && f.wire === 2) shadowed.add(readTensorHeader(buf, f).name);
    if (f.field !== F.graphNode || f.wire !== 2) continue;
    const inputs: string[] = [];
    let opType = "";
    let domain = "";
    const subgraphs: ProtoField[] = [];
    for (const n of fields(buf, f.valueStart, f.end)) {
      if (n.field === F.nodeInput && n.wire === 2) inputs.push(fieldString(buf, n));
      else if (n.field === F.nodeOutput && n.wire === 2 && depth > 0) shadowed.add(fieldString(buf, n));
      else if (n.field === F.nodeOpType && n.wire === 2) opType = fieldString(buf, n);
      else if (n.field === F.nodeDomain && n.wire === 2) domain = fieldString(buf, n);
      else if (n.field === F.nodeAttribute && n.wire === 2) {
        for (const a of fields(buf, n.valueStart, n.end)) {
          if ((a.field === F.attributeGraph || a.field === F.attributeGraphs) && a.wire === 2) subgraphs.push(a);
        }
      }
    }
    const b = opType === "MatMulInteger" ? (inputs[1] ?? "") : "";
    const bZeroPoint = opType === "MatMulInteger" ? (inputs[3] ?? "") : "";
    inputs.forEach((name, slot) => {
      if (name === "") return;
      let list = uses.get(name);
      if (!list) uses.set(name, (list = []));
      list.push({ opType, domain, slot, b, bZeroPoint });
    });
    for (const g of subgraphs) walkNodes(buf, g, depth + 1, uses, shadowed);
  }
}

/** The TensorProto re-encoded as int8 (data_type 3, raw_data = value − 128 for every element). */
function toInt8Tensor(buf: Uint8Array, t: ProtoField): Uint8Array {
  const kept: Uint8Array[] = [];
  let data: Uint8Array | null = null;
  const fromInt32: number[] = [];
  for (const f of fields(buf, t.valueStart, t.end)) {
    if (f.field === F.tensorDataType) continue;
    if (f.field === F.tensorRawData && f.wire === 2) {
      data = buf.slice(f.valueStart, f.end);
      continue;
    }
    if (f.field === F.tensorInt32Data) {
      fromInt32.push(...fieldVarints(buf, f));
      continue;
    }
    kept.push(buf.subarray(f.start, f.end));
  }
  if (!data) {
    if (fromInt32.some((v) => v > 255)) throw new ProtoError("uint8 tensor with a value above 255");
    data = Uint8Array.from(fromInt32);
  }
  // v − 128 in two's complement is v XOR 0x80.
  for (let i = 0; i < data.length; i++) data[i] ^= 0x80;
  return concatBytes([varintField(F.tensorDataType, ONNX_DTYPE.int8), ...kept, lengthDelimited(F.tensorRawData, data)]);
}

/**
 * True when the CPU has 8-bit VNNI dot products (AVX512-VNNI or AVX-VNNI), read from
 * /proc/cpuinfo's flags. Elsewhere (no such file, another architecture) false: keep the weights.
 */
export function cpuHasVnni(cpuinfo: string | null): boolean {
  if (!cpuinfo) return false;
  const flags = cpuinfo.split("\n").find((l) => /^flags\s*:/.test(l));
  if (!flags) return false;
  const set = new Set(
    flags
      .slice(flags.indexOf(":") + 1)
      .trim()
      .split(/\s+/),
  );
  return set.has("avx512_vnni") || set.has("avx_vnni");
}

export interface SignedWeightsDecision {
  enabled: boolean;
  /** One line for `vsearch doctor` and the log. */
  reason: string;
}

/** Whether to load int8 models with signed weights: the setting, then the CPU. */
export function signedWeightsDecision(setting: "auto" | "off", cpuinfo: string | null): SignedWeightsDecision {
  if (setting === "off")
    return { enabled: false, reason: "off (signed_int8_weights = off): int8 models load as installed" };
  if (cpuHasVnni(cpuinfo))
    return {
      enabled: true,
      reason: "signed (CPU has VNNI): uint8 MatMulInteger weights are loaded as int8, same outputs, faster kernels",
    };
  return {
    enabled: false,
    reason: "as installed: no VNNI on this CPU (there, ONNX Runtime's u8×s8 kernel may saturate)",
  };
}
