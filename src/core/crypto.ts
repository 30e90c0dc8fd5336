import { createHash, timingSafeEqual } from "node:crypto";

export const sha256Hex = (text: string): string => createHash("sha256").update(text).digest("hex");

/** Constant-time comparison of two hex digests (or any equal-length strings). */
export function constantTimeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a);
  const bb = Buffer.from(b);
  return ab.length === bb.length && timingSafeEqual(ab, bb);
}
