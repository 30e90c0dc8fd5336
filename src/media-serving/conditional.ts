/**
 * Conditional requests on media (RFC 9110 §13): a player or browser that already holds a file
 * revalidates it with `If-None-Match` (→ 304, no body) and resumes a download with `If-Range`
 * (the range only if the file is still the one it started; otherwise the whole new file).
 */
export interface Validators {
  etag: string;
  lastModifiedMs: number;
}

/** The ETags of an `If-None-Match` list, or "*". Weak prefixes compare equal (weak comparison). */
function etagList(header: string): string[] | "*" {
  if (header.trim() === "*") return "*";
  return (header.match(/(?:W\/)?"[^"]*"/g) ?? []).map((t) => t.replace(/^W\//, ""));
}

/** True when the client's copy is current: answer 304. `If-None-Match` wins over `If-Modified-Since`. */
export function notModified(
  headers: { ifNoneMatch?: string | null; ifModifiedSince?: string | null },
  v: Validators,
): boolean {
  if (headers.ifNoneMatch) {
    const tags = etagList(headers.ifNoneMatch);
    return tags === "*" || tags.includes(v.etag.replace(/^W\//, ""));
  }
  if (headers.ifModifiedSince) {
    const since = Date.parse(headers.ifModifiedSince);
    return Number.isFinite(since) && Math.floor(v.lastModifiedMs / 1000) * 1000 <= since;
  }
  return false;
}

/**
 * Whether a Range may be served under `If-Range`: only with a strong, exactly matching ETag, or
 * an HTTP-date equal to the file's Last-Modified (to the second). Anything else: the full file.
 */
export function rangeStillValid(ifRange: string | null | undefined, v: Validators): boolean {
  if (!ifRange) return true;
  const t = ifRange.trim();
  if (t.startsWith('"')) return !v.etag.startsWith("W/") && t === v.etag;
  if (t.startsWith("W/")) return false;
  const date = Date.parse(t);
  return Number.isFinite(date) && date === Math.floor(v.lastModifiedMs / 1000) * 1000;
}
