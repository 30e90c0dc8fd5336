import { randomBytes } from "node:crypto";

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/** Uniform base62 string from a CSPRNG (rejection sampling, so no modulo bias). */
export function randomBase62(length: number): string {
  let out = "";
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248) out += BASE62[byte % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

export type IdPrefix =
  | "usr"
  | "acc"
  | "col"
  | "vid"
  | "job"
  | "key"
  | "wh"
  | "del"
  | "evt"
  | "req"
  | "ses"
  | "fb"
  | "mbr";

/** Prefixed random id, e.g. `vid_3kT9…` (SPEC §2). */
export const newId = (prefix: IdPrefix): string => `${prefix}_${randomBase62(20)}`;

export const nowIso = (ms: number = Date.now()): string => new Date(ms).toISOString();
