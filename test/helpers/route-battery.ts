/**
 * The route battery: walks every operation of an OpenAPI document and checks the rules every
 * route must keep (SPEC §2, §4, §8), through real requests:
 *
 *   unauthenticated  no credential                        → 401
 *   revoked          a revoked API key                    → 401
 *   read_only        a read_only key on a write           → 403
 *   session_only     an API key on a session-only route   → 403
 *   foreign_id       another account's real ids           → 404
 *   rate_limit       one past the limit                   → 429 with Retry-After and X-RateLimit-*
 *   validation       a malformed body                     → 422 `{detail: [{loc, msg, type}]}`
 *
 * and, for every answer it sees, that the status is one the operation documents. It returns the
 * failures as readable lines instead of throwing, so a test can assert `[]` on the real app and a
 * specific failure on a synthetic route (test/api/route-battery.test.ts).
 */

export const CHECKS = [
  "unauthenticated",
  "revoked",
  "read_only",
  "session_only",
  "foreign_id",
  "rate_limit",
  "validation",
] as const;
export type Check = (typeof CHECKS)[number];

/** An operation the battery leaves out of some checks, and why (keep the list short). */
export interface Exception {
  method: string;
  path: string;
  skip: readonly Check[];
  reason: string;
}

export interface Credentials {
  /** An `all` API key of the calling account. */
  key: string;
  readOnlyKey: string;
  /** An admin session of the calling account. */
  adminToken: string;
  /** A revoked API key (of any account). */
  revokedKey: string;
}

export interface BatteryTarget {
  fetch(req: Request): Response | Promise<Response>;
  /** The OpenAPI 3.1 document as served. */
  doc: any;
  caller: Credentials;
  /** Real ids owned by another account, by parameter / field name (`video_id`, …). */
  foreignIds: Record<string, string>;
  exceptions: readonly Exception[];
  /**
   * A credential nobody has used yet (for `rate_limit`, run against an app whose limits are all 1):
   * an `all` API key, or an admin session for session-only routes.
   */
  freshCredential?(kind: "key" | "session"): Promise<string>;
}

interface Operation {
  method: string;
  path: string;
  op: any;
}

const READS = new Set(["get", "head"]);
const METHODS = ["get", "post", "put", "patch", "delete", "head"];

export function operations(doc: any): Operation[] {
  const out: Operation[] = [];
  for (const [path, item] of Object.entries<any>(doc.paths ?? {})) {
    for (const method of METHODS) if (item[method]) out.push({ method, path, op: item[method] });
  }
  return out;
}

const isPublic = (op: any) => Array.isArray(op.security) && op.security.length === 0;
const sessionOnly = (op: any) =>
  Array.isArray(op.security) &&
  op.security.length > 0 &&
  op.security.every((s: Record<string, unknown>) => Object.keys(s).length === 1 && "sessionToken" in s);

/** Resolves a `$ref` into components, one level at a time. */
function deref(doc: any, schema: any): any {
  let s = schema;
  for (let i = 0; s?.$ref && i < 10; i++)
    s = s.$ref
      .split("/")
      .slice(1)
      .reduce((o: any, k: string) => o?.[k], doc);
  return s;
}

/** A minimal value the schema accepts: required fields only, examples where given. */
export function sampleOf(doc: any, schema: any, name = ""): unknown {
  const s = deref(doc, schema) ?? {};
  if (s.enum) return s.enum[0];
  if (s.anyOf || s.oneOf)
    return sampleOf(
      doc,
      (s.anyOf ?? s.oneOf).find((x: any) => deref(doc, x)?.type !== "null"),
      name,
    );
  const type = Array.isArray(s.type) ? s.type.find((x: string) => x !== "null") : s.type;
  switch (type) {
    case "object": {
      const o: Record<string, unknown> = {};
      for (const k of s.required ?? []) o[k] = sampleOf(doc, s.properties?.[k], k);
      // "At least one field" objects (PATCH bodies): add optional fields, in order, up to the minimum.
      for (const k of Object.keys(s.properties ?? {}))
        if (Object.keys(o).length < (s.minProperties ?? 0) && !(k in o)) o[k] = sampleOf(doc, s.properties[k], k);
      return o;
    }
    case "array":
      return Array.from({ length: Math.max(1, s.minItems ?? 1) }, () => sampleOf(doc, s.items, name));
    case "integer":
    case "number":
      return s.example ?? s.minimum ?? 1;
    case "boolean":
      return true;
    default:
      if (s.format === "binary") return new Blob([new Uint8Array(64)]);
      return s.example ?? "x".repeat(Math.max(1, s.minLength ?? 1));
  }
}

