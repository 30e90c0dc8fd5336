import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { toolResult } from "../../src/agent/mcp-server.ts";
import { TOOLS } from "../../src/agent/tools.ts";
import {
  addVideo,
  createCollection,
  createTenant,
  indexVideo,
  type SearchTestApp,
  startSearchApp,
  type Tenant,
} from "../search/helpers.ts";

/**
 * schema.json against what /v1/agent/call accepts, the shared agent rate limit on both HTTP
 * transports (a real listening server for the MCP client), transcripts, and the image cap.
 */
let t: SearchTestApp;
let tenant: Tenant;
let server: ReturnType<typeof Bun.serve>;
let base: string;
let videoId: string;
let collectionId: string;

beforeAll(async () => {
  t = await startSearchApp();
  tenant = await createTenant(t);
  collectionId = await createCollection(t, tenant.accountId, "Talks");
  videoId = await addVideo(t, tenant.accountId, collectionId, { filename: "talk.mp4", duration: 30 });
  await indexVideo(t, videoId, {
    transcript: [
      { start: 0, end: 2, text: "hello there" },
      { start: 2, end: 5, text: "general kenobi" },
      { start: 10, end: 12, text: "much later" },
    ],
  });
  server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (req) => t.app.fetch(req) });
  base = `http://127.0.0.1:${server.port}`;
});

afterAll(async () => {
  await server?.stop(true);
  await t?.close();
});

const newKey = async (permissions: "all" | "read_only" = "read_only") =>
  (await t.app.services.apiKeys.create(tenant.accountId, { name: `k${Math.random()}`, permissions })).key;

async function call(key: string, tool: unknown, input: unknown) {
  const res = await fetch(`${base}/v1/agent/call`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ tool, input }),
  });
  return { res, body: (await res.json()) as any };
}

// ---- a structural JSON Schema check (draft 2020-12 keywords, types, references) -------------------

const KEYWORDS = new Set([
  "$schema",
  "$id",
  "$ref",
  "$defs",
  "type",
  "properties",
  "required",
  "additionalProperties",
  "items",
  "prefixItems",
  "enum",
  "const",
  "anyOf",
  "oneOf",
  "allOf",
  "not",
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "minLength",
  "maxLength",
  "pattern",
  "format",
  "minItems",
  "maxItems",
  "uniqueItems",
  "propertyNames",
  "description",
  "title",
  "default",
  "examples",
  "readOnly",
  "writeOnly",
]);
const TYPES = new Set(["object", "array", "string", "number", "integer", "boolean", "null"]);

/** Every problem found in a schema node and below it (empty = well-formed). */
function schemaProblems(s: unknown, at: string, root: any): string[] {
  if (typeof s === "boolean") return [];
  if (!s || typeof s !== "object" || Array.isArray(s)) return [`${at}: a schema is an object or a boolean`];
  const o = s as Record<string, any>;
  const out: string[] = [];
  for (const k of Object.keys(o)) if (!KEYWORDS.has(k)) out.push(`${at}: unknown keyword ${k}`);
  const types = o.type === undefined ? [] : Array.isArray(o.type) ? o.type : [o.type];
  for (const ty of types) if (!TYPES.has(ty)) out.push(`${at}: bad type ${ty}`);
  if (o.properties !== undefined) {
    if (typeof o.properties !== "object") out.push(`${at}: properties is an object`);
    else
      for (const [k, v] of Object.entries(o.properties)) out.push(...schemaProblems(v, `${at}.properties.${k}`, root));
  }
  if (o.required !== undefined) {
    if (!Array.isArray(o.required) || o.required.some((r: unknown) => typeof r !== "string"))
      out.push(`${at}: required is a list of names`);
    else
      for (const r of o.required)
        if (!o.properties || !(r in o.properties)) out.push(`${at}: required ${r} is not a property`);
  }
  if (o.additionalProperties !== undefined && typeof o.additionalProperties !== "boolean")
    out.push(...schemaProblems(o.additionalProperties, `${at}.additionalProperties`, root));
  if (o.items !== undefined) out.push(...schemaProblems(o.items, `${at}.items`, root));
  for (const k of ["anyOf", "oneOf", "allOf"]) {
    if (o[k] !== undefined) {
      if (!Array.isArray(o[k]) || !o[k].length) out.push(`${at}: ${k} is a non-empty list`);
      else o[k].forEach((x: unknown, i: number) => out.push(...schemaProblems(x, `${at}.${k}[${i}]`, root)));
    }
  }
  if (o.enum !== undefined && (!Array.isArray(o.enum) || !o.enum.length)) out.push(`${at}: enum is a non-empty list`);
  for (const k of ["minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems"])
    if (o[k] !== undefined && typeof o[k] !== "number") out.push(`${at}: ${k} is a number`);
  if (o.$ref !== undefined) {
    const m = /^#\/\$defs\/(.+)$/.exec(o.$ref);
    if (!m || !root.$defs?.[m[1]]) out.push(`${at}: $ref ${o.$ref} does not resolve`);
  }
  if (o.$defs) for (const [k, v] of Object.entries(o.$defs)) out.push(...schemaProblems(v, `${at}.$defs.${k}`, root));
  return out;
}

