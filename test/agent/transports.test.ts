import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { backendEnv } from "../pg/backend.ts";
import { BUN, MAIN, runCliJson } from "../helpers/cli.ts";
import { ffmpeg } from "../helpers/ffmpeg.ts";
import { type AgentFixture, b64, jpegDimensions, startAgentFixture } from "./setup.ts";

/**
 * Every tool through the three transports against one running `vsearch serve`: POST
 * /v1/agent/call over HTTP, the SDK's MCP client over streamable HTTP at /v1/mcp, and the SDK's
 * stdio client spawning `vsearch mcp` on the same data dir beside the server. The three must agree.
 */

type Answer =
  | { ok: true; data: any; images: string[]; text: string }
  | { ok: false; status: number; code: string; text: string };
type Caller = (tool: string, input: unknown) => Promise<Answer>;

const ENV = { VSEARCH_WEBHOOK_ALLOW_NETWORKS: "127.0.0.1/32" };
let f: AgentFixture;
let imageServer: ReturnType<typeof Bun.serve>;
let redUrl: string;
let httpClient: Client;
let stdioClient: Client;
let stderr = "";
const callers: Record<"call" | "mcp-http" | "mcp-stdio", Caller> = {} as never;

async function postCall(key: string | null, body: unknown) {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (key) headers.authorization = `Bearer ${key}`;
  return fetch(`${f.url}/v1/agent/call`, { method: "POST", headers, body: JSON.stringify(body) });
}

function mcpCaller(client: Client): Caller {
  return async (tool, input) => {
    const r: any = await client.callTool({ name: tool, arguments: input as Record<string, unknown> });
    const text = r.content.find((c: any) => c.type === "text")?.text ?? "";
    if (r.isError) {
      const m = /^([A-Z_]+) \((\d{3})\): /.exec(text);
      return { ok: false, status: m ? Number(m[2]) : 0, code: m ? m[1] : "MCP_ERROR", text };
    }
    const images = r.content
      .filter((c: any) => c.type === "image")
      .map((c: any) => {
        expect(c.mimeType).toBe("image/jpeg");
        return c.data as string;
      });
    return { ok: true, data: r.structuredContent, images, text };
  };
}

beforeAll(async () => {
  f = await startAgentFixture(ENV);
  const red = await ffmpeg(["-f", "lavfi", "-i", "color=c=red:size=200x150", "-frames:v", "1"], join(f.dir, "red.png"));
  imageServer = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: () => new Response(Bun.file(red), { headers: { "content-type": "image/png" } }),
  });
  redUrl = `http://127.0.0.1:${imageServer.port}/red.png`;

  callers.call = async (tool, input) => {
    const res = await postCall(f.readOnlyKey, { tool, input });
    const body = await res.json();
    if (res.status === 200) return { ok: true, data: body.data, images: [], text: "" };
    return {
      ok: false,
      status: res.status,
      code: Array.isArray(body.detail) ? "VALIDATION_ERROR" : body.detail.code,
      text: JSON.stringify(body.detail),
    };
  };
  httpClient = new Client({ name: "test", version: "1" });
  await httpClient.connect(
    new StreamableHTTPClientTransport(new URL(`${f.url}/v1/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${f.readOnlyKey}` } },
    }),
  );
  callers["mcp-http"] = mcpCaller(httpClient);

  const stdio = new StdioClientTransport({
    command: BUN,
    args: [MAIN, "--data-dir", f.dir, "mcp", "--account", f.accountId],
    env: {
      ...(process.env as Record<string, string>),
      ...(await backendEnv(f.dir)),
      ...ENV,
      VSEARCH_LOG_LEVEL: "warn",
    },
    stderr: "pipe",
  });
  stdio.stderr?.on("data", (b: Buffer) => (stderr += b.toString()));
  stdioClient = new Client({ name: "test", version: "1" });
  await stdioClient.connect(stdio);
  callers["mcp-stdio"] = mcpCaller(stdioClient);
  // The SDK client validates structuredContent against each tool's outputSchema once it has listed them.
  await httpClient.listTools();
  await stdioClient.listTools();
}, 180_000);

afterAll(async () => {
  await httpClient?.close();
  await stdioClient?.close();
  await imageServer?.stop();
  await f?.stop();
});

