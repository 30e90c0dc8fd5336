/**
 * A tiny WebAssembly assembler: enough of the binary format (types, one imported memory,
 * functions, exports, code) and of the instruction set (scalar + SIMD) to write the vector
 * kernels in TypeScript. The module bytes are produced at run time from this source, so there
 * is no opaque .wasm file to ship or to load from disk (which a `bun build --compile` binary
 * could not do relative to the source anyway).
 *
 * Opcode numbers follow the WebAssembly 2.0 spec (SIMD ones are 0xFD-prefixed, LEB128-encoded).
 */

export type ValType = "i32" | "i64" | "f32" | "f64" | "v128";

const VALTYPE: Record<ValType, number> = { i32: 0x7f, i64: 0x7e, f32: 0x7d, f64: 0x7c, v128: 0x7b };

export function uleb(out: number[], value: number): void {
  let v = value >>> 0;
  do {
    let byte = v & 0x7f;
    v >>>= 7;
    if (v !== 0) byte |= 0x80;
    out.push(byte);
  } while (v !== 0);
}

export function sleb(out: number[], value: number): void {
  let v = value | 0;
  for (;;) {
    const byte = v & 0x7f;
    v >>= 7;
    if ((v === 0 && (byte & 0x40) === 0) || (v === -1 && (byte & 0x40) !== 0)) {
      out.push(byte);
      return;
    }
    out.push(byte | 0x80);
  }
}

/** Plain (one-byte) opcodes used by the kernels. */
export const Op = {
  unreachable: 0x00,
  nop: 0x01,
  block: 0x02,
  loop: 0x03,
  if: 0x04,
  else: 0x05,
  end: 0x0b,
  br: 0x0c,
  br_if: 0x0d,
  return: 0x0f,
  drop: 0x1a,
  select: 0x1b,
  local_get: 0x20,
  local_set: 0x21,
  local_tee: 0x22,
  i32_load: 0x28,
  i64_load: 0x29,
  f32_load: 0x2a,
  i32_load8_u: 0x2d,
  i32_load16_u: 0x2f,
  i32_store: 0x36,
  i64_store: 0x37,
  f32_store: 0x38,
  i32_store8: 0x3a,
  i32_store16: 0x3b,
  i32_const: 0x41,
  i64_const: 0x42,
  f32_const: 0x43,
  i32_eqz: 0x45,
  i32_eq: 0x46,
  i32_ne: 0x47,
  i32_lt_s: 0x48,
  i32_lt_u: 0x49,
  i32_gt_s: 0x4a,
  i32_gt_u: 0x4b,
  i32_le_s: 0x4c,
  i32_le_u: 0x4d,
  i32_ge_s: 0x4e,
  i32_ge_u: 0x4f,
  f32_lt: 0x5d,
  f32_gt: 0x5e,
  i32_clz: 0x67,
  i32_ctz: 0x68,
  i32_popcnt: 0x69,
  i32_add: 0x6a,
  i32_sub: 0x6b,
  i32_mul: 0x6c,
  i32_and: 0x71,
  i32_or: 0x72,
  i32_xor: 0x73,
  i32_shl: 0x74,
  i32_shr_s: 0x75,
  i32_shr_u: 0x76,
  i64_popcnt: 0x7b,
  i64_and: 0x83,
  i64_or: 0x84,
  i64_xor: 0x85,
  f32_abs: 0x8b,
  f32_neg: 0x8c,
  f32_sqrt: 0x91,
  f32_add: 0x92,
  f32_sub: 0x93,
  f32_mul: 0x94,
  f32_div: 0x95,
  f32_min: 0x96,
  f32_max: 0x97,
  i32_wrap_i64: 0xa7,
  f32_convert_i32_s: 0xb2,
  i64_extend_i32_u: 0xad,
} as const;

