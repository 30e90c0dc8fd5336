/**
 * Just enough of the protobuf wire format to read an ONNX model's graph structure and rebuild
 * it with some initializers replaced. No schema library: ONNX files are plain protobuf, and we
 * only need a handful of field numbers (from onnx.proto3):
 *   ModelProto.graph = 7
 *   GraphProto: node = 1, initializer = 5, input = 11, output = 12, value_info = 13
 *   NodeProto: input = 1, output = 2, op_type = 4, attribute = 5, domain = 7
 *   AttributeProto: g = 6, graphs = 11
 *   TensorProto: data_type = 2, int32_data = 5, name = 8, raw_data = 9, data_location = 14
 *   ValueInfoProto.name = 1
 */

import { concatBytes } from "../core/bytes.ts";

export const ONNX_FIELD = {
  modelGraph: 7,
  graphNode: 1,
  graphInitializer: 5,
  graphInput: 11,
  graphOutput: 12,
  graphValueInfo: 13,
  nodeInput: 1,
  nodeOutput: 2,
  nodeOpType: 4,
  nodeAttribute: 5,
  nodeDomain: 7,
  attributeGraph: 6,
  attributeGraphs: 11,
  tensorDataType: 2,
  tensorInt32Data: 5,
  tensorName: 8,
  tensorRawData: 9,
  tensorDataLocation: 14,
  valueInfoName: 1,
} as const;

/** TensorProto.DataType values used here. */
export const ONNX_DTYPE = { float: 1, uint8: 2, int8: 3 } as const;

export class ProtoError extends Error {
  override name = "ProtoError";
}

/** One field of a message: its number, wire type, and where its bytes are in the buffer. */
export interface ProtoField {
  field: number;
  wire: 0 | 1 | 2 | 5;
  /** Offset of the field's key (start of the whole field). */
  start: number;
  /** Offset of the payload: the varint, the fixed bytes, or the bytes after a length prefix. */
  valueStart: number;
  /** End of the payload (= end of the whole field). */
  end: number;
}

/** Reads a varint; values beyond 2^53 lose precision (only lengths and enums are used here). */
export function readVarint(buf: Uint8Array, pos: number): [value: number, next: number] {
  let value = 0;
  let scale = 1;
  for (let i = 0; i < 10; i++) {
    if (pos >= buf.length) throw new ProtoError("truncated varint");
    const b = buf[pos++];
    value += (b & 0x7f) * scale;
    if (b < 0x80) return [value, pos];
    scale *= 128;
  }
  throw new ProtoError("varint longer than 10 bytes");
}

export function encodeVarint(value: number): Uint8Array {
  if (!Number.isSafeInteger(value) || value < 0) throw new ProtoError(`cannot encode ${value} as a varint`);
  const out: number[] = [];
  let v = value;
  while (v >= 0x80) {
    out.push((v % 128) | 0x80);
    v = Math.floor(v / 128);
  }
  out.push(v);
  return Uint8Array.from(out);
}

/** The fields of the message in buf[start, end), in order. Throws on groups or overruns. */
export function* fields(buf: Uint8Array, start = 0, end = buf.length): Generator<ProtoField> {
  let pos = start;
  while (pos < end) {
    const fieldStart = pos;
    const [key, afterKey] = readVarint(buf, pos);
    const field = Math.floor(key / 8);
    const wire = key & 7;
    let valueStart = afterKey;
    let valueEnd: number;
    switch (wire) {
      case 0:
        valueEnd = readVarint(buf, afterKey)[1];
        break;
      case 1:
        valueEnd = afterKey + 8;
        break;
      case 2: {
        const [len, afterLen] = readVarint(buf, afterKey);
        valueStart = afterLen;
        valueEnd = afterLen + len;
        break;
      }
      case 5:
        valueEnd = afterKey + 4;
        break;
      default:
        throw new ProtoError(`unsupported wire type ${wire} (field ${field}) at byte ${fieldStart}`);
    }
    if (valueEnd > end) throw new ProtoError(`field ${field} at byte ${fieldStart} runs past its message`);
    yield { field, wire: wire as ProtoField["wire"], start: fieldStart, valueStart, end: valueEnd };
    pos = valueEnd;
  }
}

const utf8 = new TextDecoder();

export function fieldString(buf: Uint8Array, f: ProtoField): string {
  return utf8.decode(buf.subarray(f.valueStart, f.end));
}

export function fieldVarint(buf: Uint8Array, f: ProtoField): number {
  return readVarint(buf, f.valueStart)[0];
}

/** Values of a repeated varint field, packed (wire 2) or not (wire 0). */
export function fieldVarints(buf: Uint8Array, f: ProtoField): number[] {
  if (f.wire === 0) return [fieldVarint(buf, f)];
  const out: number[] = [];
  let pos = f.valueStart;
  while (pos < f.end) {
    const [v, next] = readVarint(buf, pos);
    out.push(v);
    pos = next;
  }
  return out;
}

/** A length-delimited field: key, length, payload. */
export function lengthDelimited(field: number, payload: Uint8Array): Uint8Array {
  return concatBytes([encodeVarint(field * 8 + 2), encodeVarint(payload.length), payload]);
}

/** A varint field: key, value. */
export function varintField(field: number, value: number): Uint8Array {
  return concatBytes([encodeVarint(field * 8), encodeVarint(value)]);
}