interface Built {
  url: string;
  body?: BodyInit;
  contentType?: string;
  /** Which names took another account's id. */
  foreign: string[];
}

/** A well-formed request for the operation; ids (path, required query and body fields) from `ids`. */
function build(doc: any, { path, op }: Operation, ids: Record<string, string>): Built {
  const foreign: string[] = [];
  const idFor = (name: string, fallback: unknown) => {
    if (name in ids) {
      foreign.push(name);
      return ids[name];
    }
    return fallback;
  };
  let url = path;
  const query = new URLSearchParams();
  for (const p of (op.parameters ?? []).map((x: any) => deref(doc, x))) {
    if (p.in === "path") {
      // Every `*_id` path parameter must take another account's real id; others (a file name) a sample.
      const v = idFor(p.name, p.name.endsWith("_id") ? undefined : sampleOf(doc, p.schema, p.name));
      if (v === undefined)
        throw new Error(`no id for path parameter "${p.name}"; add one to the battery's foreign ids`);
      url = url.replace(`{${p.name}}`, encodeURIComponent(String(v)));
    } else if (p.in === "query" && p.required) {
      query.set(p.name, String(idFor(p.name, sampleOf(doc, p.schema, p.name))));
    }
  }
  if (query.size) url += `?${query}`;
  const content = op.requestBody?.content;
  if (!content) return { url, foreign };
  const [type, media] = Object.entries<any>(content)[0];
  const sample = sampleOf(doc, media.schema) as Record<string, unknown>;
  const schema = deref(doc, media.schema);
  for (const k of Object.keys(sample)) sample[k] = idFor(k, sample[k]);
  for (const k of schema?.required ?? [])
    if (!(k in sample)) sample[k] = idFor(k, sampleOf(doc, schema.properties?.[k], k));
  if (type === "application/json") return { url, body: JSON.stringify(sample), contentType: type, foreign };
  if (type === "multipart/form-data") {
    const fd = new FormData();
    for (const [k, v] of Object.entries(sample)) fd.append(k, v instanceof Blob ? v : String(v));
    return { url, body: fd, foreign };
  }
  const form = new URLSearchParams();
  for (const [k, v] of Object.entries(sample)) form.set(k, String(v));
  return { url, body: form, contentType: type, foreign };
}

/** A body the operation's schema cannot accept, in the operation's own media type. */
function malformed(op: any): { body: BodyInit; contentType?: string } {
  const [type] = Object.keys(op.requestBody.content);
  if (type === "application/json") return { body: "[1, 2", contentType: type };
  if (type === "multipart/form-data") {
    const fd = new FormData();
    fd.append("unexpected_field", "x");
    return { body: fd };
  }
  return { body: "unexpected_field=x", contentType: type };
}