/** Presigned links differ by host and signature time; compare their paths. Inline JPEGs move to images over MCP. */
function normalize(v: any): any {
  // A signed link's expiry moves with the second it was signed in: compare where links point.
  if (typeof v === "string" && /^https?:\/\//.test(v)) return new URL(v).pathname + new URL(v).hash;
  if (Array.isArray(v)) return v.map(normalize);
  if (v && typeof v === "object") {
    return Object.fromEntries(
      Object.entries(v).map(([k, x]) => [k, k === "thumbnail_base64" || k === "image_base64" ? null : normalize(x)]),
    );
  }
  return v;
}

/** One tool call through all three transports; the answers must agree. Returns the /call answer and the MCP images. */
async function everywhere(tool: string, input: unknown) {
  const [rest, http, stdio] = [
    await callers.call(tool, input),
    await callers["mcp-http"](tool, input),
    await callers["mcp-stdio"](tool, input),
  ];
  for (const mcp of [http, stdio]) {
    expect(mcp.ok, `${tool} over MCP: ${mcp.text}`).toBe(rest.ok);
    if (rest.ok && mcp.ok) expect(normalize(mcp.data)).toEqual(normalize(rest.data));
    if (!rest.ok && !mcp.ok) {
      expect(mcp.code).toBe(rest.code);
      expect(mcp.status).toBe(rest.status);
    }
  }
  return { rest, http: http as Extract<Answer, { ok: true }>, stdio: stdio as Extract<Answer, { ok: true }> };
}

describe("every tool, three transports", () => {
  it("lists the same nine read-only tools over MCP (HTTP and stdio) as schema.json", async () => {
    const schema = await (await fetch(`${f.url}/v1/agent/schema.json`)).json();
    const names = schema.tools.map((t: any) => t.name);
    expect(names).toEqual([
      "search_videos",
      "list_collections",
      "get_collection",
      "list_videos",
      "get_video",
      "get_job_status",
      "get_moment",
      "get_transcript",
      "get_frame",
    ]);
    for (const client of [httpClient, stdioClient]) {
      const listed = (await client.listTools()).tools;
      expect(listed.map((t) => t.name)).toEqual(names);
      for (const t of listed) {
        expect(t.annotations?.readOnlyHint).toBe(true);
        expect(t.outputSchema?.type).toBe("object");
        const fromSchema = schema.tools.find((x: any) => x.name === t.name);
        expect(Object.keys(t.inputSchema.properties ?? {})).toEqual(Object.keys(fromSchema.parameters.properties));
        expect(t.inputSchema.required ?? []).toEqual(fromSchema.parameters.required ?? []);
      }
    }
  });

  it("search_videos by image finds the red shot; clips carry a ≤ 320 px JPEG, sent as MCP image content", async () => {
    const { rest, http, stdio } = await everywhere("search_videos", { image_url: redUrl, limit: 5 });
    if (!rest.ok) throw new Error(rest.text);
    const clips = rest.data.clips;
    expect(clips.length).toBeGreaterThan(0);
    expect(clips.every((c: any) => c.video_id !== f.otherVideoId)).toBe(true); // the other tenant's copy never shows
    const best = clips[0];
    expect(best).toMatchObject({ video_id: f.videoId, filename: "beach day.mp4", collection_id: f.collectionId });
    // The red shot is 2–4 s: the best clip covers it (neighbouring frames of the random model may join in).
    expect(best.start_secs).toBeLessThanOrEqual(2.5);
    expect(best.end_secs).toBeGreaterThanOrEqual(2.5);
    expect(clips.some((c: any) => c.type === "scene" && c.start_secs === 2 && c.end_secs === 4)).toBe(true);
    expect(best.relevance_score).toBeGreaterThan(0);
    expect(best.clip_url).toMatch(/#t=\d/);
    for (const c of clips) {
      const size = jpegDimensions(b64(c.thumbnail_base64));
      expect(size.width).toBeLessThanOrEqual(320);
    }
    for (const mcp of [http, stdio]) {
      expect(mcp.images).toEqual(clips.map((c: any) => c.thumbnail_base64).slice(0, 8));
      expect(mcp.data.clips.every((c: any) => c.thumbnail_base64 === null)).toBe(true);
      expect(mcp.text).toContain(`[beach day.mp4 ${mmss(best.start_secs)}–${mmss(best.end_secs)}]`);
    }
  });

  it("search_videos by words matches a shot's labels; min_score above every clip leaves none, and says what to try", async () => {
    const hit = await everywhere("search_videos", {
      query: "people walking",
      modes: ["scene"],
      collection_id: f.collectionId,
    });
    if (!hit.rest.ok) throw new Error(hit.rest.text);
    expect(hit.rest.data.clips[0].text_snippet).toContain("people walking");
    expect(hit.rest.data.modes).toEqual(["scene"]);

    const best = (await callers.call("search_videos", { image_url: redUrl })) as any;
    const above = Math.min(1, Math.max(...best.data.clips.map((c: any) => c.relevance_score)) + 0.001);
    const { rest, http, stdio } = await everywhere("search_videos", {
      image_url: redUrl,
      modes: ["video"],
      min_score: above,
    });
    if (!rest.ok) throw new Error(rest.text);
    expect(rest.data.clips).toEqual([]);
    expect(rest.data.suggestions.join(" ")).toMatch(/Lower min_score/);
    expect(rest.data.suggestions.join(" ")).toMatch(/other modes/);
    for (const mcp of [http, stdio]) {
      expect(mcp.text).toMatch(/^No clip matched\./);
      expect(mcp.text).toContain("Lower min_score");
      expect(mcp.images).toEqual([]);
    }
  });

  it("list_collections and get_collection", async () => {
    const list = await everywhere("list_collections", {});
    if (!list.rest.ok) throw new Error(list.rest.text);
    expect(list.rest.data).toMatchObject({ total: 1, page: 1, next_page: null });
    expect(list.rest.data.collections[0]).toMatchObject({ id: f.collectionId, name: "Beach", video_count: 2 });
    expect(list.http.text).toContain(`Beach (${f.collectionId}): 2 videos`);

    const one = await everywhere("get_collection", { collection_id: f.collectionId });
    if (!one.rest.ok) throw new Error(one.rest.text);
    expect(one.rest.data.collection).toMatchObject({ id: f.collectionId, video_count: 2 });
    expect(one.rest.data.collection.total_duration_secs).toBeCloseTo(8, 0);
  });

  it("list_videos filters and pages; get_video and get_job_status read the REST records", async () => {
    const page1 = await everywhere("list_videos", { collection_id: f.collectionId, status: ["ready"], limit: 1 });
    if (!page1.rest.ok) throw new Error(page1.rest.text);
    expect(page1.rest.data).toMatchObject({ total: 2, page: 1, next_page: 2 });
    const page2 = (await callers.call("list_videos", { collection_id: f.collectionId, page: 2, limit: 1 })) as any;
    expect([page1.rest.data.videos[0].id, page2.data.videos[0].id].sort()).toEqual([f.videoId, f.wideVideoId].sort());
    const none = (await callers.call("list_videos", { status: ["failed"] })) as any;
    expect(none.data.total).toBe(0);

    const video = await everywhere("get_video", { video_id: f.videoId });
    if (!video.rest.ok) throw new Error(video.rest.text);
    const restVideo = await (
      await fetch(`${f.url}/v1/videos/${f.videoId}`, { headers: { authorization: `Bearer ${f.key}` } })
    ).json();
    expect(normalize(video.rest.data.video)).toEqual(normalize(restVideo.data));
    expect(video.http.text).toContain("beach day.mp4");

    const job = await everywhere("get_job_status", { job_id: f.jobId });
    if (!job.rest.ok) throw new Error(job.rest.text);
    expect(job.rest.data.job).toMatchObject({ id: f.jobId, video_id: f.videoId, status: "done", progress_pct: 100 });
  });

  it("get_moment and get_transcript", async () => {
    const m = await everywhere("get_moment", { video_id: f.videoId, timestamp: 3 });
    if (!m.rest.ok) throw new Error(m.rest.text);
    expect(m.rest.data).toMatchObject({
      video_id: f.videoId,
      filename: "beach day.mp4",
      timestamp: 3,
      scene_start: 2,
      scene_end: 4,
    });
    expect(m.rest.data.labels).toContain("people walking");
    expect(m.http.text).toContain("[beach day.mp4 00:02–00:04]");

    // The tiny random Whisper says nothing: the answer is empty, not an error.
    const tr = await everywhere("get_transcript", { video_id: f.videoId, start: 0, end: 6 });
    if (!tr.rest.ok) throw new Error(tr.rest.text);
    expect(tr.rest.data).toEqual({ video_id: f.videoId, filename: "beach day.mp4", segments: [], truncated: false });
    expect(tr.stdio.text).toContain("Nothing is said");
  });

  it("get_frame decodes the frame at the time as a JPEG ≤ 768 px, as MCP image content", async () => {
    const { rest, http, stdio } = await everywhere("get_frame", { video_id: f.videoId, timestamp: 3 });
    if (!rest.ok) throw new Error(rest.text);
    const jpeg = b64(rest.data.image_base64);
    expect(jpegDimensions(jpeg)).toEqual({ width: 320, height: 240 });
    expect(rest.data).toMatchObject({ width: 320, height: 240, mime_type: "image/jpeg", timestamp: 3 });
    expect(await meanColour(jpeg)).toEqual("red"); // 2–4 s is the red shot
    for (const mcp of [http, stdio]) {
      expect(mcp.images).toHaveLength(1);
      expect(jpegDimensions(b64(mcp.images[0]))).toEqual({ width: 320, height: 240 });
      expect(mcp.data.image_base64).toBeNull();
    }
    const blue = (await callers["mcp-stdio"]("get_frame", { video_id: f.videoId, timestamp: 5 })) as any;
    expect(await meanColour(b64(blue.images[0]))).toEqual("blue");

    const wide = await everywhere("get_frame", { video_id: f.wideVideoId, timestamp: 1 });
    if (!wide.rest.ok) throw new Error(wide.rest.text);
    expect(jpegDimensions(b64(wide.rest.data.image_base64))).toEqual({ width: 768, height: 432 });
    expect(jpegDimensions(b64(wide.http.images[0]))).toEqual({ width: 768, height: 432 });

    // The very end is still a frame; past it is a 422 naming the field.
    const end = (await callers.call("get_frame", { video_id: f.videoId, timestamp: 6 })) as any;
    expect(end.ok).toBe(true);
    const past = await everywhere("get_frame", { video_id: f.videoId, timestamp: 6.5 });
    expect(past.rest).toMatchObject({ ok: false, status: 422 });
    expect(past.rest.text).toContain('"input","timestamp"');
    expect((await callers["mcp-http"]("get_frame", { video_id: f.videoId, timestamp: 6.5 })).text).toMatch(
      /^VALIDATION_ERROR \(422\): input\.timestamp: timestamp is past the end/,
    );
  });

  it("another account's video, collection or job is a 404 tool error with the REST code on every transport", async () => {
    for (const [tool, input, code] of [
      ["get_video", { video_id: f.otherVideoId }, "VIDEO_NOT_FOUND"],
      ["get_frame", { video_id: f.otherVideoId, timestamp: 1 }, "VIDEO_NOT_FOUND"],
      ["get_moment", { video_id: f.otherVideoId, timestamp: 1 }, "VIDEO_NOT_FOUND"],
      ["get_transcript", { video_id: f.otherVideoId }, "VIDEO_NOT_FOUND"],
      ["search_videos", { query: "x", video_id: f.otherVideoId }, "VIDEO_NOT_FOUND"],
      ["get_job_status", { job_id: "job_nope" }, "JOB_NOT_FOUND"],
      ["get_collection", { collection_id: "col_nope" }, "COLLECTION_NOT_FOUND"],
    ] as const) {
      const { rest, http } = await everywhere(tool, input);
      expect(rest, tool).toMatchObject({ ok: false, status: 404, code });
      expect(http.text ?? (http as any).text).toMatch(new RegExp(`^${code} \\(404\\): `));
    }
  });

  it("bad input or an unknown tool over MCP is the /call 422 as a tool error naming the field, not a transport failure", async () => {
    for (const c of [callers["mcp-http"], callers["mcp-stdio"]]) {
      expect((await c("search_videos", { query: "x", limit: 50 })).text).toMatch(
        /^VALIDATION_ERROR \(422\): input\.limit: /,
      );
      expect((await c("get_video", {})).text).toMatch(/^VALIDATION_ERROR \(422\): input\.video_id: Field required/);
      expect((await c("list_videos", { colection_id: "col_x" })).text).toMatch(
        /^VALIDATION_ERROR \(422\): input\.colection_id: Extra inputs/,
      );
      expect((await c("search_videos", {})).text).toMatch(
        /^VALIDATION_ERROR \(422\): input\.query: One of query, image or image_url is required/,
      );
      const unknown = await c("delete_everything", {});
      expect(unknown).toMatchObject({ ok: false, status: 422, code: "VALIDATION_ERROR" });
      expect(unknown.text).toContain("tool: Unknown tool; one of search_videos");
    }
    const rest = await postCall(f.readOnlyKey, { tool: "delete_everything", input: {} });
    expect(rest.status).toBe(422);
    expect((await rest.json()).detail[0]).toMatchObject({ loc: ["body", "tool"], input: "delete_everything" });
  });

  it("vsearch mcp logs only to stderr and the server it runs beside keeps serving", async () => {
    expect(stderr).not.toMatch(/"level":"error"/);
    const health = await fetch(`${f.url}/healthz`);
    expect(health.status).toBe(200);
  });
});

describe("permissions", () => {
  it("read_only keys call every tool (the callers above use one); a revoked key and no key are 401 on both HTTP transports", async () => {
    const created = await runCliJson(
      ["--data-dir", f.dir, "keys", "create", "--account", f.accountId, "--name", "gone"],
      { VSEARCH_LOG_LEVEL: "silent" },
    );
    expect((await postCall(created.key, { tool: "list_collections", input: {} })).status).toBe(200);
    await runCliJson(["--data-dir", f.dir, "keys", "revoke", created.id], { VSEARCH_LOG_LEVEL: "silent" });

    const revoked = await postCall(created.key, { tool: "list_collections", input: {} });
    expect(revoked.status).toBe(401);
    expect((await revoked.json()).detail.code).toMatch(/INVALID_API_KEY|UNAUTHORIZED/);
    expect((await postCall(null, { tool: "list_collections", input: {} })).status).toBe(401);

    const init = {
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } },
    };
    for (const auth of [`Bearer ${created.key}`, null]) {
      const res = await fetch(`${f.url}/v1/mcp`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          ...(auth ? { authorization: auth } : {}),
        },
        body: JSON.stringify(init),
      });
      expect(res.status).toBe(401);
    }
    const client = new Client({ name: "t", version: "1" });
    await expect(
      client.connect(
        new StreamableHTTPClientTransport(new URL(`${f.url}/v1/mcp`), {
          requestInit: { headers: { authorization: `Bearer ${created.key}` } },
        }),
      ),
    ).rejects.toThrow();
  });

  it("vsearch mcp refuses an unknown account", async () => {
    const r = Bun.spawn([BUN, MAIN, "--data-dir", f.dir, "mcp", "--account", "usr_nope"], {
      stdin: "pipe",
      stdout: "pipe",
      stderr: "pipe",
      env: { ...process.env, ...(await backendEnv(f.dir)), VSEARCH_LOG_LEVEL: "silent" },
    });
    const code = await Promise.race([r.exited, Bun.sleep(30_000).then(() => -1)]);
    expect(code).toBe(1);
    expect(await new Response(r.stdout).text()).toBe("");
    expect(await new Response(r.stderr).text()).toMatch(/usr_nope/);
  });
});