/** SIMD opcodes (after the 0xFD prefix). */
export const Simd = {
  v128_load: 0x00,
  v128_load8x8_s: 0x01,
  v128_load32_splat: 0x09,
  v128_store: 0x0b,
  v128_const: 0x0c,
  i8x16_shuffle: 0x0d,
  i8x16_swizzle: 0x0e,
  i8x16_splat: 0x0f,
  i16x8_splat: 0x10,
  i32x4_splat: 0x11,
  i64x2_splat: 0x12,
  f32x4_splat: 0x13,
  i8x16_extract_lane_u: 0x16,
  i16x8_extract_lane_u: 0x19,
  i32x4_extract_lane: 0x1b,
  i64x2_extract_lane: 0x1d,
  f32x4_extract_lane: 0x1f,
  i8x16_eq: 0x23,
  i16x8_eq: 0x2d,
  i16x8_lt_u: 0x30,
  i16x8_le_u: 0x34,
  i32x4_eq: 0x37,
  f32x4_gt: 0x44,
  v128_not: 0x4d,
  v128_and: 0x4e,
  v128_andnot: 0x4f,
  v128_or: 0x50,
  v128_xor: 0x51,
  v128_any_true: 0x53,
  v128_load64_zero: 0x5d,
  v128_store64_lane: 0x5b,
  i8x16_popcnt: 0x62,
  i8x16_bitmask: 0x64,
  i8x16_narrow_i16x8_s: 0x65,
  i8x16_shr_u: 0x6d,
  i8x16_add: 0x6e,
  i8x16_sub: 0x71,
  i16x8_extadd_pairwise_i8x16_s: 0x7c,
  i16x8_extadd_pairwise_i8x16_u: 0x7d,
  i32x4_extadd_pairwise_i16x8_s: 0x7e,
  i32x4_extadd_pairwise_i16x8_u: 0x7f,
  i16x8_bitmask: 0x84,
  i16x8_narrow_i32x4_s: 0x85,
  i16x8_narrow_i32x4_u: 0x86,
  i16x8_extend_low_i8x16_s: 0x87,
  i16x8_extend_high_i8x16_s: 0x88,
  i16x8_extend_low_i8x16_u: 0x89,
  i16x8_extend_high_i8x16_u: 0x8a,
  i16x8_shl: 0x8b,
  i16x8_shr_u: 0x8d,
  i16x8_add: 0x8e,
  i16x8_sub: 0x91,
  i16x8_mul: 0x95,
  i16x8_extmul_low_i8x16_s: 0x9c,
  i16x8_extmul_high_i8x16_s: 0x9d,
  i32x4_extend_low_i16x8_s: 0xa7,
  i32x4_extend_high_i16x8_s: 0xa8,
  i32x4_shl: 0xab,
  i32x4_shr_u: 0xad,
  i32x4_add: 0xae,
  i32x4_sub: 0xb1,
  i32x4_mul: 0xb5,
  i32x4_dot_i16x8_s: 0xba,
  f32x4_abs: 0xe0,
  f32x4_add: 0xe4,
  f32x4_sub: 0xe5,
  f32x4_mul: 0xe6,
  f32x4_min: 0xe8,
  f32x4_max: 0xe9,
  i32x4_trunc_sat_f32x4_s: 0xf8,
  f32x4_convert_i32x4_s: 0xfa,
} as const;

/** Block types: "empty", or one result of a value type. */
type BlockType = "void" | ValType;

/** Builds one function body. Each method appends an instruction and returns `this`. */
export class Fn {
  readonly code: number[] = [];
  private readonly locals: ValType[] = [];

  constructor(
    readonly name: string,
    readonly params: ValType[],
    readonly results: ValType[],
  ) {}

  /** Declares a local; returns its index (parameters come first). */
  local(type: ValType): number {
    this.locals.push(type);
    return this.params.length + this.locals.length - 1;
  }

  op(...bytes: number[]): this {
    this.code.push(...bytes);
    return this;
  }

  simd(opcode: number): this {
    this.code.push(0xfd);
    uleb(this.code, opcode);
    return this;
  }

  get(i: number): this {
    return this.localOp(Op.local_get, i);
  }
  set(i: number): this {
    return this.localOp(Op.local_set, i);
  }
  tee(i: number): this {
    return this.localOp(Op.local_tee, i);
  }
  /** local.get/set/tee: the opcode, then the local's index. */
  private localOp(opcode: number, i: number): this {
    this.code.push(opcode);
    uleb(this.code, i);
    return this;
  }
  i32(value: number): this {
    this.code.push(Op.i32_const);
    sleb(this.code, value);
    return this;
  }
  f32(value: number): this {
    this.code.push(Op.f32_const, ...new Uint8Array(new Float32Array([value]).buffer));
    return this;
  }