export async function runBattery(target: BatteryTarget, only: readonly Check[] = CHECKS): Promise<string[]> {
  const failures: string[] = [];
  const doc = target.doc;
  let forwarded = 0;

  const send = async (
    o: Operation,
    b: { url: string; body?: BodyInit; contentType?: string },
    token?: string,
    extra: Record<string, string> = {},
  ) => {
    const headers: Record<string, string> = { ...extra };
    if (token) headers.authorization = `Bearer ${token}`;
    if (b.contentType) headers["content-type"] = b.contentType;
    // One client address per request: limits keyed by address (sign-in) never mix the checks.
    headers["x-forwarded-for"] ??= `198.51.100.${++forwarded % 250}`;
    return target.fetch(
      new Request(`http://localhost${b.url}`, { method: o.method.toUpperCase(), headers, body: b.body }),
    );
  };

  const name = (o: Operation) => `${o.method.toUpperCase()} ${o.path}`;
  const documented = (o: Operation, res: Response, check: Check) => {
    if (!(String(res.status) in (o.op.responses ?? {})))
      failures.push(`${name(o)} [${check}]: answered ${res.status}, which the document does not list`);
  };
  const expectStatus = async (o: Operation, check: Check, res: Response, want: number, code?: string) => {
    documented(o, res, check);
    const body = await res.text();
    if (res.status !== want) {
      failures.push(`${name(o)} [${check}]: expected ${want}, got ${res.status} ${body.slice(0, 160)}`);
      return null;
    }
    let parsed: any = null;
    try {
      parsed = JSON.parse(body);
    } catch {
      failures.push(`${name(o)} [${check}]: ${want} without a JSON error body`);
      return null;
    }
    if (code && parsed?.detail?.code !== code && !(Array.isArray(parsed?.detail) && code === "detail[]")) {
      failures.push(
        `${name(o)} [${check}]: expected code ${code}, got ${JSON.stringify(parsed?.detail).slice(0, 160)}`,
      );
    }
    return parsed;
  };

  for (const o of operations(doc)) {
    const skip = new Set(
      target.exceptions.filter((e) => e.method === o.method && e.path === o.path).flatMap((e) => e.skip),
    );
    const run = (c: Check) => only.includes(c) && !skip.has(c);
    let built: Built;
    try {
      built = build(doc, o, target.foreignIds);
    } catch (e) {
      failures.push(`${name(o)}: ${(e as Error).message}`);
      continue;
    }
    const owner = sessionOnly(o.op) ? target.caller.adminToken : target.caller.key;

    if (run("unauthenticated")) await expectStatus(o, "unauthenticated", await send(o, built), 401, "UNAUTHORIZED");
    if (run("revoked")) await expectStatus(o, "revoked", await send(o, built, target.caller.revokedKey), 401);
    if (run("read_only") && !READS.has(o.method))
      await expectStatus(
        o,
        "read_only",
        await send(o, build(doc, o, target.foreignIds), target.caller.readOnlyKey),
        403,
        "FORBIDDEN",
      );
    if (run("session_only") && sessionOnly(o.op))
      await expectStatus(
        o,
        "session_only",
        await send(o, build(doc, o, target.foreignIds), target.caller.key),
        403,
        "FORBIDDEN",
      );
    if (run("foreign_id") && built.foreign.length > 0) {
      await expectStatus(o, "foreign_id", await send(o, build(doc, o, target.foreignIds), owner), 404);
    }
    if (run("validation") && o.op.requestBody) {
      const m = malformed(o.op);
      const parsed = await expectStatus(
        o,
        "validation",
        await send(o, { url: built.url, ...m }, owner),
        422,
        "detail[]",
      );
      const items = parsed?.detail;
      if (
        parsed &&
        !(
          Array.isArray(items) &&
          items.length > 0 &&
          items.every((d: any) => Array.isArray(d.loc) && typeof d.msg === "string" && typeof d.type === "string")
        )
      ) {
        failures.push(
          `${name(o)} [validation]: 422 body is not {detail: [{loc, msg, type}]}: ${JSON.stringify(parsed).slice(0, 160)}`,
        );
      }
    }
    if (run("rate_limit")) {
      if (!target.freshCredential) throw new Error("rate_limit needs target.freshCredential (and limits of 1)");
      const token = isPublic(o.op) ? undefined : await target.freshCredential(sessionOnly(o.op) ? "session" : "key");
      const address = { "x-forwarded-for": `203.0.113.${++forwarded % 250}` };
      const first = await send(o, build(doc, o, target.foreignIds), token, address);
      documented(o, first, "rate_limit");
      await first.arrayBuffer();
      if (first.status === 429) failures.push(`${name(o)} [rate_limit]: the first request was already limited`);
      else if (!first.headers.get("x-ratelimit-limit"))
        failures.push(`${name(o)} [rate_limit]: no X-RateLimit-Limit header (${first.status}): is the route limited?`);
      const second = await send(o, build(doc, o, target.foreignIds), token, address);
      if (await expectStatus(o, "rate_limit", second, 429, "RATE_LIMIT_EXCEEDED")) {
        for (const h of ["retry-after", "x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset"]) {
          if (!second.headers.get(h)) failures.push(`${name(o)} [rate_limit]: 429 without ${h}`);
        }
      }
    }
  }
  return failures;
}
