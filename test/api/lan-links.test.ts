/**
 * Issue 22, "reachable from anywhere it is served": the links the server hands out (playback,
 * thumbnails, clips) follow the origin each request came to — its Host, and X-Forwarded-Proto /
 * -Host only from a peer in `trusted_proxies` — while `public_base_url` overrides them for links
 * sent elsewhere (the agent routes) and for links made with no request at all (the CLI).
 * Through real sockets: `serve --host 0.0.0.0` reached as 127.0.0.2, and through a reverse
 * proxy of a few lines of Bun.
 */
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { CidrAllowList } from "../../src/net/address-rules.ts";
import { requestOrigin } from "../../src/http/link-origin.ts";
import { createKeyTenant, json, startTestApp, type TestApp, upload } from "../helpers/app.ts";
import { runCliJson, startServer } from "../helpers/cli.ts";
import { scratchDir, smallMp4 } from "../helpers/ffmpeg.ts";
import { tempDirs } from "../helpers/temp.ts";

const tempDir = tempDirs("vsearch-lan-").make;
const headers = (h: Record<string, string>) => new Headers(h);

describe("the origin a request came to (http/link-origin.ts)", () => {
  const trusted = new CidrAllowList(["10.0.0.5/32"]);
  test("Host of the request; forwarded headers only from a trusted proxy; nothing malformed", () => {
    const fwd = headers({ "x-forwarded-proto": "https", "x-forwarded-host": "videos.example.org, inner:8080" });
    expect(requestOrigin("http://192.168.1.20:8080/v1/x", headers({}), "192.168.1.33", trusted)).toBe(
      "http://192.168.1.20:8080",
    );
    expect(requestOrigin("http://127.0.0.1:8080/v1/x", fwd, "10.0.0.5", trusted)).toBe("https://videos.example.org");
    expect(requestOrigin("http://127.0.0.1:8080/v1/x", fwd, "::ffff:10.0.0.5", trusted)).toBe(
      "https://videos.example.org",
    );
    // The same headers from anyone else are the client's own words: ignored.
    expect(requestOrigin("http://127.0.0.1:8080/v1/x", fwd, "10.0.0.6", trusted)).toBe("http://127.0.0.1:8080");
    expect(requestOrigin("http://127.0.0.1:8080/v1/x", fwd, null, trusted)).toBe("http://127.0.0.1:8080");
    const evil = headers({ "x-forwarded-proto": "javascript", "x-forwarded-host": "a.example/<script>" });
    expect(requestOrigin("http://[::1]:8080/v1/x", evil, "10.0.0.5", trusted)).toBe("http://[::1]:8080");
  });
});

describe("links in answers (in process)", () => {
  let t: TestApp;
  let videoId: string;
  let key: string;
  beforeAll(async () => {
    t = await startTestApp({
      VSEARCH_PUBLIC_BASE_URL: "https://videos.example.org",
      VSEARCH_RATE_LIMIT_AGENT: "1000",
      VSEARCH_RATE_LIMIT_VIDEOS: "1000",
    });
    const tenant = await createKeyTenant(t);
    key = tenant.key;
    const col = (await json(await t.request("POST", "/v1/collections", { token: key, json: { name: "c" } }))).data.id;
    videoId = (await json(await upload(t, tenant, col, await smallMp4(scratchDir("lan-links"))))).data.video_id;
  });
  afterAll(() => t?.close());

  const get = (url: string, h: Record<string, string> = {}) =>
    t.app.fetch(new Request(url, { headers: { authorization: `Bearer ${key}`, ...h } }));

  test("REST links follow the Host the request used, whatever public_base_url says", async () => {
    for (const origin of ["http://192.168.1.20:8080", "http://vsearch.lan", "http://[fd00::7]:8080"]) {
      const v = (await json(await get(`${origin}/v1/videos/${videoId}`))).data;
      expect(v.playback_url.startsWith(`${origin}/media/videos/${videoId}/source?expires=`), v.playback_url).toBe(true);
    }
    // Not from a trusted proxy (no proxies configured): X-Forwarded-Host changes nothing.
    const spoofed = (
      await json(await get(`http://10.1.2.3:8080/v1/videos/${videoId}`, { "x-forwarded-host": "evil.example" }))
    ).data;
    expect(spoofed.playback_url.startsWith("http://10.1.2.3:8080/")).toBe(true);
  });

  test("agent answers and links made without a request use public_base_url", async () => {
    const res = await t.app.fetch(
      new Request("http://192.168.1.20:8080/v1/agent/call", {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ tool: "get_video", input: { video_id: videoId } }),
      }),
    );
    expect(res.status).toBe(200);
    expect(JSON.stringify(await res.json())).toContain(`https://videos.example.org/media/videos/${videoId}/source?`);
    const cli = await t.app.services.videos.get((await t.app.services.accounts.listAccounts())[0].id, videoId);
    expect(cli.playback_url?.startsWith("https://videos.example.org/")).toBe(true);
  });
});