  /** A scalar load/store with its memarg (`align` is log2 of the alignment hint). */
  mem(opcode: number, offset = 0, align = 0): this {
    this.code.push(opcode);
    uleb(this.code, align);
    uleb(this.code, offset);
    return this;
  }
  /** A SIMD load/store with its memarg. */
  vmem(opcode: number, offset = 0, align = 0): this {
    this.simd(opcode);
    uleb(this.code, align);
    uleb(this.code, offset);
    return this;
  }
  /** v128.store64_lane / load lanes: memarg then the lane index. */
  vmemLane(opcode: number, lane: number, offset = 0, align = 0): this {
    this.vmem(opcode, offset, align);
    this.code.push(lane);
    return this;
  }
  /** Lane extract/replace: the lane index follows the opcode. */
  lane(opcode: number, lane: number): this {
    this.simd(opcode);
    this.code.push(lane);
    return this;
  }
  /** i8x16.shuffle with 16 byte-lane indices (0–15 first operand, 16–31 second). */
  shuffle(lanes: number[]): this {
    if (lanes.length !== 16) throw new Error("shuffle needs 16 lanes");
    this.simd(Simd.i8x16_shuffle);
    this.code.push(...lanes);
    return this;
  }
  /** i8x16.shuffle picking four 32-bit lanes (0–3 first operand, 4–7 second). */
  shuffle32(l0: number, l1: number, l2: number, l3: number): this {
    return this.shuffle([l0, l1, l2, l3].flatMap((l) => [4 * l, 4 * l + 1, 4 * l + 2, 4 * l + 3]));
  }
  v128const(bytes: ArrayLike<number>): this {
    if (bytes.length !== 16) throw new Error("v128.const needs 16 bytes");
    this.simd(Simd.v128_const);
    for (let i = 0; i < 16; i++) this.code.push(bytes[i] & 0xff);
    return this;
  }

  block(type: BlockType = "void"): this {
    return this.op(Op.block, type === "void" ? 0x40 : VALTYPE[type]);
  }
  loop(type: BlockType = "void"): this {
    return this.op(Op.loop, type === "void" ? 0x40 : VALTYPE[type]);
  }
  if(type: BlockType = "void"): this {
    return this.op(Op.if, type === "void" ? 0x40 : VALTYPE[type]);
  }
  else(): this {
    return this.op(Op.else);
  }
  end(): this {
    return this.op(Op.end);
  }
  br(depth: number): this {
    return this.op(Op.br, depth);
  }
  brIf(depth: number): this {
    return this.op(Op.br_if, depth);
  }

  /** The body as the code section wants it: locals (run-length grouped), code, end. */
  encodeBody(): number[] {
    const body: number[] = [];
    const groups: [number, ValType][] = [];
    for (const t of this.locals) {
      const last = groups[groups.length - 1];
      if (last && last[1] === t) last[0]++;
      else groups.push([1, t]);
    }
    uleb(body, groups.length);
    for (const [count, t] of groups) {
      uleb(body, count);
      body.push(VALTYPE[t]);
    }
    body.push(...this.code, Op.end);
    return body;
  }
}

function section(out: number[], id: number, content: number[]): void {
  out.push(id);
  uleb(out, content.length);
  for (const b of content) out.push(b);
}

function name(out: number[], s: string): void {
  const bytes = new TextEncoder().encode(s);
  uleb(out, bytes.length);
  out.push(...bytes);
}

/**
 * A module importing one memory as `env.memory` (so the host owns and grows it) and exporting
 * every function under its name.
 */
export function assemble(functions: Fn[], memoryMinPages = 1): Uint8Array<ArrayBuffer> {
  const out: number[] = [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00];

  const sigKeys: string[] = [];
  const typeOf = functions.map((f) => {
    const key = `${f.params.join(",")}->${f.results.join(",")}`;
    let i = sigKeys.indexOf(key);
    if (i < 0) i = sigKeys.push(key) - 1;
    return i;
  });
  const types: number[] = [];
  uleb(types, sigKeys.length);
  for (const key of sigKeys) {
    const f = functions[typeOf.indexOf(sigKeys.indexOf(key))];
    types.push(0x60);
    uleb(types, f.params.length);
    for (const p of f.params) types.push(VALTYPE[p]);
    uleb(types, f.results.length);
    for (const r of f.results) types.push(VALTYPE[r]);
  }
  section(out, 1, types);

  const imports: number[] = [];
  uleb(imports, 1);
  name(imports, "env");
  name(imports, "memory");
  imports.push(0x02, 0x00); // memory, limits without maximum
  uleb(imports, memoryMinPages);
  section(out, 2, imports);

  const funcs: number[] = [];
  uleb(funcs, functions.length);
  for (const t of typeOf) uleb(funcs, t);
  section(out, 3, funcs);

  const exports: number[] = [];
  uleb(exports, functions.length);
  functions.forEach((f, i) => {
    name(exports, f.name);
    exports.push(0x00);
    uleb(exports, i);
  });
  section(out, 7, exports);

  const code: number[] = [];
  uleb(code, functions.length);
  for (const f of functions) {
    const body = f.encodeBody();
    uleb(code, body.length);
    for (const b of body) code.push(b);
  }
  section(out, 10, code);

  return new Uint8Array(out);
}
