/**
 * One `Range: bytes=…` header against a file of `size` bytes (RFC 9110 §14). Multi-range requests
 * and anything malformed or in another unit are answered with the whole file (a server may ignore
 * Range); a well-formed range that lies entirely past the end is unsatisfiable (416).
 */
export type RangeResult =
  | { kind: "full" }
  | { kind: "partial"; start: number; end: number }
  | { kind: "unsatisfiable" };

const SINGLE = /^bytes=(\d*)-(\d*)$/;

export function parseRange(header: string | null | undefined, size: number): RangeResult {
  if (!header) return { kind: "full" };
  const h = header.trim().replace(/\s+/g, "");
  if (!/^bytes=/i.test(h) || h.includes(",")) return { kind: "full" };
  const m = SINGLE.exec(h.replace(/^bytes=/i, "bytes="));
  if (!m || (m[1] === "" && m[2] === "")) return { kind: "full" };
  if (m[1] === "") {
    // Suffix: the last n bytes.
    const n = Number(m[2]);
    if (!Number.isSafeInteger(n)) return { kind: "full" };
    if (n === 0 || size === 0) return { kind: "unsatisfiable" };
    return { kind: "partial", start: Math.max(0, size - n), end: size - 1 };
  }
  const start = Number(m[1]);
  const last = m[2] === "" ? null : Number(m[2]);
  if (!Number.isSafeInteger(start) || (last !== null && !Number.isSafeInteger(last))) return { kind: "full" };
  if (last !== null && last < start) return { kind: "full" };
  if (start >= size) return { kind: "unsatisfiable" };
  return { kind: "partial", start, end: last === null ? size - 1 : Math.min(last, size - 1) };
}