/** A value the schema accepts, for the fields that need one (ids get the fixture's). */
function validValue(name: string, s: any): unknown {
  if (name === "video_id") return videoId;
  if (name === "collection_id") return collectionId;
  if (name === "job_id") return "job_nope";
  if (s.enum) return s.enum[0];
  const ty = Array.isArray(s.type) ? s.type[0] : s.type;
  if (ty === "array") return [validValue("", s.items)];
  if (ty === "integer" || ty === "number") return s.minimum ?? 1;
  if (ty === "string") return "x";
  return null;
}

/** A value of the wrong JSON type for the schema. */
const wrongValue = (s: any): unknown =>
  (Array.isArray(s.type) ? s.type : [s.type]).includes("string") ? 12 : "twelve";

describe("GET /v1/agent/schema.json", () => {
  it("is well-formed draft 2020-12 JSON Schema, public, one entry per tool", async () => {
    const res = await fetch(`${base}/v1/agent/schema.json`);
    expect(res.status).toBe(200);
    const doc = await res.json();
    expect(doc.$schema).toBe("https://json-schema.org/draft/2020-12/schema");
    expect(doc.tools.map((x: any) => x.name)).toEqual(TOOLS.map((x) => x.name));
    for (const tool of doc.tools) {
      expect(tool.type).toBe("function");
      expect(tool.description.length).toBeGreaterThan(20);
      for (const part of ["parameters", "output_schema"]) {
        expect(tool[part].type, `${tool.name}.${part}`).toBe("object");
        expect(schemaProblems(tool[part], `${tool.name}.${part}`, tool[part])).toEqual([]);
      }
      expect(tool.parameters.additionalProperties).toBe(false);
    }
    // The checker itself catches what it should.
    expect(schemaProblems({ type: "obj", required: ["a"], properties: {}, nope: 1 }, "x", {})).toHaveLength(3);
  });

  it("agrees with /v1/agent/call: required, types, enums, bounds and unknown fields are 422 naming the field; a valid input is not", async () => {
    const doc = await (await fetch(`${base}/v1/agent/schema.json`)).json();
    for (const tool of doc.tools) {
      const key = await newKey(); // a fresh key per tool: these calls would pass the agent limit of 30/min
      const p = tool.parameters;
      const valid = Object.fromEntries((p.required ?? []).map((k: string) => [k, validValue(k, p.properties[k])]));
      if (tool.name === "search_videos") valid.query = "a dog";
      const ok = await call(key, tool.name, valid);
      expect(ok.res.status, `${tool.name} ${JSON.stringify(ok.body)}`).not.toBe(422);

      const extra = await call(key, tool.name, { ...valid, not_a_field: 1 });
      expect(extra.res.status).toBe(422);
      expect(extra.body.detail[0].loc).toEqual(["body", "input", "not_a_field"]);

      for (const r of p.required ?? []) {
        const { [r]: _, ...rest } = valid;
        const missing = await call(key, tool.name, rest);
        expect(missing.res.status).toBe(422);
        expect(missing.body.detail.map((d: any) => d.loc)).toContainEqual(["body", "input", r]);
      }
      for (const [name, s] of Object.entries<any>(p.properties)) {
        const bad = await call(key, tool.name, { ...valid, [name]: wrongValue(s) });
        expect(bad.res.status, `${tool.name}.${name}`).toBe(422);
        expect(bad.body.detail.map((d: any) => d.loc)).toContainEqual(["body", "input", name]);
        if (s.maximum !== undefined) {
          const over = await call(key, tool.name, { ...valid, [name]: s.maximum + 1 });
          expect(over.res.status, `${tool.name}.${name} > max`).toBe(422);
          expect(over.body.detail[0]).toMatchObject({ loc: ["body", "input", name], type: "less_than_equal" });
        }
        const items = s.items ?? s;
        if (items.enum) {
          const value = s.items ? ["not-a-choice"] : "not-a-choice";
          const notOne = await call(key, tool.name, { ...valid, [name]: value });
          expect(notOne.res.status, `${tool.name}.${name} enum`).toBe(422);
          // And every listed choice is accepted.
          for (const choice of items.enum) {
            const r = await call(await newKey(), tool.name, { ...valid, [name]: s.items ? [choice] : choice });
            expect(r.res.status, `${tool.name}.${name}=${choice}`).not.toBe(422);
          }
        }
      }
    }
  });

  it("an unknown tool, a missing tool and a non-object input are 422 at the field", async () => {
    const key = await newKey();
    expect((await call(key, "drop_tables", {})).body.detail[0]).toMatchObject({ loc: ["body", "tool"], type: "enum" });
    const noTool = await fetch(`${base}/v1/agent/call`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ input: {} }),
    });
    expect(noTool.status).toBe(422);
    expect((await noTool.json()).detail[0].loc).toEqual(["body", "tool"]);
    const notObject = await call(key, "list_videos", "everything");
    expect(notObject.res.status).toBe(422);
    expect(notObject.body.detail[0].loc).toEqual(["body", "input"]);
  });
});

