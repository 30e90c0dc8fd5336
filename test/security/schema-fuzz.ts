import fc from "fast-check";
import type { Tenant, TestApp } from "../helpers/app.ts";

/**
 * Every request schema the API documents, fed arbitrary input (issue 9): the OpenAPI document
 * lists each operation with its path, query and body fields; fast-check builds requests from
 * those names plus junk. Invariants: never a 5xx (a 503 only with a documented code), and a
 * rejected write changes nothing a client can see. Shared by test/security/schema-fuzz.test.ts
 * and bench/properties.ts.
 */
interface Op {
  method: string;
  path: string;
  pathParams: string[];
  query: string[];
  body: { type: string; fields: string[] } | null;
}

const SKIP = new Set([
  "post /v1/upload", // a streamed body, fuzzed through the multipart parser's own properties
  "delete /v1/auth/sessions/current", // would end the session the fuzzer runs with
]);

export async function operations(t: TestApp): Promise<Op[]> {
  const doc = (await (await t.request("GET", "/v1/openapi.json")).json()) as any;
  const ops: Op[] = [];
  for (const [path, item] of Object.entries<any>(doc.paths)) {
    for (const [method, op] of Object.entries<any>(item)) {
      if (SKIP.has(`${method} ${path}`)) continue;
      const params = (op.parameters ?? []) as { name: string; in: string }[];
      const content = op.requestBody?.content ?? {};
      const type = Object.keys(content)[0];
      const schema = type ? resolve(doc, content[type].schema) : null;
      ops.push({
        method: method.toUpperCase(),
        path,
        pathParams: params.filter((p) => p.in === "path").map((p) => p.name),
        query: params.filter((p) => p.in === "query").map((p) => p.name),
        body: type ? { type, fields: Object.keys(schema?.properties ?? {}) } : null,
      });
    }
  }
  return ops;
}

const resolve = (doc: any, s: any) => (s?.$ref ? doc.components.schemas[s.$ref.split("/").pop()] : s);

const junkValue = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.string(),
  fc.constantFrom(
    "",
    "0",
    "-1",
    "1e309",
    "NaN",
    "true",
    "null",
    "col_",
    "vid_x",
    "../../etc/passwd",
    "\u0000",
    "a".repeat(5000),
    "http://127.0.0.1/",
    "https://[::1]/x",
  ),
);

function requestArb(op: Op, ids: string[]) {
  const idArb = fc.oneof(fc.constantFrom(...ids), fc.string({ minLength: 1 }));
  const pathArb = fc.tuple(...op.pathParams.map(() => idArb)).map((vals) => {
    let p = op.path;
    op.pathParams.forEach((n, i) => (p = p.replace(`{${n}}`, encodeURIComponent(vals[i] as string))));
    return p;
  });
  const queryArb = fc.dictionary(
    fc.oneof(fc.constantFrom(...(op.query.length ? op.query : ["x"])), fc.string()),
    fc.string(),
    { maxKeys: 4 },
  );
  const bodyArb = op.body
    ? fc.oneof(
        fc.dictionary(
          fc.oneof(fc.constantFrom(...(op.body.fields.length ? op.body.fields : ["x"])), fc.string()),
          junkValue,
          { maxKeys: 6 },
        ),
        junkValue,
      )
    : fc.constant(undefined);
  return fc.record({
    path: pathArb,
    query: queryArb,
    body: bodyArb,
    contentType: fc.constantFrom(op.body?.type ?? "application/json", "application/json", "text/plain"),
  });
}

function encodeBody(type: string, body: unknown): string | FormData | undefined {
  if (body === undefined) return undefined;
  if (type === "application/json") return JSON.stringify(body);
  const flat = body !== null && typeof body === "object" && !Array.isArray(body) ? Object.entries(body) : [["x", body]];
  const strings = flat.map(([k, v]) => [k, typeof v === "string" ? v : (JSON.stringify(v) ?? "")] as [string, string]);
  if (type === "multipart/form-data") {
    const fd = new FormData();
    for (const [k, v] of strings) fd.append(k, v);
    return fd;
  }
  return new URLSearchParams(strings).toString();
}

/** What a client can see of the account's state. */
async function fingerprint(t: TestApp, token: string): Promise<string> {
  const parts = [];
  for (const p of ["/v1/collections?per_page=100", "/v1/api_keys", "/v1/webhooks", "/v1/videos?per_page=100"]) {
    const r = await t.request("GET", p, { token });
    parts.push(JSON.stringify(((await r.json()) as { data: unknown }).data));
  }
  return parts.join("\n");
}

export async function fuzzSchemas(
  t: TestApp,
  tenant: Tenant,
  runs: number,
  ids: string[],
): Promise<{ cases: number; statuses: Record<number, number> }> {
  const ops = await operations(t);
  const statuses: Record<number, number> = {};
  let cases = 0;
  const arb = fc.constantFrom(...ops).chain((op) => requestArb(op, ids).map((req) => ({ op, req })));
  await fc.assert(
    fc.asyncProperty(arb, async ({ op, req }) => {
      const write = op.method !== "GET";
      const before = write ? await fingerprint(t, tenant.adminToken) : "";
      const qs = new URLSearchParams(req.query).toString();
      const body = encodeBody(req.contentType, req.body);
      const headers: Record<string, string> =
        body instanceof FormData || body === undefined ? {} : { "content-type": req.contentType };
      const res = await t.request(op.method, `${req.path}${qs ? `?${qs}` : ""}`, {
        token: tenant.adminToken,
        body,
        headers,
      });
      const text = await res.text();
      cases++;
      statuses[res.status] = (statuses[res.status] ?? 0) + 1;
      if (res.status >= 500) {
        const code = JSON.parse(text)?.detail?.code;
        if (!(res.status === 503 && ["MODEL_NOT_INSTALLED", "SEARCH_UNAVAILABLE"].includes(code)))
          throw new Error(`${op.method} ${req.path} → ${res.status} ${text.slice(0, 300)}`);
      }
      if (res.status >= 400 && write) {
        const after = await fingerprint(t, tenant.adminToken);
        if (after !== before) throw new Error(`${op.method} ${req.path} → ${res.status} but state changed`);
      }
    }),
    { numRuns: runs },
  );
  return { cases, statuses };
}