describe("vsearch mcp alone on a data dir", () => {
  it("runs no indexing: a queued job stays queued while an agent reads it", async () => {
    const dir = join(f.dir, "quiet");
    const env = { VSEARCH_LOG_LEVEL: "silent" };
    const account = await runCliJson(["--data-dir", dir, "accounts", "create", "--name", "Quiet"], env);
    const ingest = await runCliJson(
      ["--data-dir", dir, "ingest", f.clip, "--account", account.id, "--collection", "Inbox", "--no-wait"],
      env,
    );
    const jobId = ingest.files[0].job_id as string;
    const client = new Client({ name: "test", version: "1" });
    await client.connect(
      new StdioClientTransport({
        command: BUN,
        args: [MAIN, "--data-dir", dir, "mcp", "--account", account.id],
        env: { ...(process.env as Record<string, string>), ...(await backendEnv(dir)), ...env },
      }),
    );
    try {
      const first: any = await client.callTool({ name: "get_job_status", arguments: { job_id: jobId } });
      expect(first.structuredContent.job.status).toBe("queued");
      await Bun.sleep(2_000); // a task queue worker would have claimed it within its first poll
      const later: any = await client.callTool({ name: "get_job_status", arguments: { job_id: jobId } });
      expect(later.structuredContent.job).toMatchObject({ status: "queued", progress_pct: 0 });
      const videos: any = await client.callTool({ name: "list_videos", arguments: {} });
      expect(videos.structuredContent.videos[0]).toMatchObject({ filename: "cuts.mp4", status: "queued" });
    } finally {
      await client.close();
    }
  });
});

const mmss = (t: number) =>
  `${String(Math.floor(t / 60)).padStart(2, "0")}:${String(Math.floor(t % 60)).padStart(2, "0")}`;

/** The frame's average colour, decoded by ffmpeg to one RGB pixel. */
async function meanColour(jpeg: Uint8Array): Promise<string> {
  const path = join(f.dir, `frame-${Math.random().toString(36).slice(2)}.jpg`);
  await Bun.write(path, jpeg);
  const out = await ffmpeg(
    ["-i", path, "-vf", "scale=1:1:flags=area", "-f", "rawvideo", "-pix_fmt", "rgb24"],
    `${path}.rgb`,
  );
  const [r, g, b] = new Uint8Array(await Bun.file(out).arrayBuffer());
  return r > 150 && g < 80 && b < 80 ? "red" : b > 150 && r < 80 && g < 80 ? "blue" : `rgb(${r},${g},${b})`;
}
