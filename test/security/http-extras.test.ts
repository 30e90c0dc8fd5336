import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createTenant, json, type Tenant } from "../helpers/app.ts";
import { scratchDir, smallMp4 } from "../helpers/ffmpeg.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";

/** Issue 9: media answers conditional requests; CORS is off unless origins are named. */
let s: TestServer;
let a: Tenant;
let playback: string;
let size: number;

beforeAll(async () => {
  s = await startTestServer({ VSEARCH_CORS_ORIGINS: "https://app.example.com" });
  a = await createTenant(s);
  const col = (
    await json(
      await s.http("/v1/collections", {
        method: "POST",
        token: a.key,
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ name: "c" }),
      }),
    )
  ).data.id;
  const mp4 = await smallMp4(scratchDir("security-media"));
  size = readFileSync(mp4).byteLength;
  const fd = new FormData();
  fd.append("collection_id", col);
  fd.append("file", Bun.file(mp4), "clip.mp4");
  const up = await json(await s.http("/v1/upload", { method: "POST", token: a.key, body: fd }));
  playback = (await json(await s.http(`/v1/videos/${up.data.video_id}`, { token: a.key }))).data.playback_url;
});
afterAll(() => s.close());

const media = (headers: Record<string, string> = {}) => fetch(playback, { headers });

describe("conditional media requests", () => {
  test("If-None-Match with the ETag → 304 without a body; another ETag → 200", async () => {
    const first = await media();
    expect(first.status).toBe(200);
    const etag = first.headers.get("etag")!;
    expect(etag).toMatch(/^"[0-9a-f]+-[0-9a-f]+"$/);
    await first.arrayBuffer();
    const again = await media({ "If-None-Match": `"other", ${etag}` });
    expect(again.status).toBe(304);
    expect(again.headers.get("etag")).toBe(etag);
    expect((await again.arrayBuffer()).byteLength).toBe(0);
    expect((await media({ "If-None-Match": "W/" + etag })).status).toBe(304); // weak comparison
    const changed = await media({ "If-None-Match": '"0-0"' });
    expect(changed.status).toBe(200);
    expect((await changed.arrayBuffer()).byteLength).toBe(size);
  });

  test("If-Modified-Since at Last-Modified → 304", async () => {
    const first = await media();
    await first.arrayBuffer();
    const res = await media({ "If-Modified-Since": first.headers.get("last-modified")! });
    expect(res.status).toBe(304);
  });

  test("If-Range: matching ETag or date → the range; a stale validator → the whole file", async () => {
    const first = await media();
    await first.arrayBuffer();
    const etag = first.headers.get("etag")!;
    const partial = await media({ Range: "bytes=0-9", "If-Range": etag });
    expect(partial.status).toBe(206);
    expect(partial.headers.get("content-range")).toBe(`bytes 0-9/${size}`);
    expect((await partial.arrayBuffer()).byteLength).toBe(10);
    const byDate = await media({ Range: "bytes=0-9", "If-Range": first.headers.get("last-modified")! });
    expect(byDate.status).toBe(206);
    await byDate.arrayBuffer();
    for (const stale of ['"0-0"', "W/" + etag, "Thu, 01 Jan 1970 00:00:00 GMT"]) {
      const full = await media({ Range: "bytes=0-9", "If-Range": stale });
      expect(full.status).toBe(200);
      expect((await full.arrayBuffer()).byteLength).toBe(size);
    }
  });

  test("a wrong signature is still 403 whatever the conditional headers", async () => {
    const bad = playback.replace(/signature=[0-9a-f]/, (m) => m.slice(0, -1) + (m.endsWith("0") ? "1" : "0"));
    const res = await fetch(bad, { headers: { "If-None-Match": "*" } });
    expect(res.status).toBe(403);
  });
});

describe("CORS", () => {
  test("a named origin gets CORS headers and a preflight answer", async () => {
    const res = await s.http("/v1/collections", { token: a.key, headers: { Origin: "https://app.example.com" } });
    expect(res.headers.get("access-control-allow-origin")).toBe("https://app.example.com");
    expect(res.headers.get("access-control-expose-headers")).toContain("X-Request-Id");
    const pre = await s.http("/v1/search", {
      method: "OPTIONS",
      headers: {
        Origin: "https://app.example.com",
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization",
      },
    });
    expect(pre.status).toBe(204);
    expect(pre.headers.get("access-control-allow-headers")?.toLowerCase()).toContain("authorization");
  });

  test("another origin gets none", async () => {
    const res = await s.http("/v1/collections", { token: a.key, headers: { Origin: "https://evil.example" } });
    expect(res.status).toBe(200);
    expect(res.headers.get("access-control-allow-origin")).toBeNull();
  });

  test("off by default: no CORS headers, a preflight is 405 with Allow", async () => {
    const plain = await startTestServer();
    try {
      const t = await createTenant(plain);
      const res = await plain.http("/v1/collections", { token: t.key, headers: { Origin: "https://app.example.com" } });
      expect(res.status).toBe(200);
      expect(res.headers.get("access-control-allow-origin")).toBeNull();
      const pre = await plain.http("/v1/collections", {
        method: "OPTIONS",
        headers: { Origin: "https://app.example.com", "Access-Control-Request-Method": "POST" },
      });
      expect(pre.status).toBe(405);
      expect(pre.headers.get("access-control-allow-origin")).toBeNull();
      expect(pre.headers.get("allow")).toBe("GET, HEAD, POST");
    } finally {
      await plain.close();
    }
  });
});