describe("the agent rate limit (30 a minute per key, shared by /v1/agent/call and /v1/mcp)", () => {
  /** An MCP client whose fetch records the last response's headers. */
  async function mcpClient(key: string) {
    const seen: { headers?: Headers; status?: number } = {};
    const client = new Client({ name: "t", version: "1" });
    const fetchRecording = async (url: string | URL, init?: RequestInit) => {
      const res = await fetch(url, init);
      seen.headers = res.headers;
      seen.status = res.status;
      return res;
    };
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${base}/v1/mcp`), {
        fetch: fetchRecording,
        requestInit: { headers: { authorization: `Bearer ${key}` } },
      }),
    );
    return { client, seen };
  }

  /** One JSON-RPC request (or a batch) posted as an MCP client would, without the handshake (the route is stateless). */
  const rpc = (key: string, body: unknown) => rpcText(key, JSON.stringify(body));
  /** The same with the body as sent, JSON or not. */
  const rpcText = (key: string, text: string) =>
    fetch(`${base}/v1/mcp`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${key}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-protocol-version": "2025-06-18",
      },
      body: text,
    });

  it("the 31st /call is 429 with Retry-After; then every MCP message on that key is refused readably: the handshake a JSON-RPC error, a tools/call a tool error", async () => {
    const key = await newKey();
    for (let i = 0; i < 30; i++) {
      const { res } = await call(key, "list_collections", {});
      expect(res.status).toBe(200);
      expect(res.headers.get("x-ratelimit-remaining")).toBe(String(29 - i));
    }
    const over = await call(key, "list_collections", {});
    expect(over.res.status).toBe(429);
    expect(Number(over.res.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(over.body.detail.code).toBe("RATE_LIMIT_EXCEEDED");

    // The handshake counts too (SPEC §8: every MCP message): the client cannot even connect.
    await expect(mcpClient(key)).rejects.toThrow(/RATE_LIMIT_EXCEEDED \(429\)/);
    const list = await rpc(key, { jsonrpc: "2.0", id: 1, method: "tools/list" });
    expect(list.status).toBe(200); // an answer the agent reads, not a transport failure
    expect(Number(list.headers.get("retry-after"))).toBeGreaterThan(0);
    expect((await list.json()).error.message).toMatch(/^RATE_LIMIT_EXCEEDED \(429\): /);
    const toolCall = await rpc(key, {
      jsonrpc: "2.0",
      id: 2,
      method: "tools/call",
      params: { name: "list_collections", arguments: {} },
    });
    expect(toolCall.status).toBe(200);
    const r = (await toolCall.json()).result;
    expect(r.isError).toBe(true);
    expect(r.content[0].text).toMatch(/^RATE_LIMIT_EXCEEDED \(429\): /);

    // Another key is untouched; the window passing lets the first one in again.
    expect((await call(await newKey(), "list_collections", {})).res.status).toBe(200);
    t.clock.now += 61_000;
    expect((await call(key, "list_collections", {})).res.status).toBe(200);
  });

  it("every MCP message spends the key's minute, the handshake and tools/list included; /call then gets 429", async () => {
    const key = await newKey("all");
    const { client, seen } = await mcpClient(key); // initialize + notifications/initialized: 2
    expect((await client.listTools()).tools).toHaveLength(9); // 3
    expect(seen.headers!.get("x-ratelimit-remaining")).toBe("27");
    for (let i = 0; i < 27; i++) {
      const r: any = await client.callTool({ name: "get_transcript", arguments: { video_id: videoId } });
      expect(r.isError, r.content[0].text).toBeFalsy();
      expect(seen.headers!.get("x-ratelimit-remaining")).toBe(String(26 - i));
    }
    const r: any = await client.callTool({ name: "get_transcript", arguments: { video_id: videoId } });
    expect(r.content[0].text).toMatch(/^RATE_LIMIT_EXCEEDED/);
    expect(seen.status).toBe(200);
    expect(Number(seen.headers!.get("retry-after"))).toBeGreaterThan(0);
    await client.close();
    const rest = await call(key, "list_videos", {});
    expect(rest.res.status).toBe(429);
    expect(rest.res.headers.get("retry-after")).not.toBeNull();
  });

  it("a batch counts each of its messages, all or none: 10 tools/list spend 10; a batch that does not fit runs nothing; more than 10 is refused", async () => {
    const key = await newKey();
    const batch = (n: number, from = 0) =>
      Array.from({ length: n }, (_, k) => ({ jsonrpc: "2.0", id: from + k, method: "tools/list" }));
    const first = await rpc(key, batch(10));
    expect(first.status).toBe(200);
    expect(first.headers.get("x-ratelimit-remaining")).toBe("20");
    expect((await first.json()).map((m: any) => m.result.tools.length)).toEqual(Array(10).fill(9));
    await rpc(key, batch(10, 10));
    expect((await rpc(key, batch(5, 20))).headers.get("x-ratelimit-remaining")).toBe("5");
    // 6 do not fit in the 5 left: none runs, each is answered over the limit, nothing is spent.
    const over = await rpc(key, batch(6, 30));
    expect(over.status).toBe(200);
    expect(over.headers.get("x-ratelimit-remaining")).toBe("5");
    expect(Number(over.headers.get("retry-after"))).toBeGreaterThan(0);
    const answers = await over.json();
    expect(answers.map((m: any) => m.id)).toEqual([30, 31, 32, 33, 34, 35]);
    expect(answers.every((m: any) => /^RATE_LIMIT_EXCEEDED/.test(m.error.message))).toBe(true);
    expect((await rpc(key, batch(5, 40))).status).toBe(200);
    // Past the batch bound: refused whole, nothing of it runs; the refusal spends one message.
    const big = await rpc(await newKey(), batch(11));
    expect(big.status).toBe(400);
    expect(big.headers.get("x-ratelimit-remaining")).toBe("29");
    expect((await big.json()).error).toMatchObject({ code: -32600, message: expect.stringMatching(/at most 10/) });
  });

  it("refused bodies (too deep, not JSON) spend the key's minute too: past it they are 429 with Retry-After, and nothing else passes", async () => {
    const key = await newKey();
    const post = (text: string) => rpcText(key, text);
    for (let i = 0; i < 30; i++) {
      const res = await post(i % 2 ? "{nope" : "[".repeat(100));
      expect(res.status).toBe(400);
      expect(res.headers.get("x-ratelimit-remaining")).toBe(String(29 - i));
      await res.arrayBuffer();
    }
    const over = await post("[".repeat(100));
    expect(over.status).toBe(429);
    expect(Number(over.headers.get("retry-after"))).toBeGreaterThan(0);
    expect((await over.json()).error).toMatchObject({
      code: -32000,
      message: expect.stringMatching(/^RATE_LIMIT_EXCEEDED \(429\)/),
    });
    // The minute is spent for good requests as well.
    expect((await (await rpc(key, { jsonrpc: "2.0", id: 1, method: "tools/list" })).json()).error.message).toMatch(
      /^RATE_LIMIT_EXCEEDED/,
    );
  });
});

describe("get_transcript and get_moment read what was said", () => {
  it("returns timed segments, filtered by start and end; end before start is a 422", async () => {
    const key = await newKey();
    const all = await call(key, "get_transcript", { video_id: videoId });
    expect(all.body.data).toEqual({
      video_id: videoId,
      filename: "talk.mp4",
      segments: [
        { start_secs: 0, end_secs: 2, text: "hello there" },
        { start_secs: 2, end_secs: 5, text: "general kenobi" },
        { start_secs: 10, end_secs: 12, text: "much later" },
      ],
      truncated: false,
    });
    expect(
      (await call(key, "get_transcript", { video_id: videoId, start: 3, end: 11 })).body.data.segments.map(
        (s: any) => s.text,
      ),
    ).toEqual(["general kenobi", "much later"]);
    expect(
      (await call(key, "get_transcript", { video_id: videoId, start: 6 })).body.data.segments.map((s: any) => s.text),
    ).toEqual(["much later"]);
    expect(
      (await call(key, "get_transcript", { video_id: videoId, end: 1 })).body.data.segments.map((s: any) => s.text),
    ).toEqual(["hello there"]);
    const bad = await call(key, "get_transcript", { video_id: videoId, start: 5, end: 1 });
    expect(bad.res.status).toBe(422);
    expect(bad.body.detail[0].loc).toEqual(["body", "input", "end"]);

    const moment = await call(key, "get_moment", { video_id: videoId, timestamp: 2.5 });
    expect(moment.body.data).toMatchObject({
      video_id: videoId,
      filename: "talk.mp4",
      transcript: "hello there general kenobi",
      scene_start: null,
    });
    const past = await call(key, "get_moment", { video_id: videoId, timestamp: 31 });
    expect(past.res.status).toBe(422);
    expect(past.body.detail[0].loc).toEqual(["body", "input", "timestamp"]);
  });

  it("a long transcript comes in pages of 500 segments", async () => {
    const long = await addVideo(t, tenant.accountId, collectionId, { filename: "long.mp4", duration: 600 });
    await indexVideo(t, long, {
      transcript: Array.from({ length: 501 }, (_, i) => ({ start: i, end: i + 1, text: `line ${i}` })),
    });
    const key = await newKey();
    const first = (await call(key, "get_transcript", { video_id: long })).body.data;
    expect(first.segments).toHaveLength(500);
    expect(first.truncated).toBe(true);
    const rest = (await call(key, "get_transcript", { video_id: long, start: first.segments.at(-1).end_secs })).body
      .data;
    expect(rest.segments.map((s: any) => s.text)).toEqual(["line 500"]);
    expect(rest.truncated).toBe(false);
  });
});

describe("MCP answers", () => {
  it("carry at most 8 images; the summary numbers the ones sent and cites every clip", () => {
    const search = TOOLS.find((x) => x.name === "search_videos")!;
    const jpeg = Buffer.from([0xff, 0xd8, 0xff, 0xd9]).toString("base64");
    const clips = Array.from({ length: 12 }, (_, i) => ({
      video_id: "vid_a",
      filename: "a.mp4",
      collection_id: "col_a",
      start_secs: i * 65,
      end_secs: i * 65 + 3,
      relevance_score: 0.9,
      raw_score: 0.3,
      type: "frame",
      text_snippet: null,
      clip_url: "http://x/#t=0,1",
      thumbnail_url: null,
      thumbnail_base64: jpeg,
    }));
    const r = toolResult(search, { clips, total_videos: 1, modes: ["video"], skipped_modes: {}, suggestions: [] });
    expect(r.content.filter((c) => c.type === "image")).toHaveLength(8);
    const text = (r.content[0] as { text: string }).text;
    expect(text).toContain("(image 8)");
    expect(text).not.toContain("(image 9)");
    expect(text).toContain("12. [a.mp4 11:55–11:58]");
    expect((r.structuredContent as any).clips.every((c: any) => c.thumbnail_base64 === null)).toBe(true);
  });
});