describe("served on 0.0.0.0: reached as 127.0.0.2 and through a reverse proxy", () => {
  let server: Awaited<ReturnType<typeof startServer>>;
  let proxy: ReturnType<typeof Bun.serve>;
  let key: string;
  let videoId: string;
  let clip: string;
  let port: number;

  beforeAll(async () => {
    const d = tempDir();
    // The proxy below connects from loopback; only it may speak X-Forwarded-*.
    server = await startServer(d, { VSEARCH_TRUSTED_PROXIES: "127.0.0.1/32" }, ["--host", "0.0.0.0"]);
    port = Number(new URL(server.url).port);
    expect(server.url).toBe(`http://127.0.0.1:${port}`);
    await runCliJson(["--data-dir", d, "accounts", "create", "--name", "Team"]);
    key = (await runCliJson(["--data-dir", d, "keys", "create", "--name", "lan"])).key;
    // A reverse proxy in a few lines: it rewrites Host to the upstream (as nginx does by default)
    // and says where the client really was in X-Forwarded-Proto / -Host.
    proxy = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      async fetch(req) {
        const u = new URL(req.url);
        const h = new Headers(req.headers);
        h.set("x-forwarded-host", u.host);
        h.set("x-forwarded-proto", "http");
        h.delete("host");
        return fetch(`http://127.0.0.2:${port}${u.pathname}${u.search}`, {
          method: req.method,
          headers: h,
          body: req.body,
          redirect: "manual",
        });
      },
    });
    const auth = { authorization: `Bearer ${key}` };
    const col = await fetch(`http://127.0.0.2:${port}/v1/collections`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify({ name: "lan" }),
    });
    expect(col.status).toBe(201);
    clip = await smallMp4(scratchDir("lan-served"));
    const fd = new FormData();
    fd.append("collection_id", ((await col.json()) as any).data.id);
    fd.append("file", Bun.file(clip), "lan.mp4");
    const up = await fetch(`http://127.0.0.2:${port}/v1/upload`, { method: "POST", headers: auth, body: fd });
    expect(up.status).toBe(202);
    videoId = ((await up.json()) as any).data.video_id;
  }, 120_000);
  afterAll(async () => {
    await proxy?.stop(true);
    await server?.stop();
  });

  const video = async (base: string) =>
    (
      (await (
        await fetch(`${base}/v1/videos/${videoId}`, { headers: { authorization: `Bearer ${key}` } })
      ).json()) as any
    ).data;

  test("asked at 127.0.0.2, the links point at 127.0.0.2 and play from there (Range included)", async () => {
    const v = await video(`http://127.0.0.2:${port}`);
    expect(v.playback_url.startsWith(`http://127.0.0.2:${port}/media/videos/${videoId}/source?`)).toBe(true);
    const whole = await fetch(v.playback_url);
    expect(whole.status).toBe(200);
    expect(Buffer.from(await whole.arrayBuffer()).equals(readFileSync(clip))).toBe(true);
    const part = await fetch(v.playback_url, { headers: { range: "bytes=0-99" } });
    expect(part.status).toBe(206);
    expect((await part.arrayBuffer()).byteLength).toBe(100);
    // The same server asked at 127.0.0.1 answers with 127.0.0.1 links: no address is baked in.
    expect((await video(`http://127.0.0.1:${port}`)).playback_url.startsWith(`http://127.0.0.1:${port}/`)).toBe(true);
  });

  test("through the reverse proxy, the links point at the proxy and play through it", async () => {
    const base = `http://127.0.0.1:${proxy.port}`;
    const v = await video(base);
    expect(v.playback_url.startsWith(`${base}/media/videos/${videoId}/source?`), v.playback_url).toBe(true);
    const part = await fetch(v.playback_url, { headers: { range: "bytes=10-19" } });
    expect(part.status).toBe(206);
    expect(Buffer.from(await part.arrayBuffer()).equals(readFileSync(clip).subarray(10, 20))).toBe(true);
  });
});
